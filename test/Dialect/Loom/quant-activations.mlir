// RUN: loom-opt %s --verify-roundtrip --split-input-file | FileCheck %s
// RUN: loom-opt %s --split-input-file | loom-opt --split-input-file | FileCheck %s

// quant_activations on loom.qmatmul is a typed enum, #loom.quant_act<...>;
// the string form that IR written before it was typed carries reads as the
// enum of the same name (a dash reads as an underscore), so old IR keeps its
// meaning. The invalid spellings are in quant-activations-invalid.mlir.

// The typed form round-trips.
// CHECK-LABEL: func.func @typed
// CHECK: loom.qmatmul %{{.*}}, %{{.*}} {quant_activations = #loom.quant_act<int8x3>}
func.func @typed(%x: tensor<1x64xf32>, %w: !loom.qtensor<16x64, #loom.quant<q4_0>>) -> tensor<1x16xf32> {
  %0 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<int8x3>} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}

// -----

// Old string spellings, as `loomc --quant-act` wrote them, become the enum;
// other attributes stay as they were.
// CHECK-LABEL: func.func @strings
// CHECK: quant_activations = #loom.quant_act<f32>
// CHECK: quant_activations = #loom.quant_act<int8>
// CHECK: quant_activations = #loom.quant_act<int8_portable>
// CHECK: quant_activations = #loom.quant_act<int8x3>
// CHECK: {note = "kept", quant_activations = #loom.quant_act<int8x3_portable>}
func.func @strings(%x: tensor<1x64xf32>, %w: !loom.qtensor<16x64, #loom.quant<q4_0>>) -> tensor<1x16xf32> {
  %0 = loom.qmatmul %x, %w {quant_activations = "f32"} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  %1 = loom.qmatmul %x, %w {quant_activations = "int8"} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  %2 = loom.qmatmul %x, %w {quant_activations = "int8-portable"} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  %3 = loom.qmatmul %x, %w {quant_activations = "int8x3"} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  %4 = loom.qmatmul %x, %w {note = "kept", quant_activations = "int8x3-portable"} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %4 : tensor<1x16xf32>
}

// -----

// No quant_activations: none is printed (the lowering picks from loom.target).
// CHECK-LABEL: func.func @unmarked
// CHECK: loom.qmatmul %{{.*}}, %{{.*}} : tensor<1x64xf32>
func.func @unmarked(%x: tensor<1x64xf32>, %w: !loom.qtensor<16x64, #loom.quant<q4_0>>) -> tensor<1x16xf32> {
  %0 = loom.qmatmul %x, %w : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}
