// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-raise-gelu | FileCheck %s --enable-var-scope

// torch's erf GELU: (x * (erf(x / sqrt 2) + 1)) * 0.5.
// CHECK-LABEL: func.func @gelu_erf
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>)
// CHECK: %[[R:.+]] = loom.gelu %[[X]] : tensor<?x64xf32>
// CHECK-NOT: loom.erf
// CHECK: return %[[R]]
func.func @gelu_erf(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c = loom.constant dense<1.41421354> : tensor<f32>
  %one = loom.constant dense<1.0> : tensor<f32>
  %half = loom.constant dense<0.5> : tensor<f32>
  %0 = loom.div %x, %c : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  %1 = loom.erf %0 : tensor<?x64xf32>
  %2 = loom.add %1, %one : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  %3 = loom.mul %x, %2 : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %4 = loom.mul %3, %half : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  return %4 : tensor<?x64xf32>
}

// -----

// The tanh approximation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: loom.gelu %{{.*}} approximate = tanh : tensor<4x8xf32>
// CHECK-NOT: loom.tanh
func.func @gelu_tanh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %three = loom.constant dense<3.0> : tensor<f32>
  %k = loom.constant dense<0.044715> : tensor<f32>
  %s = loom.constant dense<0.797884583> : tensor<f32>
  %one = loom.constant dense<1.0> : tensor<f32>
  %half = loom.constant dense<0.5> : tensor<f32>
  %0 = loom.pow %x, %three : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = loom.mul %0, %k : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %2 = loom.add %x, %1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = loom.mul %2, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %4 = loom.tanh %3 : tensor<4x8xf32>
  %5 = loom.add %4, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %6 = loom.mul %x, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %7 = loom.mul %6, %5 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %7 : tensor<4x8xf32>
}

// -----

// A different constant (0.4 instead of 0.5) is not GELU.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: loom.gelu
func.func @not_gelu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = loom.constant dense<1.41421354> : tensor<f32>
  %one = loom.constant dense<1.0> : tensor<f32>
  %h = loom.constant dense<0.4> : tensor<f32>
  %0 = loom.div %x, %c : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %1 = loom.erf %0 : tensor<8xf32>
  %2 = loom.add %1, %one : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %3 = loom.mul %x, %2 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %4 = loom.mul %3, %h : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  return %4 : tensor<8xf32>
}
