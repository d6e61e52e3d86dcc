// Two identical layers (a product, then GELU) inline in one entry, for
// loom-gpu-dedup-kernels.mlir's PIPE run: the two GELU kernels are
// outlined separately and merged into one gpu.module before NVVM.
func.func @f(%x: tensor<4x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %0 = loom.matmul %x, %w1 transpose_b : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
  %1 = loom.gelu %0 : tensor<4x16xf32>
  %2 = loom.matmul %1, %w2 transpose_b : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
  %3 = loom.gelu %2 : tensor<4x16xf32>
  return %3 : tensor<4x16xf32>
}
