func.func @decode(%x: tensor<1x64xf32>) -> tensor<1x16xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<int8>} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}
