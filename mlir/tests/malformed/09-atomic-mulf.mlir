module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f(%a: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %i = gpu.global_id x
      %one = arith.constant 2.0 : f32
      %old = memref.atomic_rmw mulf %one, %a[%i] : (f32, memref<64xf32>) -> f32
      gpu.return
    }
  }
}
