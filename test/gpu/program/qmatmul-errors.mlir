// What loom-gpu-qmatmuls refuses, by name and place (loomc --target=cuda
// runs it first in the GPU lower phase).
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-prepare-entry-points=interleave=false --loom-gpu-qmatmuls

// bf16 activations: the generated kernels take f32 or f16.
func.func @bf16(%x: tensor<1x64xbf16>) -> tensor<1x96xbf16> {
  %w = loom.weight "w" : !loom.qtensor<96x64, #loom.quant<q4_0>>
  // expected-error @+1 {{--target=cuda: no GPU kernel for this 'loom.qmatmul': bf16 activations are not generated: use f32 or f16}}
  %y = loom.qmatmul %x, %w : tensor<1x64xbf16>, !loom.qtensor<96x64, #loom.quant<q4_0>> -> tensor<1x96xbf16>
  return %y : tensor<1x96xbf16>
}

// -----

// A dynamic K: the kernel is generated for its K (a dynamic batch is a
// run-time M on the tiled kernel: dynamic.mlir).
func.func @dynamic(%x: tensor<2x?xf32>) -> tensor<2x96xf32> {
  %w = loom.weight "w" : !loom.qtensor<96x64, #loom.quant<q4_1>>
  // expected-error @+1 {{--target=cuda: 'loom.qmatmul' needs an input of rank >= 2 with a static last dimension}}
  %y = loom.qmatmul %x, %w : tensor<2x?xf32>, !loom.qtensor<96x64, #loom.quant<q4_1>> -> tensor<2x96xf32>
  return %y : tensor<2x96xf32>
}

// -----

// A quantized weight that another op reads too (here dequantized): on the
// GPU the blocks are read only by the qmatmul kernels (and by the gather of
// an embedding whose table they are: qmatmul-tied.mlir).
func.func @shared(%x: tensor<1x64xf32>) -> (tensor<1x96xf32>, tensor<96x64xf32>) {
  %w = loom.weight "w" : !loom.qtensor<96x64, #loom.quant<q8_0>>
  %y = loom.qmatmul %x, %w : tensor<1x64xf32>, !loom.qtensor<96x64, #loom.quant<q8_0>> -> tensor<1x96xf32>
  // expected-error @+1 {{--target=cuda: this 'loom.dequantize' reads a quantized weight that a 'loom.qmatmul' also reads; on the GPU quantized weights are read only by qmatmuls and embeddings}}
  %d = loom.dequantize %w : !loom.qtensor<96x64, #loom.quant<q8_0>> -> tensor<96x64xf32>
  return %y, %d : tensor<1x96xf32>, tensor<96x64xf32>
}
