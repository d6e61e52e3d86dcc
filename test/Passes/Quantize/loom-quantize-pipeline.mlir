// The quantize phase as its registered pipeline (what loomc --quant runs):
// nothing without `quant` (or `quant-act`); with it, loom-quantize with the
// phase's options: the scheme, the file the blocks go to, the activations
// recorded on each qmatmul, the skip globs, and the scheme refused by name.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; np.arange(32*64, dtype=np.float32).tofile('%t/w.bin')"
// RUN: loom-opt %s --verify-roundtrip --loom-quantize-pipeline | FileCheck %s --check-prefix=NONE
// RUN: loom-opt %s --verify-roundtrip --loom-quantize-pipeline="quant=int8:32:min quant-file=%t/q.bin quant-report=%t/r.json quant-act=int8 base-dir=%t" | FileCheck %s
// RUN: test -s %t/q.bin && test -s %t/r.json
// RUN: loom-opt %s --loom-quantize-pipeline="quant=int8:32:min quant-file=%t/q2.bin quant-skip=blk.* base-dir=%t" | FileCheck %s --check-prefix=SKIP
// RUN: not loom-opt %s --loom-quantize-pipeline="quant=int3" 2>&1 | FileCheck %s --check-prefix=BAD

// NONE: loom.weight "blk.0.attn_q.weight" from <"w.bin", offset = 0> : tensor<32x64xf32>
// NONE: loom.matmul

// CHECK: %[[W:.+]] = loom.weight "blk.0.attn_q.weight" from <"{{.*}}/q.bin", offset = 0> : !loom.qtensor<32x64, #loom.quant<int8, block = 32, mode = min, scale = f16>>
// CHECK: loom.qmatmul %{{.*}}, %[[W]] {quant_activations = #loom.quant_act<int8>}

// SKIP: loom.weight "blk.0.attn_q.weight" from <"w.bin", offset = 0> : tensor<32x64xf32>
// SKIP: loom.matmul

// BAD: error: quantize: quantization scheme 'int3': unsupported bit width 3: Loom quantizes to 4 or 8 bits
func.func @f(%x: tensor<2x64xf32>) -> tensor<2x32xf32> {
  %w = loom.weight "blk.0.attn_q.weight" from <"w.bin", offset = 0> : tensor<32x64xf32>
  %y = loom.matmul %x, %w transpose_b : tensor<2x64xf32>, tensor<32x64xf32> -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}
