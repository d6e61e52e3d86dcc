// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-optimize-collectives | FileCheck %s --enable-var-scope
// loom-optimize-collectives on per-rank programs.

// all_reduce -> local_slice of one dimension over the same axes: reduce_scatter.
loom.mesh @m = <dp = 2, tp = 2>
func.func @reduce_then_slice(%x: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = loom.all_reduce %x on @m axes = ["tp"] : tensor<8x16xf32>
  %1 = loom.local_slice %0 on @m split = [["tp"], []] : tensor<8x16xf32> -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
// Against mesh order: one reduce_scatter per axis, major first.
func.func @reduce_then_slice_two_axes(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %0 = loom.all_reduce %x on @m axes = ["dp", "tp"] : tensor<8x16xf32>
  %1 = loom.local_slice %0 on @m split = [[], ["tp", "dp"]] : tensor<8x16xf32> -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
// The slice also splits another dimension: it stays, after the reduce_scatter.
func.func @reduce_then_slice_more(%x: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %0 = loom.all_reduce %x on @m axes = ["tp"] : tensor<8x16xf32>
  %1 = loom.local_slice %0 on @m split = [["tp"], ["dp"]] : tensor<8x16xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
// Other axes, or another use: unchanged.
func.func @no_match(%x: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<8x16xf32>) {
  %0 = loom.all_reduce %x on @m axes = ["tp"] : tensor<8x16xf32>
  %1 = loom.local_slice %0 on @m split = [["dp"], []] : tensor<8x16xf32> -> tensor<4x16xf32>
  %2 = loom.all_reduce %x on @m axes = ["tp"] : tensor<8x16xf32>
  %3 = loom.local_slice %2 on @m split = [["tp"], []] : tensor<8x16xf32> -> tensor<4x16xf32>
  return %3, %2 : tensor<4x16xf32>, tensor<8x16xf32>
}

// CHECK-LABEL: func.func @reduce_then_slice(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<4x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[ARG0]] on @m axes = ["tp"] scatter_dim = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: return %[[V1]] : tensor<4x16xf32>
// CHECK-LABEL: func.func @reduce_then_slice_two_axes(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<8x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[ARG0]] on @m axes = ["tp"] scatter_dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[V1]] on @m axes = ["dp"] scatter_dim = 1 : tensor<8x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT: return %[[V2]] : tensor<8x4xf32>
// CHECK-LABEL: func.func @reduce_then_slice_more(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[ARG0]] on @m axes = ["tp"] scatter_dim = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}], ["dp"]] : tensor<4x16xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V2]] : tensor<4x8xf32>
// CHECK-LABEL: func.func @no_match(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> (tensor<4x16xf32>, tensor<8x16xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_reduce %[[ARG0]] on @m axes = ["tp"] : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}"dp"], []] : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.all_reduce %[[ARG0]] on @m axes = ["tp"] : tensor<8x16xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.local_slice %[[V3]] on @m split = {{\[\[}}"tp"], []] : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: return %[[V4]], %[[V3]] : tensor<4x16xf32>, tensor<8x16xf32>

// -----


// A sequence-parallel norm: reduce_scatter of the rows, the residual add
// (its replicated operand sliced locally) and the norm on the shard, then
// an all_gather.
loom.mesh @m = <tp = 4>
func.func @norm_after_reduce(%x: tensor<8x16xf32>, %res: tensor<8x16xf32>, %g: tensor<16xf32>) -> tensor<8x16xf32> {
  %0 = loom.all_reduce %x on @m axes = ["tp"] : tensor<8x16xf32>
  %1 = loom.add %0, %res : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %2 = loom.rms_norm %1 scale(%g : tensor<16xf32>) epsilon = 1.0e-05 : tensor<8x16xf32> -> tensor<8x16xf32>
  %3 = loom.exp %2 : tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}
// No norm after the all_reduce: unchanged.
func.func @no_norm(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = loom.all_reduce %x on @m axes = ["tp"] : tensor<8x16xf32>
  %1 = loom.exp %0 : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}
// Rows that do not divide over the group: unchanged.
func.func @rows_do_not_divide(%x: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %0 = loom.all_reduce %x on @m axes = ["tp"] : tensor<6x16xf32>
  %1 = loom.rms_norm %0 epsilon = 1.0e-05 : tensor<6x16xf32> -> tensor<6x16xf32>
  return %1 : tensor<6x16xf32>
}

// CHECK-LABEL: func.func @norm_after_reduce(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: %[[ARG1:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: %[[ARG2:[a-zA-Z0-9_]+]]: tensor<16xf32>
// CHECK-SAME: -> tensor<8x16xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[ARG0]] on @m axes = ["tp"] scatter_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.local_slice %[[ARG1]] on @m split = {{\[\[}}"tp"], []] : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.add %[[V3]], %[[V4]] : tensor<2x16xf32>, tensor<2x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.rms_norm %[[V5]] scale(%[[ARG2]] : tensor<16xf32>) epsilon = 9.99999974E-6 : tensor<2x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.all_gather %[[V6]] on @m axes = ["tp"] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = loom.exp %[[V7]] : tensor<8x16xf32>
// CHECK-NEXT: return %[[V8]] : tensor<8x16xf32>
// CHECK-LABEL: func.func @no_norm(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<8x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_reduce %[[ARG0]] on @m axes = ["tp"] : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.exp %[[V1]] : tensor<8x16xf32>
// CHECK-NEXT: return %[[V2]] : tensor<8x16xf32>
// CHECK-LABEL: func.func @rows_do_not_divide(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<6x16xf32>
// CHECK-SAME: -> tensor<6x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_reduce %[[ARG0]] on @m axes = ["tp"] : tensor<6x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.rms_norm %[[V1]] epsilon = 9.99999974E-6 : tensor<6x16xf32> -> tensor<6x16xf32>
// CHECK-NEXT: return %[[V2]] : tensor<6x16xf32>

// -----

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
