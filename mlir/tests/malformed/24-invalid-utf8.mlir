func.func @main() {
  %x = arith.constant ÿþ : i32
  return
}
