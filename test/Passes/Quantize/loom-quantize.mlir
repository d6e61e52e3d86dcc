// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; r = np.random.default_rng(0); r.standard_normal(32*64 + 64*16 + 100*64 + 64*64, dtype=np.float32).tofile('%t/w.bin')"
// RUN: loom-opt %s --verify-roundtrip --loom-quantize="scheme=int4:32 output=%t/q.bin report=%t/r.json base-dir=%t" | FileCheck %s
// RUN: %python -c "import json; d = json.load(open('%t/r.json')); print(sorted(t['name'] for t in d['tensors'])); print(sorted(k['name'] + ': ' + k['reason'] for k in d['kept']))" | FileCheck %s --check-prefix=REPORT
// RUN: %python -c "import json; print(json.load(open('%t/r.json'))['file'])" | FileCheck %s --check-prefix=FILE
// RUN: loom-opt %s --verify-roundtrip --loom-quantize="scheme=int4:32 output=%t/q2.bin report=%t/r2.json output-name=weights/quant.bin base-dir=%t" -o /dev/null
// RUN: %python -c "import json; print(json.load(open('%t/r2.json'))['file'])" | FileCheck %s --check-prefix=NAMED
// RUN: loom-opt %s --verify-roundtrip --loom-quantize="scheme=int8:64:min output=%t/q8.bin rules=blk.0.*=int4:64:sym:f32;*.ffn_up=skip skip=none base-dir=%t" | FileCheck %s --check-prefix=RULES

// A [N, K] weight read through transpose_b becomes a qtensor in the new
// file; the matmul becomes loom.qmatmul.
// CHECK-LABEL: func.func @f
// CHECK: %[[W:.+]] = loom.weight "blk.0.attn_q.weight" from <"{{.*}}/q.bin", offset = 0> : !loom.qtensor<32x64, #loom.quant<int4, block = 32, mode = symmetric, scale = f16>>
// CHECK: loom.qmatmul %{{.*}}, %[[W]] : tensor<2x64xf32>, !loom.qtensor<32x64, #loom.quant<int4, block = 32, mode = symmetric, scale = f16>> -> tensor<2x32xf32>
// A [K, N] weight (no transpose_b) is transposed to [N, K]; 32 rows of 36
// bytes before it, padded to 64.
// CHECK: %[[U:.+]] = loom.weight "blk.0.ffn_up" from <"{{.*}}/q.bin", offset = 1152> : !loom.qtensor<16x64,
// CHECK: loom.qmatmul %{{.*}}, %[[U]]
// The embedding table is not a matmul weight and the head is skipped by
// name (the default skip list): both stay f32.
// CHECK: loom.weight "token_embd.weight" {{.*}} : tensor<100x64xf32>
// CHECK: loom.weight "output.weight" {{.*}} : tensor<64x64xf32>
// CHECK: loom.matmul
// CHECK-NOT: loom.matmul

// REPORT: ['blk.0.attn_q.weight', 'blk.0.ffn_up']

// The report names the file by its absolute path, or as output-name says
// (loomc: a bundle's report, relative to the bundle).
// FILE: {{^}}/{{.*}}/q.bin{{$}}
// NAMED: {{^}}weights/quant.bin{{$}}
// REPORT: ['output.weight: skipped by name', 'token_embd.weight: used by loom.embedding (not as a matmul weight)']

// Rules come first and the first match wins (blk.0.ffn_up matches blk.0.*
// before *.ffn_up); skip=none quantizes the head with the default scheme.
// RULES: loom.weight "blk.0.attn_q.weight" {{.*}} !loom.qtensor<32x64, #loom.quant<int4, block = 64, mode = symmetric, scale = f32>>
// RULES: loom.weight "blk.0.ffn_up" {{.*}} !loom.qtensor<16x64, #loom.quant<int4, block = 64, mode = symmetric, scale = f32>>
// RULES: loom.weight "output.weight" {{.*}} !loom.qtensor<64x64, #loom.quant<int8, block = 64, mode = min, scale = f16>>

func.func @f(%x: tensor<2x64xf32>, %ids: tensor<2xi64>) -> (tensor<2x32xf32>, tensor<2x16xf32>, tensor<2x64xf32>) {
  %w = loom.weight "blk.0.attn_q.weight" from <"w.bin", offset = 0> : tensor<32x64xf32>
  %0 = loom.matmul %x, %w transpose_b : tensor<2x64xf32>, tensor<32x64xf32> -> tensor<2x32xf32>
  %u = loom.weight "blk.0.ffn_up" from <"w.bin", offset = 8192> : tensor<64x16xf32>
  %1 = loom.matmul %x, %u : tensor<2x64xf32>, tensor<64x16xf32> -> tensor<2x16xf32>
  %e = loom.weight "token_embd.weight" from <"w.bin", offset = 12288> : tensor<100x64xf32>
  %2 = loom.embedding %e, %ids : tensor<100x64xf32>, tensor<2xi64> -> tensor<2x64xf32>
  %h = loom.weight "output.weight" from <"w.bin", offset = 37888> : tensor<64x64xf32>
  %3 = loom.matmul %2, %h transpose_b : tensor<2x64xf32>, tensor<64x64xf32> -> tensor<2x64xf32>
  return %0, %1, %3 : tensor<2x32xf32>, tensor<2x16xf32>, tensor<2x64xf32>
}
