// Vector add as an MLIR user writes it: every buffer copied in before the launch and out after.
// Optimum: %a and %b in (2 x 1 KiB), %c out (1 KiB): the kernel only reads %a and %b, and writes
// every element of %c.
module attributes {gpu.container_module} {
  func.func @main(%a: memref<256xf32>, %b: memref<256xf32>, %c: memref<256xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %da = gpu.alloc () : memref<256xf32>
    %db = gpu.alloc () : memref<256xf32>
    %dc = gpu.alloc () : memref<256xf32>
    gpu.memcpy %da, %a : memref<256xf32>, memref<256xf32>
    gpu.memcpy %db, %b : memref<256xf32>, memref<256xf32>
    gpu.memcpy %dc, %c : memref<256xf32>, memref<256xf32>
    gpu.launch_func @kernels::@add blocks in (%c4, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%da : memref<256xf32>, %db : memref<256xf32>, %dc : memref<256xf32>)
    gpu.memcpy %a, %da : memref<256xf32>, memref<256xf32>
    gpu.memcpy %b, %db : memref<256xf32>, memref<256xf32>
    gpu.memcpy %c, %dc : memref<256xf32>, memref<256xf32>
    gpu.dealloc %da : memref<256xf32>
    gpu.dealloc %db : memref<256xf32>
    gpu.dealloc %dc : memref<256xf32>
    return
  }
  gpu.module @kernels {
    gpu.func @add(%a: memref<256xf32>, %b: memref<256xf32>, %c: memref<256xf32>) kernel {
      %i = gpu.global_id x
      %x = memref.load %a[%i] : memref<256xf32>
      %y = memref.load %b[%i] : memref<256xf32>
      %s = arith.addf %x, %y : f32
      memref.store %s, %c[%i] : memref<256xf32>
      gpu.return
    }
  }
}
