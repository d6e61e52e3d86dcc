// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg --verify-diagnostics

// Quantized ops have no CPU lowering yet: the error says so at the op.
func.func @q(%x: tensor<2x64xf32>, %w: !loom.qtensor<8x64, #loom.quant<q4_0>>) -> tensor<2x8xf32> {
  // expected-error @+1 {{quantized ops are not lowered to CPU code yet}}
  %0 = loom.qmatmul %x, %w : tensor<2x64xf32>, !loom.qtensor<8x64, #loom.quant<q4_0>> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A reshape whose dynamic sizes cannot be inferred is rejected clearly.
func.func @r(%x: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{cannot lower this reshape: its dynamic sizes cannot be inferred}}
  %0 = loom.reshape %x : tensor<?x?xf32> -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}
