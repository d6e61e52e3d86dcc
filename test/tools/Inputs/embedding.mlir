// An embedding lookup whose table is a weight (TABLE: the path of 96x4 f32).
func.func @main(%ids: tensor<1x?xi64> {loom.name = "tokens"}) -> tensor<1x?x4xf32> {
  %t = loom.weight "table" from <"TABLE", offset = 0> : tensor<96x4xf32>
  %0 = loom.embedding %t, %ids : tensor<96x4xf32>, tensor<1x?xi64> -> tensor<1x?x4xf32>
  return %0 : tensor<1x?x4xf32>
}
