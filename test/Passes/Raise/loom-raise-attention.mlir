// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-raise-attention | FileCheck %s --enable-var-scope

// GPT-2 style: (q @ k^T) / sqrt(d) + mask, softmax, @ v.
// CHECK-LABEL: func.func @sdpa
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x8x16xf32>, %[[K:.+]]: tensor<1x4x8x16xf32>, %[[V:.+]]: tensor<1x4x8x16xf32>, %[[M:.+]]: tensor<8x8xf32>)
// CHECK: %[[O:.+]] = loom.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]] : tensor<8x8xf32>) scale = 2.500000e-01
// CHECK-NOT: loom.softmax
// CHECK: return %[[O]]
func.func @sdpa(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>, %m: tensor<8x8xf32>) -> tensor<1x4x8x16xf32> {
  %c = loom.constant dense<4.0> : tensor<f32>
  %kt = loom.transpose %k permutation = [0, 1, 3, 2] : tensor<1x4x8x16xf32> -> tensor<1x4x16x8xf32>
  %s = loom.matmul %q, %kt : tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32> -> tensor<1x4x8x8xf32>
  %d = loom.div %s, %c : tensor<1x4x8x8xf32>, tensor<f32> -> tensor<1x4x8x8xf32>
  %a = loom.add %d, %m : tensor<1x4x8x8xf32>, tensor<8x8xf32> -> tensor<1x4x8x8xf32>
  %p = loom.softmax %a axis = -1 : tensor<1x4x8x8xf32>
  %o = loom.matmul %p, %v : tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Grouped KV heads written as unsqueeze/expand/reshape read the 2 KV heads directly.
// CHECK-LABEL: func.func @gqa
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x8x16xf32>, %[[K:.+]]: tensor<1x2x8x16xf32>, %[[V:.+]]: tensor<1x2x8x16xf32>)
// CHECK: loom.attention %[[Q]], %[[K]], %[[V]] scale = 1.000000e+00 : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
func.func @gqa(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %k1 = loom.reshape %k : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
  %k2 = loom.broadcast %k1 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
  %k3 = loom.reshape %k2 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
  %v1 = loom.reshape %v : tensor<1x2x8x16xf32> -> tensor<1x2x1x8x16xf32>
  %v2 = loom.broadcast %v1 : tensor<1x2x1x8x16xf32> -> tensor<1x2x2x8x16xf32>
  %v3 = loom.reshape %v2 : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
  %s = loom.matmul %q, %k3 transpose_b : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
  %p = loom.softmax %s axis = -1 : tensor<1x4x8x8xf32>
  %o = loom.matmul %p, %v3 : tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}
