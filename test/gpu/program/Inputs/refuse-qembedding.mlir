// loomc --target=cuda refuses an embedding with a quantized table (only float
// tables have the device id check and gather; loomc-cuda.test).
func.func @qembed(%t: !loom.qtensor<8x32, #loom.quant<q8_0>>, %i: tensor<3xi64>) -> tensor<3x32xf32> {
  %0 = loom.embedding %t, %i : !loom.qtensor<8x32, #loom.quant<q8_0>>, tensor<3xi64> -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}
