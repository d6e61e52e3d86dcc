// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-insert-explicit-reshards | FileCheck %s --enable-var-scope
// The decide step alone (loom-insert-explicit-reshards): every implicit change of
// sharding becomes a loom.shard, the program stays global.

loom.mesh @m = <dp = 2, tp = 2>
func.func private @layer(%g: tensor<4x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> (tensor<4x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) {
  %y = loom.neg %g {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
func.func @main(%x: tensor<4x16xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {}]>}) -> (tensor<4x16xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {}]>}) {
  %w = loom.weight "w" {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x16xf32>
  %r = loom.weight "r" : tensor<4x16xf32>
  %y = func.call @layer(%w) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %z = func.call @layer(%r) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// CHECK-LABEL: func.func private @layer(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x16xf32> {loom.sharding = #loom.sharding<@m
// CHECK-SAME: -> (tensor<4x16xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>})
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.neg %[[ARG0]] {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.shard %[[V1]] to <@m, [{tp}, {}]> : tensor<4x16xf32>
// CHECK-NEXT: return %[[V2]] : tensor<4x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x16xf32>
// CHECK-SAME: -> (tensor<4x16xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {}]>})
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.shard %[[ARG0]] to <@m, [{dp}, {}]> : tensor<4x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.weight "w" : tensor<4x16xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.shard %[[V2]] to <@m, [{}, {tp}]> : tensor<4x16xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.weight "r" : tensor<4x16xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = call @layer(%[[V3]]) {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.shard %[[V4]] to <@m, [{}, {tp}]> : tensor<4x16xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = call @layer(%[[V6]]) {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = loom.shard %[[V5]] to <@m, [{dp}, {}]> : tensor<4x16xf32>
// CHECK-NEXT: return %[[V8]] : tensor<4x16xf32>

// -----


// No sharding anywhere: unchanged.
loom.mesh @m = <tp = 2>
func.func @plain(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = loom.all_reduce %x on @m axes = ["tp"] : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @plain(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x16xf32>
// CHECK-SAME: -> tensor<4x16xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.all_reduce %[[ARG0]] on @m axes = ["tp"] : tensor<4x16xf32>
// CHECK-NEXT: return %[[V1]] : tensor<4x16xf32>
