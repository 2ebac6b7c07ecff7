func.func @main(%a: memref<8xf32>) {
  %v = memref.subview %a[0] [4] [2] : memref<8xf32> to memref<4xf32, strided<[2]>>
  return
}
