// The small MLP with a constant (a non-splat dense tensor: a memref.global
// after bufferization) added to its output, for the check that constants
// are uploaded when loom-run opens the bundle, not inside a call
// (test/gpu/program/loom_run_fake_test.sh, 64 bytes of constants).
func.func @mlp(%x: tensor<4x16xf32> {loom.name = "x"}) -> (tensor<4x16xf32> {loom.name = "y"}) {
  %w1 = loom.weight "fc1.weight" from <"fc1.bin", offset = 0> : tensor<32x16xf32>
  %b1 = loom.weight "fc1.bias" from <"fc1_bias.bin", offset = 0> : tensor<32xf32>
  %w2 = loom.weight "fc2.weight" from <"fc2.bin", offset = 0> : tensor<16x32xf32>
  %c = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : tensor<16xf32>
  %0 = loom.matmul %x, %w1 transpose_b : tensor<4x16xf32>, tensor<32x16xf32> -> tensor<4x32xf32>
  %1 = loom.add %0, %b1 : tensor<4x32xf32>, tensor<32xf32> -> tensor<4x32xf32>
  %2 = loom.gelu %1 : tensor<4x32xf32>
  %3 = loom.matmul %2, %w2 transpose_b : tensor<4x32xf32>, tensor<16x32xf32> -> tensor<4x16xf32>
  %4 = loom.add %3, %c : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  return %4 : tensor<4x16xf32>
}
