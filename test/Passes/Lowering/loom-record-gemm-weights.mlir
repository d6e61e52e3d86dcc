// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points --loom-record-entry-points --loom-outline-repeated-layers --loom-convert-loom-to-linalg | FileCheck %s --enable-var-scope

// loom-convert-loom-to-linalg records the weights its GEMM calls read
// (GemmWeights.h) in loom.entry_points, which the bundle writes to the
// manifest ("gemm_b"; the runtime packs them at load).

// Weights read by GEMM calls get gemm_b ("kn": [K, N], "nk": [N, K] with
// transpose_b); a small product stays a generated loop and its weight gets
// none; the kernels' marks are gone.
// CHECK: loom.entry_points = [{arg_attrs = [{}, {loom.name = "x"}, {loom.weight = #loom.weight<name = "w1", gemm_b = "kn">}, {loom.weight = #loom.weight<name = "w2", gemm_b = "nk">}, {loom.weight = #loom.weight<name = "w3">}]
// CHECK-LABEL: func.func @f
// CHECK-NOT: loom_cpu.gemm_b
func.func @f(%x: tensor<64x256xf32> {loom.name = "x"}) -> tensor<64x1xf32> {
  %w1 = loom.weight "w1" : tensor<256x512xf32>
  %w2 = loom.weight "w2" : tensor<256x512xf32>
  %w3 = loom.weight "w3" : tensor<256x1xf32>
  %0 = loom.matmul %x, %w1 : tensor<64x256xf32>, tensor<256x512xf32> -> tensor<64x512xf32>
  %1 = loom.matmul %0, %w2 transpose_b : tensor<64x512xf32>, tensor<256x512xf32> -> tensor<64x256xf32>
  %2 = loom.matmul %1, %w3 : tensor<64x256xf32>, tensor<256x1xf32> -> tensor<64x1xf32>
  return %2 : tensor<64x1xf32>
}

// -----

// (Weights of outlined layers, found through the layer's calls:
// test/python/onnx/test_onnx_gemm_pack.py.)
// A weight read as B in both orientations is left unmarked (packed on
// first use instead).
// CHECK: loom.entry_points = [{arg_attrs = [{}, {loom.name = "x"}, {loom.weight = #loom.weight<name = "w">}]
func.func @both(%x: tensor<64x256xf32> {loom.name = "x"}) -> tensor<64x256xf32> {
  %w = loom.weight "w" : tensor<256x256xf32>
  %0 = loom.matmul %x, %w : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  %1 = loom.matmul %0, %w transpose_b : tensor<64x256xf32>, tensor<256x256xf32> -> tensor<64x256xf32>
  return %1 : tensor<64x256xf32>
}
