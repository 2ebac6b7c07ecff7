func.func @main() {
  %b = gpu.alloc host_shared () : memref<4xf32>
  return
}
