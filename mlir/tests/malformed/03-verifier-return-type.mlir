func.func @main(%x: i32) -> f32 {
  return %x : i32
}
