// A kernel written inline with gpu.launch (outlined by MLIR's gpu-kernel-outlining on import),
// with the copies in and out. Optimum: %data in (1 KiB), out (1 KiB).
func.func @main(%data: memref<16x16xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %dev = gpu.alloc () : memref<16x16xf32>
  gpu.memcpy %dev, %data : memref<16x16xf32>, memref<16x16xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c2, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c8, %sz = %c1) {
    %row0 = arith.muli %by, %sy : index
    %row = arith.addi %row0, %ty : index
    %col0 = arith.muli %bx, %sx : index
    %col = arith.addi %col0, %tx : index
    %v = memref.load %dev[%row, %col] : memref<16x16xf32>
    %two = arith.constant 2.0 : f32
    %w = arith.mulf %v, %two : f32
    memref.store %w, %dev[%row, %col] : memref<16x16xf32>
    gpu.terminator
  }
  gpu.memcpy %data, %dev : memref<16x16xf32>, memref<16x16xf32>
  gpu.dealloc %dev : memref<16x16xf32>
  return
}
