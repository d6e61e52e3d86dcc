// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg --cse --canonicalize --linalg-fuse-elementwise-ops --canonicalize --loom-bufferize | FileCheck %s --enable-var-scope
// The IR between the conversion and loom-bufferize parses back (loom_cpu.kernel in its custom form):
// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg --cse | loom-opt --split-input-file --verify-roundtrip --loom-bufferize | FileCheck %s --check-prefix=REPARSED
// REPARSED-LABEL: func.func @twice
// REPARSED-COUNT-2: call @loom_rt_sgemm

// Two equal GEMMs (same operands, and after CSE the same tensor.empty as
// destination): loom_cpu.kernel ops are never merged, and the bufferization
// gives each its own output buffer, since both results are live.
// CHECK-LABEL: func.func @twice
// CHECK-DAG: %[[A:.+]] = memref.alloc() {{.*}} : memref<64x512xf32>
// CHECK-DAG: %[[B:.+]] = memref.alloc() {{.*}} : memref<64x512xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: call @loom_rt_sgemm(
// CHECK: memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: call @loom_rt_sgemm(
// CHECK: return %[[B]], %[[A]]
func.func @twice(%x: tensor<64x256xf32>, %w: tensor<512x256xf32>) -> (tensor<64x512xf32>, tensor<64x512xf32>) {
  %0 = loom.matmul %x, %w transpose_b : tensor<64x256xf32>, tensor<512x256xf32> -> tensor<64x512xf32>
  %1 = loom.matmul %x, %w transpose_b : tensor<64x256xf32>, tensor<512x256xf32> -> tensor<64x512xf32>
  return %0, %1 : tensor<64x512xf32>, tensor<64x512xf32>
}

// -----

// The input of a GEMM is overwritten in place only after the last call
// that reads it: with to_buffer at each call, CSE merged the second call's
// to_buffer into the first one and the add wrote %x before the second GEMM
// read it. Now the add writes a fresh buffer, %x stays as it is.
// CHECK-LABEL: func.func @read_after_write
// CHECK-SAME: %[[X:arg1]]: memref<64x256xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: call @loom_rt_sgemm(
// CHECK: %[[Y:.+]] = memref.alloc() {{.*}} : memref<64x256xf32>
// CHECK: linalg.generic {{.*}} ins(%[[X]] : memref<64x256xf32>) outs(%[[Y]] : memref<64x256xf32>)
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: call @loom_rt_sgemm(
// CHECK: return %{{.+}}, %[[Y]], %{{.+}}
func.func @read_after_write(%x: tensor<64x256xf32>, %w: tensor<512x256xf32>) -> (tensor<64x512xf32>, tensor<64x256xf32>, tensor<64x512xf32>) {
  %0 = loom.matmul %x, %w transpose_b : tensor<64x256xf32>, tensor<512x256xf32> -> tensor<64x512xf32>
  %1 = loom.add %x, %x : tensor<64x256xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
  %2 = loom.matmul %x, %w transpose_b : tensor<64x256xf32>, tensor<512x256xf32> -> tensor<64x512xf32>
  return %0, %1, %2 : tensor<64x512xf32>, tensor<64x256xf32>, tensor<64x512xf32>
}

// -----

// A GEMM operand that bufferizes to a strided view (columns [0, 256) of a
// 64x512 input) is copied into a row-major buffer for the call.
// CHECK-LABEL: func.func @strided_input
// CHECK: %[[V:.+]] = memref.subview %arg1[0, 0] [64, 256] [1, 1]
// CHECK: %[[R:.+]] = memref.alloc() : memref<64x256xf32>
// CHECK: memref.copy %[[V]], %[[R]]
// CHECK: memref.extract_aligned_pointer_as_index %[[R]]
// CHECK: call @loom_rt_sgemm(
func.func @strided_input(%x: tensor<64x512xf32>, %w: tensor<512x256xf32>) -> tensor<64x512xf32> {
  %s = loom.slice %x starts = [0, 0] limits = [64, 256] steps = [1, 1] : tensor<64x512xf32> -> tensor<64x256xf32>
  %0 = loom.matmul %s, %w transpose_b : tensor<64x256xf32>, tensor<512x256xf32> -> tensor<64x512xf32>
  return %0 : tensor<64x512xf32>
}
