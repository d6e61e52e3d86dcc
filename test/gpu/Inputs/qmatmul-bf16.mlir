// A qmatmul the GPU kernels do not cover (bf16 activations).
func.func @f(%x: tensor<1x64xbf16>, %w: !loom.qtensor<32x64, #loom.quant<q8_0>>) -> tensor<1x32xbf16> {
  // The error is reported at the op.
  %0 = loom.qmatmul %x, %w : tensor<1x64xbf16>, !loom.qtensor<32x64, #loom.quant<q8_0>> -> tensor<1x32xbf16>
  return %0 : tensor<1x32xbf16>
}
