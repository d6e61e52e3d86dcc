// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-raise-softmax | FileCheck %s --enable-var-scope

// The stable spelled-out softmax over the last axis.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
// CHECK: %[[R:.+]] = loom.softmax %[[X]] axis = -1 : tensor<2x8xf32>
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %m = loom.reduce max %x axes = [1] keep_dims : tensor<2x8xf32> -> tensor<2x1xf32>
  %0 = loom.sub %x, %m : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %1 = loom.exp %0 : tensor<2x8xf32>
  %2 = loom.reduce sum %1 axes = [1] keep_dims : tensor<2x8xf32> -> tensor<2x1xf32>
  %3 = loom.div %1, %2 : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  return %3 : tensor<2x8xf32>
}

// -----

// A sum over another axis is not a softmax over the last one.
// CHECK-LABEL: func.func @wrong_axis
// CHECK-NOT: loom.softmax
func.func @wrong_axis(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %1 = loom.exp %x : tensor<2x8xf32>
  %2 = loom.reduce sum %1 axes = [0] keep_dims : tensor<2x8xf32> -> tensor<1x8xf32>
  %3 = loom.div %1, %2 : tensor<2x8xf32>, tensor<1x8xf32> -> tensor<2x8xf32>
  return %3 : tensor<2x8xf32>
}
