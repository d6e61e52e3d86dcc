// An all_reduce on a one-rank mesh (loomc-cuda.test; numbers under the CUDA
// emulator: test/python/gpu_emu).
loom.mesh @mesh = <dp = 1>
func.func @sum(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = loom.all_reduce %x on @mesh axes = ["dp"] : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
