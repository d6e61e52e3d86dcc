// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --enable-var-scope

// Elementwise ops with broadcasting become one linalg.generic whose maps
// broadcast the bias; the dynamic size comes from the input.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias
// CHECK: %[[D:.+]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x8xf32>
// CHECK: tensor.empty(%[[D]]) : tensor<?x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
func.func @bias(%x: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = loom.add %x, %b : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A matmul is a generic with a reduction over K after a zero fill; with
// transpose_b the weight is read as (n, k).
// CHECK-DAG: #[[$A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$B:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[$A]], #[[$B]], #[[$C]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %0 = loom.matmul %x, %w transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// A collective becomes a call into the runtime ABI: context, dtype (f32 =
// 0), reduction (sum = 0), input and output pointers, count, axes mask
// (tp is axis 1 of the mesh: mask 2).
// CHECK: func.func private @loom_rt_all_reduce(!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, i64, i64)
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[CTX:.+]]: !llvm.ptr
// CHECK: bufferization.to_buffer %{{.*}} read_only
// CHECK: memref.alloc() : memref<4x8xf32>
// CHECK-DAG: %[[MASK:.+]] = arith.constant 2 : i64
// CHECK: call @loom_rt_all_reduce(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]])
// CHECK: bufferization.to_tensor %{{.*}} restrict :
// CHECK-NOT: loom.mesh
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_reduce(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Send and recv compute the peer's global rank from this rank's coordinates.
// CHECK-LABEL: func.func @ring
// CHECK: call @loom_rt_coord
// CHECK: call @loom_rt_send
// CHECK: call @loom_rt_recv
loom.mesh @mesh = <pp = 4>
func.func @ring(%x: tensor<8xf32>) -> tensor<8xf32> {
  loom.send %x to @mesh axes = ["pp"] shift = 1 channel = 3 : tensor<8xf32>
  %0 = loom.recv from @mesh axes = ["pp"] shift = -1 channel = 3 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Attention in f32: both products are batched GEMMs in the runtime; with
// 9 query heads on 3 KV heads, head h reads KV head h / 3 (group = 3).
// CHECK-LABEL: func.func @attention
// CHECK-DAG: %[[H:.+]] = arith.constant 9 : i64
// CHECK-DAG: %[[G:.+]] = arith.constant 3 : i64
// CHECK: call @loom_rt_sgemm_batched(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[H]], %[[G]],
// CHECK: math.exp
// CHECK: call @loom_rt_sgemm_batched
func.func @attention(%q: tensor<1x9x4x8xf32>, %k: tensor<1x3x4x8xf32>, %v: tensor<1x3x4x8xf32>) -> tensor<1x9x4x8xf32> {
  %0 = loom.attention %q, %k, %v causal : tensor<1x9x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32> -> tensor<1x9x4x8xf32>
  return %0 : tensor<1x9x4x8xf32>
}

// -----

// GGUF blocks travel as their bytes (8 rows of 2 Q4_0 blocks of 18 bytes);
// loom.qmatmul calls a generated vector kernel (one per scheme and K) that
// unpacks the blocks in registers: f16 scale from two bytes, nibbles,
// multiply-adds, a horizontal sum per output (test/Passes/Quantize for the
// dequantize + GEMM fallback).
// CHECK-LABEL: func.func @qmatmul
// CHECK-SAME: tensor<8x36xi8>
// CHECK: call @__loom_qmm_q4_0_b32_zero_point_f16_k64(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x64xf32>, memref<?x36xi8>, memref<?x?xf32>) -> ()
// CHECK: func.func private @__loom_qmm_q4_0_b32_zero_point_f16_k64
// CHECK: vector.bitcast %{{.*}} : vector<2xi8> to vector<1xf16>
// CHECK: arith.shrui %{{.*}} : vector<16xi8>
// CHECK: vector.fma
// CHECK: vector.reduction <add>
func.func @qmatmul(%x: tensor<?x64xf32>, %w: !loom.qtensor<8x64, #loom.quant<q4_0>>) -> tensor<?x8xf32> {
  %0 = loom.qmatmul %x, %w : tensor<?x64xf32>, !loom.qtensor<8x64, #loom.quant<q4_0>> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
