// An outer product: [n, 1] x [1, m] -> [n, m]; with n = m = 2^20 the result
// needs 4 TiB.
func.func @main(%a: tensor<?x1xf32> {loom.name = "a"}, %b: tensor<1x?xf32> {loom.name = "b"}) -> tensor<?x?xf32> {
  %0 = loom.matmul %a, %b : tensor<?x1xf32>, tensor<1x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
