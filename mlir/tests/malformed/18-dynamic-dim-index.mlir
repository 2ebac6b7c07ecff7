func.func @main(%a: memref<?x?xf32>, %d: index) -> index {
  %n = memref.dim %a, %d : memref<?x?xf32>
  return %n : index
}
