// RUN: rm -rf %t && mkdir -p %t
// RUN: loom-opt %s --verify-roundtrip --loom-quantize="scheme=int4:32 output=%t/q.bin report=%t/r.json" | FileCheck %s
// RUN: not test -e %t/q.bin
// RUN: %python -c "import json; d = json.load(open('%t/r.json')); print([(t['name'], t['nbytes'], t['storage']) for t in d['tensors']])" | FileCheck %s --check-prefix=REPORT

// Weights without storage (planned from a config alone) get the type
// quantizing them would give and stay without storage: nothing is read,
// computed or written (no q.bin); the report gives their planned bytes.
// CHECK-LABEL: func.func @f
// CHECK: %[[W:.+]] = loom.weight "blk.0.attn_q.weight" : !loom.qtensor<32x64, #loom.quant<int4, block = 32, mode = symmetric, scale = f16>>
// CHECK: loom.qmatmul %{{.*}}, %[[W]]
// A [K, N] weight (no transpose_b) is typed [N, K], as when it is quantized.
// CHECK: %[[U:.+]] = loom.weight "blk.0.ffn_up" : !loom.qtensor<16x64,
// CHECK: loom.qmatmul %{{.*}}, %[[U]]
// CHECK-NOT: loom.matmul

// 32 rows of 2 blocks of 18 bytes; 16 rows likewise.
// REPORT: [('blk.0.attn_q.weight', 1152, 'none (planned from a config alone)'), ('blk.0.ffn_up', 576, 'none (planned from a config alone)')]

func.func @f(%x: tensor<2x64xf32>) -> (tensor<2x32xf32>, tensor<2x16xf32>) {
  %w = loom.weight "blk.0.attn_q.weight" : tensor<32x64xf32>
  %y = loom.matmul %x, %w transpose_b : tensor<2x64xf32>, tensor<32x64xf32> -> tensor<2x32xf32>
  %u = loom.weight "blk.0.ffn_up" : tensor<64x16xbf16>
  %uf = loom.cast %u : tensor<64x16xbf16> -> tensor<64x16xf32>
  %z = loom.matmul %x, %uf : tensor<2x64xf32>, tensor<64x16xf32> -> tensor<2x16xf32>
  return %y, %z : tensor<2x32xf32>, tensor<2x16xf32>
}
