// A gather in a private function called by the entry (not an outlined
// layer: no runtime context of its own).
func.func private @pick(%x: tensor<6x4xf32>, %idx: tensor<?xi64>) -> tensor<?x4xf32> {
  %r = loom.gather %x, %idx axis = 0 : tensor<6x4xf32>, tensor<?xi64> -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
func.func @main(%x: tensor<6x4xf32> {loom.name = "x"}, %idx: tensor<?xi64> {loom.name = "idx"}) -> (tensor<?x4xf32> {loom.name = "rows"}) {
  %r = call @pick(%x, %idx) : (tensor<6x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
