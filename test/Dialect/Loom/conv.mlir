// RUN: loom-opt %s --verify-roundtrip | loom-opt | FileCheck %s

// Conv, conv_transpose and pool round-trip (1-D, 2-D with groups and bias,
// 3-D; ceil_mode and count_include_pad as unit attributes).
// CHECK-LABEL: func.func @round_trip
// CHECK: loom.conv %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<8xf32>) strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 2 : tensor<?x4x9x9xf32>, tensor<8x2x3x3xf32> -> tensor<?x8x5x5xf32>
// CHECK: loom.conv %{{.*}}, %{{.*}} strides = [1] dilations = [2] pads = [0, 0] groups = 1 : tensor<1x3x10xf32>, tensor<5x3x3xf32> -> tensor<1x5x6xf32>
// CHECK: loom.conv_transpose %{{.*}}, %{{.*}} strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] output_padding = [1, 1] groups = 1 : tensor<1x8x4x4xf32>, tensor<8x4x3x3xf32> -> tensor<1x4x10x10xf32>
// CHECK: loom.pool max %{{.*}} kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] ceil_mode : tensor<?x4x9x9xf32> -> tensor<?x4x5x5xf32>
// CHECK: loom.pool avg %{{.*}} kernel = [3, 3, 3] strides = [1, 1, 1] dilations = [1, 1, 1] pads = [1, 1, 1, 1, 1, 1] count_include_pad : tensor<1x2x4x4x4xf32> -> tensor<1x2x4x4x4xf32>
func.func @round_trip(%x: tensor<?x4x9x9xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>,
                      %x1: tensor<1x3x10xf32>, %w1: tensor<5x3x3xf32>,
                      %xt: tensor<1x8x4x4xf32>, %wt: tensor<8x4x3x3xf32>,
                      %x3: tensor<1x2x4x4x4xf32>) {
  %0 = loom.conv %x, %w bias(%b : tensor<8xf32>) strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 2 : tensor<?x4x9x9xf32>, tensor<8x2x3x3xf32> -> tensor<?x8x5x5xf32>
  %1 = loom.conv %x1, %w1 strides = [1] dilations = [2] pads = [0, 0] groups = 1 : tensor<1x3x10xf32>, tensor<5x3x3xf32> -> tensor<1x5x6xf32>
  %2 = loom.conv_transpose %xt, %wt strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] output_padding = [1, 1] groups = 1 : tensor<1x8x4x4xf32>, tensor<8x4x3x3xf32> -> tensor<1x4x10x10xf32>
  %3 = loom.pool max %x kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] ceil_mode : tensor<?x4x9x9xf32> -> tensor<?x4x5x5xf32>
  %4 = loom.pool avg %x3 kernel = [3, 3, 3] strides = [1, 1, 1] dilations = [1, 1, 1] pads = [1, 1, 1, 1, 1, 1] count_include_pad : tensor<1x2x4x4x4xf32> -> tensor<1x2x4x4x4xf32>
  return
}
