// RUN: loom-opt %s --split-input-file --verify-diagnostics

// quant_activations values that name no activations kind are refused by
// name, with the typed spelling (never dropped: an untyped value would not
// be stored as the op's property).

// A string that is none of the kinds.
func.func @unknown_string(%x: tensor<1x64xf32>, %w: !loom.qtensor<16x64, #loom.quant<q4_0>>) -> tensor<1x16xf32> {
  // expected-error @+1 {{'loom.qmatmul' attribute 'quant_activations' is "int4": expected #loom.quant_act<f32|int8|int8x3|int8_portable|int8x3_portable>}}
  %0 = loom.qmatmul %x, %w {quant_activations = "int4"} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}

// -----

// A value of another type.
func.func @integer(%x: tensor<1x64xf32>, %w: !loom.qtensor<16x64, #loom.quant<q4_0>>) -> tensor<1x16xf32> {
  // expected-error @+1 {{'loom.qmatmul' attribute 'quant_activations' is 1 : i32: expected #loom.quant_act<}}
  %0 = loom.qmatmul %x, %w {quant_activations = 1 : i32} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}

// -----

// The enum's own parser names its kinds.
func.func @unknown_kind(%x: tensor<1x64xf32>, %w: !loom.qtensor<16x64, #loom.quant<q4_0>>) -> tensor<1x16xf32> {
  // expected-error @+2 {{expected ::loom::QuantActivations to be one of: f32, int8, int8x3, int8_portable, int8x3_portable}}
  // expected-error @+1 {{failed to parse Loom_QuantActivationsAttr parameter 'value'}}
  %0 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<int4>} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}

// -----

// The generic form checks the attribute's type too.
func.func @generic(%x: tensor<1x64xf32>, %w: !loom.qtensor<16x64, #loom.quant<q4_0>>) -> tensor<1x16xf32> {
  // expected-error @+1 {{attribute 'quant_activations' failed to satisfy constraint}}
  %0 = "loom.qmatmul"(%x, %w) {quant_activations = "int8"} : (tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>>) -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}
