// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg --verify-diagnostics

// Loom's int4/int8 blocks with an integer zero point have no CPU lowering
// (symmetric and min do): the error names the argument and what to use.
// expected-error @+1 {{mode zero_point has no CPU kernel (use symmetric or min)}}
func.func @q(%x: tensor<2x64xf32>, %w: !loom.qtensor<8x64, #loom.quant<int4, block = 32, mode = zero_point, scale = f16>>) -> tensor<2x8xf32> {
  %0 = loom.qmatmul %x, %w : tensor<2x64xf32>, !loom.qtensor<8x64, #loom.quant<int4, block = 32, mode = zero_point, scale = f16>> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A reshape whose dynamic sizes cannot be inferred is rejected clearly.
func.func @r(%x: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{cannot lower this reshape: its dynamic sizes cannot be inferred}}
  %0 = loom.reshape %x : tensor<?x?xf32> -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}
