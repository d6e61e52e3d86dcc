// loom-gpu-matmuls-to-cublas alone: on buffers, a rank-2 product whose
// output was zero-filled just before becomes one loom_cuda_mgpu_gemm call
// (stream placeholder, dtype, transposes, m, n, k, a, b, c) and the fill
// goes; other contractions stay for the generated kernels.
// RUN: loom-opt %s --loom-gpu-matmuls-to-cublas | FileCheck %s

// CHECK-LABEL: func.func @plain(
// CHECK-NOT: linalg.fill
// CHECK: %[[STREAM:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[F32:.*]] = arith.constant 0 : i32
// CHECK: %[[TA:.*]] = arith.constant 0 : i32
// CHECK: %[[TB:.*]] = arith.constant 0 : i32
// CHECK: %[[M:.*]] = arith.constant 4 : i64
// CHECK: %[[N:.*]] = arith.constant 16 : i64
// CHECK: %[[K:.*]] = arith.constant 8 : i64
// CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[PC:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK: %[[C:.*]] = llvm.inttoptr
// CHECK: call @loom_cuda_mgpu_gemm(%[[STREAM]], %[[F32]], %[[TA]], %[[TB]], %[[M]], %[[N]], %[[K]], %{{.*}}, %{{.*}}, %[[C]]) : (!llvm.ptr, i32, i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @plain(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// B transposed (x @ W^T, as a projection reads its weight): trans_b = 1.
// CHECK-LABEL: func.func @transposed_b(
// CHECK: %[[F32:.*]] = arith.constant 0 : i32
// CHECK: %[[TA:.*]] = arith.constant 0 : i32
// CHECK: %[[TB:.*]] = arith.constant 1 : i32
// CHECK: call @loom_cuda_mgpu_gemm(%{{.*}}, %[[F32]], %[[TA]], %[[TB]],
func.func @transposed_b(%a: memref<4x8xf32>, %b: memref<16x8xf32>, %c: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : memref<4x8xf32>, memref<16x8xf32>) outs(%c : memref<4x16xf32>)
  return
}

// Accumulating into c (no zero fill before it) and batched products stay.
// CHECK-LABEL: func.func @stays(
// CHECK: linalg.matmul
// CHECK: linalg.batch_matmul
// CHECK-NOT: call
func.func @stays(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>,
                 %ba: memref<2x4x8xf32>, %bb: memref<2x8x16xf32>, %bc: memref<2x4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.fill ins(%zero : f32) outs(%bc : memref<2x4x16xf32>)
  linalg.batch_matmul ins(%ba, %bb : memref<2x4x8xf32>, memref<2x8x16xf32>) outs(%bc : memref<2x4x16xf32>)
  return
}

// Zeros copied (CSE merged two equal zero-filled tensors; bufferization
// gave the second product a copy of the first's filled buffer): both are
// calls. Copy first: its product's copy goes, then the fill of the other.
// CHECK-LABEL: func.func @copied_zeros(
// CHECK-NOT: linalg.fill
// CHECK-NOT: memref.copy
// CHECK: call @loom_cuda_mgpu_gemm(
// CHECK: call @loom_cuda_mgpu_gemm(
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @copied_zeros(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>, %d: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  memref.copy %c, %d : memref<4x16xf32> to memref<4x16xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%d : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// The product of the filled buffer first: the copy still reads the zeros,
// so the fill stays; the copy's product takes them through the copy, which
// goes.
// CHECK-LABEL: func.func @copied_zeros_after(
// CHECK: linalg.fill
// CHECK-NOT: memref.copy
// CHECK: call @loom_cuda_mgpu_gemm(
// CHECK: call @loom_cuda_mgpu_gemm(
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @copied_zeros_after(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>, %d: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  memref.copy %c, %d : memref<4x16xf32> to memref<4x16xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%d : memref<4x16xf32>)
  return
}

// A copy of something else than zeros: that product stays.
// CHECK-LABEL: func.func @copied_data(
// CHECK: memref.copy
// CHECK: linalg.matmul
func.func @copied_data(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>, %d: memref<4x16xf32>) {
  memref.copy %c, %d : memref<4x16xf32> to memref<4x16xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%d : memref<4x16xf32>)
  return
}

// A copy chain (c -> d -> e): d's product keeps the copy that gave it its
// zeros, since e copies d; e's product takes them from that copy (a copy
// of a copy is not followed: e stays generated, on the right zeros).
// CHECK-LABEL: func.func @copy_chain(
// CHECK: linalg.fill
// CHECK: memref.copy %arg2, %arg3
// CHECK: memref.copy %arg3, %arg4
// CHECK: call @loom_cuda_mgpu_gemm(
// CHECK: linalg.matmul {{.*}} outs(%arg4
func.func @copy_chain(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>, %d: memref<4x16xf32>, %e: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  memref.copy %c, %d : memref<4x16xf32> to memref<4x16xf32>
  memref.copy %d, %e : memref<4x16xf32> to memref<4x16xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%d : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%e : memref<4x16xf32>)
  return
}

// An f16 product that stays generated (its output strided) accumulates in
// f32: c widened into an f32 buffer, the product there with widened
// operands, the sum narrowed back into c.
// CHECK-LABEL: func.func @narrow_stays(
// CHECK: %[[T:.+]] = memref.alloc() : memref<4x16xf32>
// CHECK: linalg.generic {{.*}} ins(%arg2 : memref<4x16xf16, strided<[32, 1]>>) outs(%[[T]] : memref<4x16xf32>)
// CHECK: arith.extf
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : memref<4x8xf16>, memref<8x16xf16>) outs(%[[T]] : memref<4x16xf32>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: arith.mulf {{.*}} : f32
// CHECK: arith.addf {{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%[[T]] : memref<4x16xf32>) outs(%arg2 : memref<4x16xf16, strided<[32, 1]>>)
// CHECK: arith.truncf
// CHECK: memref.dealloc %[[T]]
// CHECK-NOT: linalg.matmul
func.func @narrow_stays(%a: memref<4x8xf16>, %b: memref<8x16xf16>, %c: memref<4x16xf16, strided<[32, 1]>>) {
  %zero = arith.constant 0.0 : f16
  linalg.fill ins(%zero : f16) outs(%c : memref<4x16xf16, strided<[32, 1]>>)
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x16xf16>) outs(%c : memref<4x16xf16, strided<[32, 1]>>)
  return
}

// CHECK: func.func private @loom_cuda_mgpu_gemm(!llvm.ptr, i32, i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
