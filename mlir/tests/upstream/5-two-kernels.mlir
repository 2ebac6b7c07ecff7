// Two kernels through a device temporary that the host never sees. Optimum: %in in (1 KiB),
// %out out (1 KiB); the temporary never moves.
module attributes {gpu.container_module} {
  func.func @main(%in: memref<256xf32>, %out: memref<256xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %din = gpu.alloc () : memref<256xf32>
    %tmp = gpu.alloc () : memref<256xf32>
    %dout = gpu.alloc () : memref<256xf32>
    gpu.memcpy %din, %in : memref<256xf32>, memref<256xf32>
    gpu.launch_func @kernels::@square blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%din : memref<256xf32>, %tmp : memref<256xf32>)
    gpu.launch_func @kernels::@halve blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%tmp : memref<256xf32>, %dout : memref<256xf32>)
    gpu.memcpy %out, %dout : memref<256xf32>, memref<256xf32>
    gpu.dealloc %din : memref<256xf32>
    gpu.dealloc %tmp : memref<256xf32>
    gpu.dealloc %dout : memref<256xf32>
    return
  }
  gpu.module @kernels {
    gpu.func @square(%src: memref<256xf32>, %dst: memref<256xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %src[%i] : memref<256xf32>
      %s = arith.mulf %v, %v : f32
      memref.store %s, %dst[%i] : memref<256xf32>
      gpu.return
    }
    gpu.func @halve(%src: memref<256xf32>, %dst: memref<256xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %src[%i] : memref<256xf32>
      %half = arith.constant 0.5 : f32
      %h = arith.mulf %v, %half : f32
      memref.store %h, %dst[%i] : memref<256xf32>
      gpu.return
    }
  }
}
