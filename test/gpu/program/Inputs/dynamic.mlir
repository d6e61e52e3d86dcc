// An entry with a run-time number of rows (a sequence length) for
// loomc --target=cuda --gpu-max-tokens and loom-run under the fake driver
// (loom_run_dyn_fake_test.sh): a product (generated with --no-gemm) and
// SiLU, each a kernel whose grid follows the rows.
func.func @dyn(%x: tensor<?x16xf32> {loom.name = "x"}) -> (tensor<?x32xf32> {loom.name = "y"}) {
  %w = loom.weight "w" from <"w.bin", offset = 0> : tensor<32x16xf32>
  %0 = loom.matmul %x, %w transpose_b : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  %1 = loom.silu %0 : tensor<?x32xf32>
  return %1 : tensor<?x32xf32>
}
