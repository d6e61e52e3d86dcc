// RUN: loom-opt %s --split-input-file --verify-diagnostics

// The body's arguments are the identity-layout memrefs of the operands.
func.func @body_types(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @+1 {{body arguments must be the operands' identity-layout memrefs}}
  %r = loom_cpu.kernel ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%ma: memref<4x8xf32>, %mc: memref<8x4xf32>):
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// One body argument per operand.
func.func @body_count(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @+1 {{needs one body argument per operand}}
  %r = loom_cpu.kernel ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%ma: memref<4x8xf32>):
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
