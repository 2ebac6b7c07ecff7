module attributes {gpu.container_module} {
  func.func @main(%a: memref<64xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) args(%a : memref<64xf32>)
    return
  }
  gpu.module @k {
    gpu.func @f(%a: memref<64xf32>) kernel {
      gpu.return
    }
  }
}
