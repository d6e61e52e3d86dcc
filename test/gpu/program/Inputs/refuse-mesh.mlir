// loomc --target=cuda refuses a program on more than one rank (loomc-cuda.test).
loom.mesh @mesh = <dp = 2>
func.func @gather(%x: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = loom.all_gather %x on @mesh axes = ["dp"] gather_dim = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
