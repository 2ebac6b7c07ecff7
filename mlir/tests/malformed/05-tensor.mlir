func.func @main() {
  %t = tensor.empty() : tensor<4xf32>
  return
}
