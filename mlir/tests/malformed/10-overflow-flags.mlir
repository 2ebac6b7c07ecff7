func.func @main(%a: i32, %b: i32) -> i32 {
  %s = arith.addi %a, %b overflow<nsw> : i32
  return %s : i32
}
