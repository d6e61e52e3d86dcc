// An all_reduce over two ranks (loomc-cuda.test; numbers under the CUDA
// emulator: test/python/gpu_emu, the single-device communicator's loom_reduce).
loom.mesh @mesh = <dp = 2>
func.func @sum(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = loom.all_reduce %x on @mesh axes = ["dp"] : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
