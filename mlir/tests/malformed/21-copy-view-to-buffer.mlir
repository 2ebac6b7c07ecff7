func.func @main(%a: memref<8xf32>, %b: memref<4xf32>) {
  %v = memref.subview %a[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  gpu.memcpy %b, %v : memref<4xf32>, memref<4xf32, strided<[1]>>
  return
}
