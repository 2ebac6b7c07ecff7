func.func private @external(memref<4xf32>)
func.func @main(%a: memref<4xf32>) {
  func.call @external(%a) : (memref<4xf32>) -> ()
  return
}
