// A reduction: each workgroup sums its 64 elements in workgroup memory, with gpu.barrier between
// the steps, and writes one partial sum. Optimum: %input in (1 KiB), %sums out (16 B); the
// kernel writes every partial sum, so %sums never goes in.
module attributes {gpu.container_module} {
  func.func @main(%input: memref<256xi32>, %sums: memref<4xi32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %din = gpu.alloc () : memref<256xi32>
    %dsums = gpu.alloc () : memref<4xi32>
    gpu.memcpy %din, %input : memref<256xi32>, memref<256xi32>
    gpu.memcpy %dsums, %sums : memref<4xi32>, memref<4xi32>
    gpu.launch_func @kernels::@partial_sums blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%din : memref<256xi32>, %dsums : memref<4xi32>)
    gpu.memcpy %input, %din : memref<256xi32>, memref<256xi32>
    gpu.memcpy %sums, %dsums : memref<4xi32>, memref<4xi32>
    gpu.dealloc %din : memref<256xi32>
    gpu.dealloc %dsums : memref<4xi32>
    return
  }
  gpu.module @kernels {
    gpu.func @partial_sums(%input: memref<256xi32>, %sums: memref<4xi32>)
        workgroup(%tile : memref<64xi32, #gpu.address_space<workgroup>>) kernel {
      %i = gpu.global_id x
      %t = gpu.thread_id x
      %g = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %v = memref.load %input[%i] : memref<256xi32>
      memref.store %v, %tile[%t] : memref<64xi32, #gpu.address_space<workgroup>>
      gpu.barrier
      %final = scf.while (%stride = %c32) : (index) -> index {
        %more = arith.cmpi ugt, %stride, %c0 : index
        scf.condition(%more) %stride : index
      } do {
      ^bb0(%s: index):
        %active = arith.cmpi ult, %t, %s : index
        scf.if %active {
          %other = arith.addi %t, %s : index
          %x = memref.load %tile[%t] : memref<64xi32, #gpu.address_space<workgroup>>
          %y = memref.load %tile[%other] : memref<64xi32, #gpu.address_space<workgroup>>
          %sum = arith.addi %x, %y : i32
          memref.store %sum, %tile[%t] : memref<64xi32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
        %half = arith.shrui %s, %c1 : index
        scf.yield %half : index
      }
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %total = memref.load %tile[%c0] : memref<64xi32, #gpu.address_space<workgroup>>
        memref.store %total, %sums[%g] : memref<4xi32>
      }
      gpu.return
    }
  }
}
