// RUN: loom-opt %s --verify-roundtrip --loom-raise-pipeline | FileCheck %s --enable-var-scope

// The raise phase as one registered pipeline: the spelled-out softmax and
// GELU of an exporter become loom.softmax and loom.gelu.
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
// CHECK: %[[S:.+]] = loom.softmax %[[X]] axis = -1 : tensor<2x8xf32>
// CHECK: return %[[S]]
func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %m = loom.reduce max %x axes = [1] keep_dims : tensor<2x8xf32> -> tensor<2x1xf32>
  %0 = loom.sub %x, %m : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %1 = loom.exp %0 : tensor<2x8xf32>
  %2 = loom.reduce sum %1 axes = [1] keep_dims : tensor<2x8xf32> -> tensor<2x1xf32>
  %3 = loom.div %1, %2 : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  return %3 : tensor<2x8xf32>
}
