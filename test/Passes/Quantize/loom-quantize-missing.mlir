// RUN: rm -rf %t && mkdir -p %t
// A missing weight file is an error that names the tensor and the file;
// no output file is left behind.
// RUN: not loom-opt %s --loom-quantize="scheme=int8:32 output=%t/q.bin base-dir=%t" 2>&1 | FileCheck %s
// CHECK: quantize: tensor 'blk.0.w' [32, K=64]: {{.*}}missing.bin
// RUN: not ls %t/q.bin %t/q.bin.tmp
func.func @f(%x: tensor<2x64xf32>) -> tensor<2x32xf32> {
  %w = loom.weight "blk.0.w" from <"missing.bin", offset = 0> : tensor<32x64xf32>
  %0 = loom.matmul %x, %w transpose_b : tensor<2x64xf32>, tensor<32x64xf32> -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}
