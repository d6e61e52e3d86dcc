// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-insert-explicit-reshards --loom-partition | FileCheck %s --enable-var-scope

// Output channels split over tp with the weight's rows and the bias:
// each rank computes its half of the channels, gathered at the return.
// CHECK-LABEL: func.func @out_channels
// CHECK: loom.conv %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<4xf32>) {{.*}} : tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<2x4x8x8xf32>
// CHECK: loom.all_gather
loom.mesh @m = <tp = 2>
func.func @out_channels(%x: tensor<2x4x8x8xf32>) -> tensor<2x8x8x8xf32> {
  %w = loom.weight "w" {loom.sharding = #loom.sharding<@m, [{tp}, {}, {}, {}]>} : tensor<8x4x3x3xf32>
  %b = loom.weight "b" {loom.sharding = #loom.sharding<@m, [{tp}]>} : tensor<8xf32>
  %y = loom.conv %x, %w bias(%b : tensor<8xf32>) strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 {loom.sharding = #loom.sharding<@m, [{}, {tp}, {}, {}]>} : tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32> -> tensor<2x8x8x8xf32>
  return %y : tensor<2x8x8x8xf32>
}

// -----

// The batch split over dp: a max pool on each rank's half.
// CHECK-LABEL: func.func @batch
// CHECK: loom.pool max %{{.*}} : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
loom.mesh @m = <dp = 2>
func.func @batch(%x: tensor<4x4x8x8xf32>) -> tensor<4x4x4x4xf32> {
  %s = loom.shard %x to <@m, [{dp}, {}, {}, {}]> : tensor<4x4x8x8xf32>
  %y = loom.pool max %s kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] {loom.sharding = #loom.sharding<@m, [{dp}, {}, {}, {}]>} : tensor<4x4x8x8xf32> -> tensor<4x4x4x4xf32>
  return %y : tensor<4x4x4x4xf32>
}
