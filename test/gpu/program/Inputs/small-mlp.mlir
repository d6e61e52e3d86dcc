// A small MLP (d = 16, hidden 32, batch 4) with its weights in files, for
// loomc --target=cuda and loom-run (test/gpu/program/loomc-cuda.test).
func.func @mlp(%x: tensor<4x16xf32> {loom.name = "x"}) -> (tensor<4x16xf32> {loom.name = "y"}) {
  %w1 = loom.weight "fc1.weight" from <"fc1.bin", offset = 0> : tensor<32x16xf32>
  %b1 = loom.weight "fc1.bias" from <"fc1_bias.bin", offset = 0> : tensor<32xf32>
  %w2 = loom.weight "fc2.weight" from <"fc2.bin", offset = 0> : tensor<16x32xf32>
  %0 = loom.matmul %x, %w1 transpose_b : tensor<4x16xf32>, tensor<32x16xf32> -> tensor<4x32xf32>
  %1 = loom.add %0, %b1 : tensor<4x32xf32>, tensor<32xf32> -> tensor<4x32xf32>
  %2 = loom.gelu %1 : tensor<4x32xf32>
  %3 = loom.matmul %2, %w2 transpose_b : tensor<4x32xf32>, tensor<16x32xf32> -> tensor<4x16xf32>
  return %3 : tensor<4x16xf32>
}
