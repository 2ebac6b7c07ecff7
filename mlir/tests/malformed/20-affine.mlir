func.func @main(%a: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    %v = affine.load %a[%i] : memref<4xf32>
    affine.store %v, %a[%i] : memref<4xf32>
  }
  return
}
