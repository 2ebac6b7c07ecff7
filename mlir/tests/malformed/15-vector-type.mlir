func.func @main(%v: vector<4xf32>) -> vector<4xf32> {
  %w = arith.addf %v, %v : vector<4xf32>
  return %w : vector<4xf32>
}
