// A constant index out of range of a static dimension (loom-run-gather-checks.test).
func.func @main(%x: tensor<6x4xf32>) -> tensor<1x4xf32> {
  %c = loom.constant dense<[6]> : tensor<1xi64>
  %0 = loom.gather %x, %c axis = 0 : tensor<6x4xf32>, tensor<1xi64> -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}
