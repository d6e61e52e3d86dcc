// loom.gather for CUDA (loomc-cuda.test; loom-run under the fake driver:
// test/gpu/program/loom_run_embed_fake_test.sh): rows of a weight (100 x
// 16, f32, in a file) at run-time indices, checked on the device, then
// columns -1 and 0 of them at constant indices (checked at compile time).
func.func @gather(%ids: tensor<1x5xi64> {loom.name = "ids"}) -> (tensor<1x5x2xf32> {loom.name = "h"}) {
  %t = loom.weight "table" from <"t.bin", offset = 0> : tensor<100x16xf32>
  %0 = loom.gather %t, %ids axis = 0 : tensor<100x16xf32>, tensor<1x5xi64> -> tensor<1x5x16xf32>
  %c = loom.constant dense<[-1, 0]> : tensor<2xi64>
  %1 = loom.gather %0, %c axis = 2 : tensor<1x5x16xf32>, tensor<2xi64> -> tensor<1x5x2xf32>
  return %1 : tensor<1x5x2xf32>
}
