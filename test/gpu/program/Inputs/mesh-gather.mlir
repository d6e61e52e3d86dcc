// An all_gather over two ranks: loomc --target=cuda writes one program for
// both ranks, the collective a loom_rt_* call on device buffers
// (loomc-cuda.test; numbers under the CUDA emulator: test/python/gpu_emu).
loom.mesh @mesh = <dp = 2>
func.func @gather(%x: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = loom.all_gather %x on @mesh axes = ["dp"] gather_dim = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
