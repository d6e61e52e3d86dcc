// loomc --target=cuda of an embedding with a quantized (q8_0) table: the
// rows are dequantized by a generated gather over ids checked on the device
// (loomc-cuda.test).
func.func @qembed(%t: !loom.qtensor<8x32, #loom.quant<q8_0>>, %i: tensor<3xi64>) -> tensor<3x32xf32> {
  %0 = loom.embedding %t, %i : !loom.qtensor<8x32, #loom.quant<q8_0>>, tensor<3xi64> -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}
