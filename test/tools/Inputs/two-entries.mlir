func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = loom.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = loom.mul %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = loom.tanh %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
