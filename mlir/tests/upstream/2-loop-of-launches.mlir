// A loop of launches with the copies around each launch, and async tokens as MLIR users write
// them. Optimum: %data in once (1 KiB), out once (1 KiB), whatever %count is.
module attributes {gpu.container_module} {
  func.func @main(%data: memref<256xi32>, %count: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c128 = arith.constant 128 : index
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<256xi32>
    scf.for %it = %c0 to %count step %c1 {
      %t2 = gpu.memcpy async [%t1] %dev, %data : memref<256xi32>, memref<256xi32>
      %t3 = gpu.launch_func async [%t2] @kernels::@step blocks in (%c2, %c1, %c1) threads in (%c128, %c1, %c1)
          args(%dev : memref<256xi32>)
      %t4 = gpu.memcpy async [%t3] %data, %dev : memref<256xi32>, memref<256xi32>
      gpu.wait [%t4]
    }
    gpu.dealloc %dev : memref<256xi32>
    return
  }
  gpu.module @kernels {
    gpu.func @step(%buf: memref<256xi32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %buf[%i] : memref<256xi32>
      %c3 = arith.constant 3 : i32
      %w = arith.muli %v, %c3 : i32
      %c1 = arith.constant 1 : i32
      %r = arith.addi %w, %c1 : i32
      memref.store %r, %buf[%i] : memref<256xi32>
      gpu.return
    }
  }
}
