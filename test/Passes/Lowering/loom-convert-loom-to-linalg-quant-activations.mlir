// Unmarked qmatmuls (`loomc --quant-act auto`, the default) get three int8
// levels of activations where the module's target has integer dot products
// (AVX2, AVX512-VNNI), f32 activations where the kernels would be generic
// vector code (no target, or a target without them); an explicit mark wins.
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @avx2_target
// CHECK: call @__loom_qmm_q4_0_b32_zero_point_f16_k64_i8x3_r8_avx2(
module attributes {loom.target = #loom.cpu_target<cpu = "x86-64-v3", features = ["avx", "avx2", "fma"]>} {
func.func @avx2_target(%x: tensor<1x64xf32>) -> tensor<1x16xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}
}

// -----

// CHECK-LABEL: func.func @vnni_target
// CHECK: call @__loom_qmm_q4_0_b32_zero_point_f16_k64_i8x3_r8(
// CHECK: llvm.x86.avx512.vpdpbusd
module attributes {loom.target = #loom.cpu_target<cpu = "cascadelake", features = ["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni"]>} {
func.func @vnni_target(%x: tensor<1x64xf32>) -> tensor<1x16xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}
}

// -----

// CHECK-LABEL: func.func @generic_target
// CHECK: call @__loom_qmm_q4_0_b32_zero_point_f16_k64(
module attributes {loom.target = #loom.cpu_target<cpu = "x86-64-v2", features = ["sse4.2"]>} {
func.func @generic_target(%x: tensor<1x64xf32>) -> tensor<1x16xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}
}

// -----

// CHECK-LABEL: func.func @no_target
// CHECK: call @__loom_qmm_q4_0_b32_zero_point_f16_k64(
func.func @no_target(%x: tensor<1x64xf32>) -> tensor<1x16xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}

// -----

// CHECK-LABEL: func.func @marked_f32
// CHECK: call @__loom_qmm_q4_0_b32_zero_point_f16_k64(
module attributes {loom.target = #loom.cpu_target<cpu = "x86-64-v3", features = ["avx", "avx2", "fma"]>} {
func.func @marked_f32(%x: tensor<1x64xf32>) -> tensor<1x16xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<f32>} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}
}
