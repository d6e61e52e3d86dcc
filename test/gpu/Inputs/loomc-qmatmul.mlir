// A program with one GGUF Q4_0 matmul; its blocks live in q.bin beside it.
func.func @f(%x: tensor<1x64xf32>) -> tensor<1x96xf32> {
  %w = loom.weight "w" from <"q.bin", offset = 0> : !loom.qtensor<96x64, #loom.quant<q4_0>>
  %y = loom.qmatmul %x, %w : tensor<1x64xf32>, !loom.qtensor<96x64, #loom.quant<q4_0>> -> tensor<1x96xf32>
  return %y : tensor<1x96xf32>
}
