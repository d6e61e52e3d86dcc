// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --enable-var-scope

// One group, 2-D: the pads become a tensor.pad of zeros, the bias the
// accumulator, the convolution linalg.conv_2d_nchw_fchw; the dynamic
// batch is read from the input.
// CHECK-LABEL: func.func @conv2d
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %{{.*}} : f32
// CHECK: linalg.generic
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-SAME: -> tensor<?x8x4x4xf32>
func.func @conv2d(%x: tensor<?x3x8x8xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<?x8x4x4xf32> {
  %0 = loom.conv %x, %w bias(%b : tensor<8xf32>) strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<?x3x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<?x8x4x4xf32>
  return %0 : tensor<?x8x4x4xf32>
}

// -----

// 1-D and 3-D convolutions have named ops too.
// CHECK-LABEL: func.func @conv1d3d
// CHECK: linalg.conv_1d_ncw_fcw
// CHECK: linalg.conv_3d_ncdhw_fcdhw
func.func @conv1d3d(%x: tensor<1x2x8xf32>, %w: tensor<4x2x3xf32>, %y: tensor<1x2x4x4x4xf32>, %v: tensor<4x2x2x2x2xf32>) -> (tensor<1x4x6xf32>, tensor<1x4x3x3x3xf32>) {
  %0 = loom.conv %x, %w strides = [1] dilations = [1] pads = [0, 0] groups = 1 : tensor<1x2x8xf32>, tensor<4x2x3xf32> -> tensor<1x4x6xf32>
  %1 = loom.conv %y, %v strides = [1, 1, 1] dilations = [1, 1, 1] pads = [0, 0, 0, 0, 0, 0] groups = 1 : tensor<1x2x4x4x4xf32>, tensor<4x2x2x2x2xf32> -> tensor<1x4x3x3x3xf32>
  return %0, %1 : tensor<1x4x6xf32>, tensor<1x4x3x3x3xf32>
}

// -----

// Groups (here depthwise with a multiplier of 2): one generic over
// [N, G, M/G, O..., C/G, K...] on the input as [N, G, C/G, D...] and the
// weight as [G, M/G, C/G, K...], strides and dilations in the input's map.
// CHECK-DAG: #[[$X:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6 * 2, d4 + d7)>
// CHECK-DAG: #[[$W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-DAG: #[[$O:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @depthwise
// CHECK: tensor.expand_shape {{.*}} into tensor<1x4x1x9x9xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<4x2x1x3x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$X]], #[[$W]], #[[$O]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.collapse_shape
func.func @depthwise(%x: tensor<1x4x9x9xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x3x7xf32> {
  %0 = loom.conv %x, %w strides = [2, 1] dilations = [2, 1] pads = [0, 0, 0, 0] groups = 4 : tensor<1x4x9x9xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x3x7xf32>
  return %0 : tensor<1x8x3x7xf32>
}

// -----

// conv_transpose: the input is spread by the stride into zeros, padded by
// dilation*(K-1) - pad, and convolved with the flipped kernel (2 - k).
// CHECK-DAG: #[[$WT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, -d6 + 2, -d7 + 2)>
// CHECK-LABEL: func.func @conv_transpose
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 2, 2] : tensor<1x8x4x4xf32> into tensor<1x8x7x7xf32>
// CHECK: tensor.pad %{{.*}} low[0, 0, 2, 2] high[0, 0, 3, 3]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$WT]], #{{.*}}, #{{.*}}]
func.func @conv_transpose(%x: tensor<1x8x4x4xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x4x10x10xf32> {
  %0 = loom.conv_transpose %x, %w strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] output_padding = [1, 1] groups = 1 : tensor<1x8x4x4xf32>, tensor<8x4x3x3xf32> -> tensor<1x4x10x10xf32>
  return %0 : tensor<1x4x10x10xf32>
}

// -----

// Max pool: pads of -inf (and one more cell at the end for ceil_mode),
// linalg.pooling_nchw_max from -inf.
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
func.func @max_pool(%x: tensor<?x4x9x9xf32>) -> tensor<?x4x5x5xf32> {
  %0 = loom.pool max %x kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] ceil_mode : tensor<?x4x9x9xf32> -> tensor<?x4x5x5xf32>
  return %0 : tensor<?x4x5x5xf32>
}

// -----

// Average pool without count_include_pad: the window sums divided by the
// window sums of ones padded with zeros (the count of real elements).
// CHECK-LABEL: func.func @avg_pool
// CHECK: linalg.pooling_ncw_sum
// CHECK: arith.constant dense<1.000000e+00> : tensor<1x1x8xf32>
// CHECK: linalg.pooling_ncw_sum
// CHECK: linalg.generic
// CHECK: arith.divf
func.func @avg_pool(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = loom.pool avg %x kernel = [3] strides = [1] dilations = [1] pads = [1, 1] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// With count_include_pad and no ceil cells every window counts K elements:
// a division by a constant. 3-D pools are a generic.
// CHECK-LABEL: func.func @avg_pool_3d
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK: %[[K:.+]] = arith.constant 8.000000e+00 : f32
// CHECK: arith.divf %{{.*}}, %[[K]]
func.func @avg_pool_3d(%x: tensor<1x2x4x4x4xf32>) -> tensor<1x2x3x3x3xf32> {
  %0 = loom.pool avg %x kernel = [2, 2, 2] strides = [1, 1, 1] dilations = [1, 1, 1] pads = [0, 0, 0, 0, 0, 0] count_include_pad : tensor<1x2x4x4x4xf32> -> tensor<1x2x3x3x3xf32>
  return %0 : tensor<1x2x3x3x3xf32>
}
