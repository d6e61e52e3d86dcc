loom.mesh @mesh = <tp = 2>
func.func @mlp(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w1 = loom.weight "w1" : tensor<64x256xf32>
  %w2 = loom.weight "w2" : tensor<256x64xf32>
  %h = loom.matmul %x, %w1 : tensor<?x64xf32>, tensor<64x256xf32> -> tensor<?x256xf32>
  %a = loom.gelu %h : tensor<?x256xf32>
  %y = loom.matmul %a, %w2 : tensor<?x256xf32>, tensor<256x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
