// loom.gather (ONNX Gather) with run-time indices along a run-time
// dimension, and a constant -1 (the last row, as a decode step takes the
// last position) along the same dimension: both checked when it runs.
func.func @main(%x: tensor<?x4xf32> {loom.name = "x"}, %idx: tensor<?xi64> {loom.name = "idx"}) -> (tensor<?x4xf32> {loom.name = "rows"}, tensor<1x4xf32> {loom.name = "last"}) {
  %0 = loom.gather %x, %idx axis = 0 : tensor<?x4xf32>, tensor<?xi64> -> tensor<?x4xf32>
  %c = loom.constant dense<[-1]> : tensor<1xi64>
  %1 = loom.gather %x, %c axis = 0 : tensor<?x4xf32>, tensor<1xi64> -> tensor<1x4xf32>
  return %0, %1 : tensor<?x4xf32>, tensor<1x4xf32>
}
