// A tied LM head (SmolLM2's q8_0 token_embd): the embedding's table is the
// head's qmatmul weight, one file of GGUF blocks (64 rows of 64: 4352
// bytes) beside it, for loomc --target=cuda and loom-run under the fake
// driver (test/gpu/program/loom_run_tied_fake_test.sh).
func.func @tied(%ids: tensor<1x1xi64> {loom.name = "ids"}) -> (tensor<1x1x64xf32> {loom.name = "logits"}) {
  %t = loom.weight "token_embd" from <"t.bin", offset = 0> : !loom.qtensor<64x64, #loom.quant<q8_0>>
  %e = loom.embedding %t, %ids : !loom.qtensor<64x64, #loom.quant<q8_0>>, tensor<1x1xi64> -> tensor<1x1x64xf32>
  %y = loom.qmatmul %e, %t : tensor<1x1x64xf32>, !loom.qtensor<64x64, #loom.quant<q8_0>> -> tensor<1x1x64xf32>
  return %y : tensor<1x1x64xf32>
}
