// loomc --target=cuda refuses loom.gather (no index check; loomc-cuda.test).
func.func @gather(%x: tensor<8x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = loom.gather %x, %i axis = 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
