// An embedding gather (table 100 x 16, f32, in a file) and a residual add,
// for loomc --target=cuda and loom-run under the fake driver
// (test/gpu/program/loom_run_embed_fake_test.sh).
func.func @embed(%ids: tensor<1x5xi64> {loom.name = "ids"}) -> (tensor<1x5x16xf32> {loom.name = "h"}) {
  %t = loom.weight "table" from <"t.bin", offset = 0> : tensor<100x16xf32>
  %0 = loom.embedding %t, %ids : tensor<100x16xf32>, tensor<1x5xi64> -> tensor<1x5x16xf32>
  %1 = loom.add %0, %0 : tensor<1x5x16xf32>, tensor<1x5x16xf32> -> tensor<1x5x16xf32>
  return %1 : tensor<1x5x16xf32>
}
