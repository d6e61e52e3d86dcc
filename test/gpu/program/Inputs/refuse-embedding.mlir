// loomc --target=cuda refuses the embedding gather (loomc-cuda.test).
func.func @embed(%ids: tensor<1x5xi64>) -> tensor<1x5x16xf32> {
  %t = loom.weight "table" from <"t.bin", offset = 0> : tensor<100x16xf32>
  %0 = loom.embedding %t, %ids : tensor<100x16xf32>, tensor<1x5xi64> -> tensor<1x5x16xf32>
  return %0 : tensor<1x5x16xf32>
}
