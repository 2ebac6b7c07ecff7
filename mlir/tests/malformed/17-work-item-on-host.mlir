func.func @main(%a: memref<64xindex>) {
  %i = gpu.thread_id x
  %c0 = arith.constant 0 : index
  memref.store %i, %a[%c0] : memref<64xindex>
  return
}
