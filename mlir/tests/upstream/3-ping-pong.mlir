// A ping-pong stencil: an scf.for carries two device buffers and swaps them each step. The
// grid goes in once, the result comes out once. Optimum: %grid in (1 KiB), out (1 KiB); the
// scratch buffer never moves.
module attributes {gpu.container_module} {
  func.func @main(%grid: memref<256xf32>, %steps: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %d0 = gpu.alloc () : memref<256xf32>
    %d1 = gpu.alloc () : memref<256xf32>
    gpu.memcpy %d0, %grid : memref<256xf32>, memref<256xf32>
    %r:2 = scf.for %s = %c0 to %steps step %c1 iter_args(%src = %d0, %dst = %d1) -> (memref<256xf32>, memref<256xf32>) {
      gpu.launch_func @kernels::@smooth blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1)
          args(%src : memref<256xf32>, %dst : memref<256xf32>)
      scf.yield %dst, %src : memref<256xf32>, memref<256xf32>
    }
    gpu.memcpy %grid, %r#0 : memref<256xf32>, memref<256xf32>
    gpu.dealloc %d0 : memref<256xf32>
    gpu.dealloc %d1 : memref<256xf32>
    return
  }
  gpu.module @kernels {
    gpu.func @smooth(%src: memref<256xf32>, %dst: memref<256xf32>) kernel {
      %i = gpu.global_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c255 = arith.constant 255 : index
      %left = arith.subi %i, %c1 : index
      %right = arith.addi %i, %c1 : index
      %at_start = arith.cmpi eq, %i, %c0 : index
      %at_end = arith.cmpi eq, %i, %c255 : index
      %l = arith.select %at_start, %i, %left : index
      %r = arith.select %at_end, %i, %right : index
      %a = memref.load %src[%l] : memref<256xf32>
      %b = memref.load %src[%i] : memref<256xf32>
      %c = memref.load %src[%r] : memref<256xf32>
      %ab = arith.addf %a, %b : f32
      %abc = arith.addf %ab, %c : f32
      %third = arith.constant 0.333333343 : f32
      %v = arith.mulf %abc, %third : f32
      memref.store %v, %dst[%i] : memref<256xf32>
      gpu.return
    }
  }
}
