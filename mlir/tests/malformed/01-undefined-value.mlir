func.func @main(%a: memref<4xf32>) {
  %v = memref.load %a[%i] : memref<4xf32>
  return
}
