// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-raise-silu | FileCheck %s --enable-var-scope

// x * sigmoid(x), either operand order, becomes one loom.silu.
// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
// CHECK: %[[R:.+]] = loom.silu %[[X]] : tensor<2x8xf32>
// CHECK-NOT: loom.sigmoid
// CHECK: return %[[R]]
func.func @silu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = loom.sigmoid %x : tensor<2x8xf32>
  %0 = loom.mul %s, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// sigmoid of a different value is left alone.
// CHECK-LABEL: func.func @not_silu
// CHECK: loom.sigmoid
// CHECK: loom.mul
func.func @not_silu(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %s = loom.sigmoid %y : tensor<8xf32>
  %0 = loom.mul %x, %s : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
