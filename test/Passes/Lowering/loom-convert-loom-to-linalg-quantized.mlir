// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points="qmatmul=dequant" --loom-convert-loom-to-linalg="qmatmul=dequant" | FileCheck %s --check-prefix=DEQ

// Loom's int4 blocks (block 64, min, bf16 scales) travel as their bytes:
// 8 rows of 2 blocks of 2 + 2 + 32 bytes. The kernel loads the bf16 scale
// and min, unpacks unsigned nibbles and adds min * sum(x) per block; a
// rank-3 input is passed as a [M, K] view.
// CHECK-LABEL: func.func @own
// CHECK-SAME: tensor<8x72xi8>
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<2x3x128xf32> into memref<6x128xf32>
// CHECK: call @__loom_qmm_int4_b64_min_bf16_k128
// CHECK: func.func private @__loom_qmm_int4_b64_min_bf16_k128(%{{.*}}: memref<?x128xf32>, %{{.*}}: memref<?x72xi8>, %{{.*}}: memref<?x?xf32>)
// CHECK: vector.bitcast %{{.*}} : vector<2xi8> to vector<1xbf16>
// CHECK: arith.uitofp %{{.*}} : vector<16xi8> to vector<16xf32>
// CHECK: vector.fma
// The fallback dequantizes (bf16 scale and min from their bytes), then
// multiplies in f32 (a product this small stays generated).
// DEQ-LABEL: func.func @own
// DEQ: arith.bitcast %{{.*}} : i16 to bf16
// DEQ-NOT: __loom_qmm
func.func @own(%x: tensor<2x3x128xf32>) -> tensor<2x3x8xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<8x128, #loom.quant<int4, block = 64, mode = min, scale = bf16>>
  %0 = loom.qmatmul %x, %w : tensor<2x3x128xf32>, !loom.qtensor<8x128, #loom.quant<int4, block = 64, mode = min, scale = bf16>> -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// int8 symmetric blocks with f32 scales: signed codes, 4-byte scale.
// CHECK-LABEL: func.func @int8
// CHECK: call @__loom_qmm_int8_b32_symmetric_f32_k64
// CHECK: vector.bitcast %{{.*}} : vector<4xi8> to vector<1xf32>
// CHECK: arith.sitofp %{{.*}} : vector<16xi8> to vector<16xf32>
// DEQ-LABEL: func.func @int8
// DEQ: arith.bitcast %{{.*}} : i32 to f32
// DEQ: call @loom_rt_sgemm
func.func @int8(%x: tensor<?x64xf32>) -> tensor<?x4xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<4x64, #loom.quant<int8, block = 32, mode = symmetric, scale = f32>>
  %0 = loom.qmatmul %x, %w : tensor<?x64xf32>, !loom.qtensor<4x64, #loom.quant<int8, block = 32, mode = symmetric, scale = f32>> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
