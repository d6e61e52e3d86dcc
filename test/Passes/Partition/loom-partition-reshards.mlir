// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-insert-explicit-reshards --loom-partition | FileCheck %s --enable-var-scope
// Each reshard kind, on 1-D, 2x2 and 2x2x2 meshes. Arguments of private
// functions are local values laid out as their loom.sharding says.

loom.mesh @m = <tp = 4>
// partial -> replicated: all_reduce
func.func private @partial_to_replicated(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>}) -> tensor<8x16xf32> {
  %0 = loom.shard %x to <@m, [{}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// partial -> split: reduce_scatter
func.func private @partial_to_split(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) {
  %0 = loom.shard %x to <@m, [{tp}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// split -> replicated: all_gather
func.func private @split_to_replicated(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> tensor<8x16xf32> {
  %0 = loom.shard %x to <@m, [{}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// axis moving from dim 0 to dim 1: all_to_all
func.func private @move_axis(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) {
  %0 = loom.shard %x to <@m, [{}, {tp}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// replicated -> split: local_slice
func.func private @replicated_to_split(%x: tensor<8x16xf32>) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) {
  %0 = loom.shard %x to <@m, [{tp}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// same sharding: nothing
func.func private @identity(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) {
  %0 = loom.shard %x to <@m, [{tp}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// partial kept: nothing
func.func private @keep_partial(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>}) {
  %0 = loom.shard %x to <@m, [{}, {}], partial = {tp}> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func private @partial_to_replicated(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<8x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_reduce %[[ARG0]] on @m axes = ["tp"] : tensor<8x16xf32>
// CHECK-NEXT: return %[[V1]] : tensor<8x16xf32>
// CHECK-LABEL: func.func private @partial_to_split(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<2x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[ARG0]] on @m axes = ["tp"] scatter_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[V1]] : tensor<2x16xf32>
// CHECK-LABEL: func.func private @split_to_replicated(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x4xf32>
// CHECK-SAME: -> tensor<8x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_gather %[[ARG0]] on @m axes = ["tp"] gather_dim = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[V1]] : tensor<8x16xf32>
// CHECK-LABEL: func.func private @move_axis(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<2x16xf32>
// CHECK-SAME: -> tensor<8x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_to_all %[[ARG0]] on @m axes = ["tp"] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
// CHECK-NEXT: return %[[V1]] : tensor<8x4xf32>
// CHECK-LABEL: func.func private @replicated_to_split(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<2x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.local_slice %[[ARG0]] on @m split = {{\[\[}}"tp"], []] : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[V1]] : tensor<2x16xf32>
// CHECK-LABEL: func.func private @identity(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<2x16xf32>
// CHECK-SAME: -> tensor<2x16xf32>
// CHECK-NEXT: return %[[ARG0]] : tensor<2x16xf32>
// CHECK-LABEL: func.func private @keep_partial(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<8x16xf32>
// CHECK-NEXT: return %[[ARG0]] : tensor<8x16xf32>

// -----


loom.mesh @m = <dp = 2, tp = 2>
// 2x2: partial over tp, split over dp -> replicated
func.func private @partial_and_split(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {}], partial = {tp}>}) -> tensor<8x16xf32> {
  %0 = loom.shard %x to <@m, [{}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: partial over both axes -> split over both on dim 1: one reduce_scatter
func.func private @partial_both_to_split(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {dp, tp}>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {dp, tp}]>}) {
  %0 = loom.shard %x to <@m, [{}, {dp, tp}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: against mesh order: two reduce_scatters, major axis first
func.func private @partial_both_reversed(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {dp, tp}>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp, dp}]>}) {
  %0 = loom.shard %x to <@m, [{}, {tp, dp}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: partial over tp, the target splits dim 0 over dp (not the reduced axis): all_reduce then local_slice
func.func private @partial_other_axis(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {}]>}) {
  %0 = loom.shard %x to <@m, [{dp}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: dims split over both axes -> replicated: one all_gather over [dp, tp]
func.func private @gather_two_axes(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp, tp}, {}]>}) -> tensor<8x16xf32> {
  %0 = loom.shard %x to <@m, [{}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: against mesh order: minor axis first
func.func private @gather_two_axes_reversed(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{tp, dp}, {}]>}) -> tensor<8x16xf32> {
  %0 = loom.shard %x to <@m, [{}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: drop the minor axis only: all_gather over tp
func.func private @drop_minor(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp, tp}, {}]>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {}]>}) {
  %0 = loom.shard %x to <@m, [{dp}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: drop the major axis: gather both, slice tp
func.func private @drop_major(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp, tp}, {}]>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) {
  %0 = loom.shard %x to <@m, [{tp}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: swap the axes of two dims: two all_to_alls
func.func private @swap_dims(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {tp}]>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {dp}]>}) {
  %0 = loom.shard %x to <@m, [{tp}, {dp}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: add a minor axis: local_slice of tp on dim 0
func.func private @add_minor(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {}]>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp, tp}, {}]>}) {
  %0 = loom.shard %x to <@m, [{dp, tp}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// 2x2: add a major axis: gather then slice
func.func private @add_major(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{dp, tp}, {}]>}) {
  %0 = loom.shard %x to <@m, [{dp, tp}, {}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func private @partial_and_split(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x16xf32>
// CHECK-SAME: -> tensor<8x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_reduce %[[ARG0]] on @m axes = ["tp"] : tensor<4x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.all_gather %[[V1]] on @m axes = ["dp"] gather_dim = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[V2]] : tensor<8x16xf32>
// CHECK-LABEL: func.func private @partial_both_to_split(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<8x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[ARG0]] on @m axes = ["dp", "tp"] scatter_dim = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK-NEXT: return %[[V1]] : tensor<8x4xf32>
// CHECK-LABEL: func.func private @partial_both_reversed(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<8x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[ARG0]] on @m axes = ["tp"] scatter_dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[V1]] on @m axes = ["dp"] scatter_dim = 1 : tensor<8x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT: return %[[V2]] : tensor<8x4xf32>
// CHECK-LABEL: func.func private @partial_other_axis(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<4x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_reduce %[[ARG0]] on @m axes = ["tp"] : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}"dp"], []] : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: return %[[V2]] : tensor<4x16xf32>
// CHECK-LABEL: func.func private @gather_two_axes(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<2x16xf32>
// CHECK-SAME: -> tensor<8x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_gather %[[ARG0]] on @m axes = ["dp", "tp"] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[V1]] : tensor<8x16xf32>
// CHECK-LABEL: func.func private @gather_two_axes_reversed(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<2x16xf32>
// CHECK-SAME: -> tensor<8x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_gather %[[ARG0]] on @m axes = ["dp"] gather_dim = 0 : tensor<2x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.all_gather %[[V1]] on @m axes = ["tp"] gather_dim = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[V2]] : tensor<8x16xf32>
// CHECK-LABEL: func.func private @drop_minor(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<2x16xf32>
// CHECK-SAME: -> tensor<4x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_gather %[[ARG0]] on @m axes = ["tp"] gather_dim = 0 : tensor<2x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: return %[[V1]] : tensor<4x16xf32>
// CHECK-LABEL: func.func private @drop_major(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<2x16xf32>
// CHECK-SAME: -> tensor<4x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_gather %[[ARG0]] on @m axes = ["dp", "tp"] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}"tp"], []] : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: return %[[V2]] : tensor<4x16xf32>
// CHECK-LABEL: func.func private @swap_dims(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_gather %[[ARG0]] on @m axes = ["dp"] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.all_to_all %[[V1]] on @m axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<8x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.local_slice %[[V2]] on @m split = {{\[\[}}], ["dp"]] : tensor<4x16xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V3]] : tensor<4x8xf32>
// CHECK-LABEL: func.func private @add_minor(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x16xf32>
// CHECK-SAME: -> tensor<2x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.local_slice %[[ARG0]] on @m split = {{\[\[}}"tp"], []] : tensor<4x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[V1]] : tensor<2x16xf32>
// CHECK-LABEL: func.func private @add_major(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x16xf32>
// CHECK-SAME: -> tensor<2x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_gather %[[ARG0]] on @m axes = ["tp"] gather_dim = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}"dp", "tp"], []] : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[V2]] : tensor<2x16xf32>

// -----


loom.mesh @m = <a = 2, b = 2, c = 2>
// 2x2x2: partial over c, dim 0 over a, dim 1 over b -> dim 0 over b, dim 1 over {a, c}
func.func private @cube(%x: tensor<8x16x4xf32> {loom.sharding = #loom.sharding<@m, [{a}, {b}, {}], partial = {c}>}) -> (tensor<8x16x4xf32> {loom.sharding = #loom.sharding<@m, [{b}, {a, c}, {}]>}) {
  %0 = loom.shard %x to <@m, [{b}, {a, c}, {}]> : tensor<8x16x4xf32>
  return %0 : tensor<8x16x4xf32>
}
// 2x2x2: replicated -> every axis
func.func private @cube_slice(%x: tensor<8x16x4xf32>) -> (tensor<8x16x4xf32> {loom.sharding = #loom.sharding<@m, [{c, a}, {}, {b}]>}) {
  %0 = loom.shard %x to <@m, [{c, a}, {}, {b}]> : tensor<8x16x4xf32>
  return %0 : tensor<8x16x4xf32>
}
// 2x2x2: split over all three -> replicated, partial over nothing
func.func private @cube_gather(%x: tensor<8x16x4xf32> {loom.sharding = #loom.sharding<@m, [{a, b, c}, {}, {}]>}) -> tensor<8x16x4xf32> {
  %0 = loom.shard %x to <@m, [{}, {}, {}]> : tensor<8x16x4xf32>
  return %0 : tensor<8x16x4xf32>
}
// 2x2x2: dynamic leading dimension
func.func private @cube_dynamic(%x: tensor<?x16xf32> {loom.sharding = #loom.sharding<@m, [{a}, {b, c}]>}) -> (tensor<?x16xf32> {loom.sharding = #loom.sharding<@m, [{b, c}, {a}]>}) {
  %0 = loom.shard %x to <@m, [{b, c}, {a}]> : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// CHECK-LABEL: func.func private @cube(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8x4xf32>
// CHECK-SAME: -> tensor<4x4x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_reduce %[[ARG0]] on @m axes = ["c"] : tensor<4x8x4xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.all_gather %[[V1]] on @m axes = ["a"] gather_dim = 0 : tensor<4x8x4xf32> -> tensor<8x8x4xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.all_to_all %[[V2]] on @m axes = ["b"] split_dim = 0 concat_dim = 1 : tensor<8x8x4xf32> -> tensor<4x16x4xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.local_slice %[[V3]] on @m split = {{\[\[}}], ["a", "c"], []] : tensor<4x16x4xf32> -> tensor<4x4x4xf32>
// CHECK-NEXT: return %[[V4]] : tensor<4x4x4xf32>
// CHECK-LABEL: func.func private @cube_slice(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16x4xf32>
// CHECK-SAME: -> tensor<2x16x2xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.local_slice %[[ARG0]] on @m split = {{\[\[}}"c", "a"], [], ["b"]] : tensor<8x16x4xf32> -> tensor<2x16x2xf32>
// CHECK-NEXT: return %[[V1]] : tensor<2x16x2xf32>
// CHECK-LABEL: func.func private @cube_gather(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<1x16x4xf32>
// CHECK-SAME: -> tensor<8x16x4xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_gather %[[ARG0]] on @m axes = ["a", "b", "c"] gather_dim = 0 : tensor<1x16x4xf32> -> tensor<8x16x4xf32>
// CHECK-NEXT: return %[[V1]] : tensor<8x16x4xf32>
// CHECK-LABEL: func.func private @cube_dynamic(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<?x4xf32>
// CHECK-SAME: -> tensor<?x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_gather %[[ARG0]] on @m axes = ["a"] gather_dim = 0 : tensor<?x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.all_gather %[[V1]] on @m axes = ["b", "c"] gather_dim = 1 : tensor<?x4xf32> -> tensor<?x16xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.local_slice %[[V2]] on @m split = {{\[\[}}"b", "c"], ["a"]] : tensor<?x16xf32> -> tensor<?x8xf32>
// CHECK-NEXT: return %[[V3]] : tensor<?x8xf32>

// -----

loom.mesh @m = <dp = 2, tp = 2>
// 2x2: partial over both axes, the target splits dim 1 over tp only: the
// tp sum is scattered and the dp sum runs on the scattered half (the step
// the planner prices: lib/Cost/Reshard.cpp).
func.func private @partial_both_scatter_one(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {dp, tp}>}) -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) {
  %0 = loom.shard %x to <@m, [{}, {tp}]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
// CHECK-LABEL: func.func private @partial_both_scatter_one(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<8x16xf32>
// CHECK-SAME: -> tensor<8x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[ARG0]] on @m axes = ["tp"] scatter_dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.all_reduce %[[V1]] on @m axes = ["dp"] : tensor<8x8xf32>
// CHECK-NEXT: return %[[V2]] : tensor<8x8xf32>
