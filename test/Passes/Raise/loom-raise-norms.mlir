// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-raise-norms | FileCheck %s --enable-var-scope

// torch's LayerNorm at opset 14, then the scale and the bias, folded in.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>, %[[W:.+]]: tensor<64xf32>, %[[B:.+]]: tensor<64xf32>)
// CHECK: %[[R:.+]] = loom.layer_norm %[[X]] scale(%[[W]] : tensor<64xf32>) bias(%[[B]] : tensor<64xf32>) axis = -1 epsilon = 9.99999974E-6
// CHECK-NOT: loom.reduce
// CHECK: return %[[R]]
func.func @layer_norm(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32> {
  %two = loom.constant dense<2.0> : tensor<f32>
  %eps = loom.constant dense<1.0e-5> : tensor<f32>
  %m = loom.reduce mean %x axes = [-1] keep_dims : tensor<?x64xf32> -> tensor<?x1xf32>
  %d = loom.sub %x, %m : tensor<?x64xf32>, tensor<?x1xf32> -> tensor<?x64xf32>
  %p = loom.pow %d, %two : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  %v = loom.reduce mean %p axes = [-1] keep_dims : tensor<?x64xf32> -> tensor<?x1xf32>
  %a = loom.add %v, %eps : tensor<?x1xf32>, tensor<f32> -> tensor<?x1xf32>
  %s = loom.sqrt %a : tensor<?x1xf32>
  %n = loom.div %d, %s : tensor<?x64xf32>, tensor<?x1xf32> -> tensor<?x64xf32>
  %0 = loom.mul %n, %w : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %1 = loom.add %0, %b : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}

// -----

// Llama's RMSNorm: x * (1 / sqrt(mean(x^2) + eps)) * w.
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x64xf32>, %[[W:.+]]: tensor<64xf32>)
// CHECK: %[[R:.+]] = loom.rms_norm %[[X]] scale(%[[W]] : tensor<64xf32>) epsilon = 9.99999997E-7
// CHECK: return %[[R]]
func.func @rms_norm(%x: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> tensor<1x8x64xf32> {
  %two = loom.constant dense<2.0> : tensor<f32>
  %eps = loom.constant dense<1.0e-6> : tensor<f32>
  %p = loom.pow %x, %two : tensor<1x8x64xf32>, tensor<f32> -> tensor<1x8x64xf32>
  %v = loom.reduce mean %p axes = [2] keep_dims : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
  %a = loom.add %v, %eps : tensor<1x8x1xf32>, tensor<f32> -> tensor<1x8x1xf32>
  %s = loom.sqrt %a : tensor<1x8x1xf32>
  %r = loom.reciprocal %s : tensor<1x8x1xf32>
  %n = loom.mul %x, %r : tensor<1x8x64xf32>, tensor<1x8x1xf32> -> tensor<1x8x64xf32>
  %0 = loom.mul %n, %w : tensor<1x8x64xf32>, tensor<64xf32> -> tensor<1x8x64xf32>
  return %0 : tensor<1x8x64xf32>
}

// -----

// A mean over the first axis is not a norm over the last one.
// CHECK-LABEL: func.func @not_norm
// CHECK-NOT: loom.rms_norm
func.func @not_norm(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %eps = loom.constant dense<1.0e-6> : tensor<f32>
  %p = loom.mul %x, %x : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %v = loom.reduce mean %p axes = [0] keep_dims : tensor<4x64xf32> -> tensor<1x64xf32>
  %a = loom.add %v, %eps : tensor<1x64xf32>, tensor<f32> -> tensor<1x64xf32>
  %r = loom.rsqrt %a : tensor<1x64xf32>
  %n = loom.mul %x, %r : tensor<4x64xf32>, tensor<1x64xf32> -> tensor<4x64xf32>
  return %n : tensor<4x64xf32>
}
