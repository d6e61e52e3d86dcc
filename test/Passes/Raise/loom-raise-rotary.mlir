// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-raise-rotary | FileCheck %s --enable-var-scope

// Hugging Face rotate_half: x * cos + cat(-x[..., 8:], x[..., :8]) * sin.
// CHECK-LABEL: func.func @rotary
// CHECK-SAME: (%[[X:.+]]: tensor<1x4x8x16xf32>, %[[C:.+]]: tensor<8x16xf32>, %[[S:.+]]: tensor<8x16xf32>)
// CHECK-DAG: %[[CH:.+]] = loom.slice %[[C]] starts = [0, 0] limits = [8, 8] steps = [1, 1]
// CHECK-DAG: %[[SH:.+]] = loom.slice %[[S]] starts = [0, 0] limits = [8, 8] steps = [1, 1]
// CHECK: %[[R:.+]] = loom.rotary %[[X]], %[[CH]], %[[SH]] style = half
// CHECK: return %[[R]]
func.func @rotary(%x: tensor<1x4x8x16xf32>, %cos: tensor<8x16xf32>, %sin: tensor<8x16xf32>) -> tensor<1x4x8x16xf32> {
  %hi = loom.slice %x starts = [0, 0, 0, 8] limits = [1, 4, 8, 16] steps = [1, 1, 1, 1] : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
  %lo = loom.slice %x starts = [0, 0, 0, 0] limits = [1, 4, 8, 8] steps = [1, 1, 1, 1] : tensor<1x4x8x16xf32> -> tensor<1x4x8x8xf32>
  %n = loom.neg %hi : tensor<1x4x8x8xf32>
  %r = loom.concat %n, %lo axis = -1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x16xf32>
  %a = loom.mul %x, %cos : tensor<1x4x8x16xf32>, tensor<8x16xf32> -> tensor<1x4x8x16xf32>
  %b = loom.mul %r, %sin : tensor<1x4x8x16xf32>, tensor<8x16xf32> -> tensor<1x4x8x16xf32>
  %0 = loom.add %a, %b : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}
