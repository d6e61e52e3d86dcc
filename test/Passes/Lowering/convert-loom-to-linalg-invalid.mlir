// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg --verify-diagnostics

// Loom's own planar int4/int8 formats have no CPU lowering yet (GGUF blocks
// do): the error names the argument and what is supported.
// expected-error @+1 {{only the GGUF block formats (q4_0, q4_1, q8_0) are lowered to CPU code yet}}
func.func @q(%x: tensor<2x64xf32>, %w: !loom.qtensor<8x64, #loom.quant<int4>>) -> tensor<2x8xf32> {
  %0 = loom.qmatmul %x, %w : tensor<2x64xf32>, !loom.qtensor<8x64, #loom.quant<int4>> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A reshape whose dynamic sizes cannot be inferred is rejected clearly.
func.func @r(%x: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{cannot lower this reshape: its dynamic sizes cannot be inferred}}
  %0 = loom.reshape %x : tensor<?x?xf32> -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}
