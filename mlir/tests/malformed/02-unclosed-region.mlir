func.func @main() {
  %c0 = arith.constant 0 : index
