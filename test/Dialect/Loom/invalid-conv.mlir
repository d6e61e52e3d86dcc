// RUN: loom-opt %s --split-input-file --verify-diagnostics

// The weight's input channels times groups must be the input's channels.
func.func @channels(%x: tensor<1x4x8x8xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+1 {{weight 8x3x3x3 does not match 4 input channels in 1 group(s)}}
  %0 = loom.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x4x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x6x6xf32>
  return
}

// -----

// Output channels must split evenly into the groups.
func.func @groups(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) {
  // expected-error @+1 {{output channels 6 are not a multiple of groups 4}}
  %0 = loom.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 4 : tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32> -> tensor<1x6x6x6xf32>
  return
}

// -----

// The result's spatial size follows from pads, stride and dilation.
func.func @result(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  // expected-error @+1 {{result has shape 1x8x8x8 but 1x8x4x4 is expected}}
  %0 = loom.conv %x, %w strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x8x8xf32>
  return
}

// -----

// Pads come as all begins, then all ends.
func.func @pads(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  // expected-error @+1 {{pads has 2 entries but 4 are expected}}
  %0 = loom.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1] groups = 1 : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x8x8xf32>
  return
}

// -----

// Only the batch may be dynamic.
func.func @dynamic(%x: tensor<1x4x?x8xf32>, %w: tensor<8x4x3x3xf32>) {
  // expected-error @+1 {{input dimension 2 (channels or spatial) must be static}}
  %0 = loom.conv %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x4x?x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x?x6xf32>
  return
}

// -----

// The bias has one entry per output channel.
func.func @bias(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias has shape 4 but 8 is expected}}
  %0 = loom.conv %x, %w bias(%b : tensor<4xf32>) strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x6x6xf32>
  return
}

// -----

// Strides must be positive.
func.func @stride(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  // expected-error @+1 {{strides must be positive, got 0}}
  %0 = loom.conv %x, %w strides = [0, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x6x6xf32>
  return
}

// -----

// output_padding must be smaller than the stride or the dilation.
func.func @output_padding(%x: tensor<1x8x4x4xf32>, %w: tensor<8x4x3x3xf32>) {
  // expected-error @+1 {{output_padding 2 must be non-negative and smaller than the stride or the dilation}}
  %0 = loom.conv_transpose %x, %w strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] output_padding = [2, 0] groups = 1 : tensor<1x8x4x4xf32>, tensor<8x4x3x3xf32> -> tensor<1x4x11x9xf32>
  return
}

// -----

// conv_transpose's weight is [C, M/groups, K...].
func.func @transpose_weight(%x: tensor<1x8x4x4xf32>, %w: tensor<4x8x3x3xf32>) {
  // expected-error @+1 {{weight 4x8x3x3 does not match 8 input channels in 1 group(s)}}
  %0 = loom.conv_transpose %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] output_padding = [0, 0] groups = 1 : tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32> -> tensor<1x8x6x6xf32>
  return
}

// -----

// A pool window entirely in the padding would have nothing to reduce.
func.func @pool_pads(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{pads of spatial dimension 2 must be smaller than the dilated kernel (2)}}
  %0 = loom.pool max %x kernel = [2, 2] strides = [1, 1] dilations = [1, 1] pads = [2, 0, 0, 0] : tensor<1x4x8x8xf32> -> tensor<1x4x9x7xf32>
  return
}

// -----

// ceil_mode changes the output size: 9 with a 2x2 stride-2 window is 4, or
// 5 with ceil_mode.
func.func @pool_ceil(%x: tensor<1x4x9x9xf32>) {
  // expected-error @+1 {{result has shape 1x4x5x5 but 1x4x4x4 is expected}}
  %0 = loom.pool max %x kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<1x4x9x9xf32> -> tensor<1x4x5x5xf32>
  return
}

// -----

// One kernel size per spatial dimension.
func.func @pool_kernel(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{kernel has 1 entries but the input has 2 spatial dimensions}}
  %0 = loom.pool avg %x kernel = [2] strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<1x4x8x8xf32> -> tensor<1x4x7x7xf32>
  return
}
