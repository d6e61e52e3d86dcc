// Two quantized matmuls, SmolLM2's formats: q4_1 (96x64) then q8_0 (32x96);
// the GGUF blocks live in w1.bin and w2.bin beside it.
func.func @qmm(%x: tensor<1x64xf32>) -> tensor<1x32xf32> {
  %w1 = loom.weight "w1" from <"w1.bin", offset = 0> : !loom.qtensor<96x64, #loom.quant<q4_1>>
  %w2 = loom.weight "w2" from <"w2.bin", offset = 0> : !loom.qtensor<32x96, #loom.quant<q8_0>>
  %h = loom.qmatmul %x, %w1 : tensor<1x64xf32>, !loom.qtensor<96x64, #loom.quant<q4_1>> -> tensor<1x96xf32>
  %y = loom.qmatmul %h, %w2 : tensor<1x96xf32>, !loom.qtensor<32x96, #loom.quant<q8_0>> -> tensor<1x32xf32>
  return %y : tensor<1x32xf32>
}
