// f32 -> bf16 -> f32 (loom-run-bf16-cast.test).
func.func @f(%x: tensor<8xf32> {loom.name = "x"}) -> (tensor<8xf32> {loom.name = "y"}) {
  %b = loom.cast %x : tensor<8xf32> -> tensor<8xbf16>
  %y = loom.cast %b : tensor<8xbf16> -> tensor<8xf32>
  return %y : tensor<8xf32>
}
