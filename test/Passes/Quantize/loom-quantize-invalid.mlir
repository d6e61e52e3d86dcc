// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; np.ones(32*48, dtype=np.float32).tofile('%t/w.bin')"
// A block size that does not divide K is an error naming the tensor.
// RUN: not loom-opt %s --loom-quantize="scheme=int4:32 output=%t/q.bin base-dir=%t" 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: quantize: tensor 'blk.0.w' [32, K=48]: the quantization block 32 does not divide K = 48 (the innermost dimension); choose a block size that divides K, or skip this tensor
// Nothing is left behind.
// RUN: not ls %t/q.bin %t/q.bin.tmp
// An unsupported bit width or block size is an error, not a crash.
// RUN: not loom-opt %s --loom-quantize="scheme=int3:32 output=%t/q.bin base-dir=%t" 2>&1 | FileCheck %s --check-prefix=BITS
// BITS: quantization scheme 'int3:32': unsupported bit width 3: Loom quantizes to 4 or 8 bits
// RUN: not loom-opt %s --loom-quantize="scheme=int4:48 output=%t/q.bin base-dir=%t" 2>&1 | FileCheck %s --check-prefix=BSIZE
// BSIZE: quantization scheme 'int4:48': block size 48 is not 32, 64 or 128
// RUN: not loom-opt %s --loom-quantize="scheme=q4_0 output=%t/q.bin base-dir=%t" 2>&1 | FileCheck %s --check-prefix=GGUF
// GGUF: GGUF blocks are consumed as the file stores them, never produced
func.func @f(%x: tensor<2x48xf32>) -> tensor<2x32xf32> {
  %w = loom.weight "blk.0.w" from <"w.bin", offset = 0> : tensor<32x48xf32>
  %0 = loom.matmul %x, %w transpose_b : tensor<2x48xf32>, tensor<32x48xf32> -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}
