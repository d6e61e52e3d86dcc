// RUN: loom-opt %s --split-input-file --loom-optimize-collectives | FileCheck %s

// Two small independent all-reduces on the same axes become one.
// CHECK-LABEL: func.func @two
// CHECK: %[[C:.*]] = loom.concat
// CHECK: %[[R:.*]] = loom.all_reduce %[[C]] on @mesh axes = ["tp"] : tensor<96xf32>
// CHECK-NOT: loom.all_reduce
// CHECK: loom.slice %[[R]] starts = [0] limits = [32]
// CHECK: loom.slice %[[R]] starts = [32] limits = [96]
loom.mesh @mesh = <tp = 2>
func.func @two(%x: tensor<4x8xf32>, %y: tensor<64xf32>) -> (tensor<4x8xf32>, tensor<64xf32>) {
  %a = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<4x8xf32>
  %b = loom.all_reduce %y on @mesh axes = ["tp"] : tensor<64xf32>
  return %a, %b : tensor<4x8xf32>, tensor<64xf32>
}

// -----

// A dependent pair, or different axes, stay apart.
// CHECK-LABEL: func.func @apart
// CHECK-COUNT-3: loom.all_reduce
// CHECK-NOT: loom.concat
loom.mesh @mesh = <dp = 2, tp = 2>
func.func @apart(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<8xf32>
  %e = loom.exp %a : tensor<8xf32>
  %b = loom.all_reduce %e on @mesh axes = ["tp"] : tensor<8xf32>
  %c = loom.all_reduce %y on @mesh axes = ["dp"] : tensor<8xf32>
  %s = loom.add %b, %c : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %s, %b : tensor<8xf32>, tensor<8xf32>
}
