// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-raise-norms --loom-raise-attention --loom-raise-rotary --loom-raise-gelu --loom-raise-silu --loom-raise-softmax | FileCheck %s

// Every raise pattern checks ranks before it indexes a shape: a scale of a
// 1-D value by a 0-D constant crashed FoldScale (isLastDimVector read the
// last dimension of the rank-0 operand).
// CHECK-LABEL: func.func @scale_vector
// CHECK: loom.mul
func.func @scale_vector(%x: tensor<8xf32>) -> tensor<8xf32> {
  %h = loom.constant dense<5.000000e-01> : tensor<f32>
  %y = loom.mul %x, %h : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @scalar_times_scalar
// CHECK: loom.mul
func.func @scalar_times_scalar(%x: tensor<f32>) -> tensor<f32> {
  %h = loom.constant dense<5.000000e-01> : tensor<f32>
  %y = loom.mul %h, %x : tensor<f32>, tensor<f32> -> tensor<f32>
  %z = loom.add %y, %h : tensor<f32>, tensor<f32> -> tensor<f32>
  return %z : tensor<f32>
}
