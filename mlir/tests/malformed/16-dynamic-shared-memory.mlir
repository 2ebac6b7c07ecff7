module attributes {gpu.container_module} {
  func.func @main(%a: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %s = arith.constant 256 : i32
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) dynamic_shared_memory_size %s args(%a : memref<64xf32>)
    return
  }
  gpu.module @k {
    gpu.func @f(%a: memref<64xf32>) kernel {
      gpu.return
    }
  }
}
