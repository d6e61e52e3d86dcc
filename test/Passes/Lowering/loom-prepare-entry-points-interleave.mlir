// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points | FileCheck %s
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points="interleave=false" | FileCheck %s --check-prefix=OFF
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --check-prefixes=KERNEL,VNNI
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points="qmatmul=dequant" | FileCheck %s --check-prefix=DEQ

// The kernels' instructions come from the module's loom.target, never from
// the host: the input pins an AVX512-VNNI CPU; the same input for an AVX2
// CPU, for x86-64-v2 and without a target (both generic code).
// RUN: sed 's/#loom.cpu_target<[^>]*>/#loom.cpu_target<cpu = "x86-64-v3", features = ["avx", "avx2", "fma"]>/' %s | loom-opt --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --check-prefixes=KERNEL,AVX2
// RUN: sed 's/#loom.cpu_target<[^>]*>/#loom.cpu_target<cpu = "x86-64-v2", features = ["sse4.2"]>/' %s | loom-opt --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --check-prefixes=KERNEL,GENERIC
// RUN: sed 's/attributes {loom.target = #loom.cpu_target<[^>]*>}//' %s | loom-opt --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --check-prefixes=KERNEL,GENERIC

// The interleaved layout (docs/QUANTIZE.md) goes to quantized weights whose
// every use is a qmatmul kernel with int8 activations, with at least one
// full group of 8 rows.

// CHECK-LABEL: func.func @decode
// CHECK-SAME: loom.weight = #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 0>, interleave = #loom.interleave<rows = 8, block_bytes = 18, fields = 1, field_bytes = 2, unit_bytes = 4>>
// OFF-LABEL: func.func @decode
// OFF-NOT: interleave
// DEQ-LABEL: func.func @decode
// DEQ-NOT: interleave
// The kernel reads the weight through a 1-D view of its bytes.
// KERNEL-LABEL: func.func @decode
// VNNI: call @__loom_qmm_q4_0_b32_{{[a-z_]+}}_f16_k64_i8_r8(
// AVX2: call @__loom_qmm_q4_0_b32_{{[a-z_]+}}_f16_k64_i8_r8_avx2(
// GENERIC: call @__loom_qmm_q4_0_b32_{{[a-z_]+}}_f16_k64_i8_r8_generic(
// KERNEL: func.func private @__loom_qmm_q4_0_b32_{{[a-z_]+}}_f16_k64_i8_r8
// KERNEL: memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] : memref<?x36xi8> into memref<?xi8>
// VNNI: llvm.x86.avx512.vpdpbusd.256
// AVX2-NOT: llvm.x86.avx512
// AVX2: llvm.x86.avx2.pmadd.ub.sw
// AVX2-NOT: llvm.x86.avx512
// GENERIC-NOT: llvm.x86.
module attributes {loom.target = #loom.cpu_target<cpu = "cascadelake", features = ["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni"]>} {
func.func @decode(%x: tensor<1x3x64xf32>) -> tensor<1x3x19xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<19x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<int8>} : tensor<1x3x64xf32>, !loom.qtensor<19x64, #loom.quant<q4_0>> -> tensor<1x3x19xf32>
  return %0 : tensor<1x3x19xf32>
}
}

// -----

// f32 activations (compute-bound: faster on the rows as stored).
// CHECK-LABEL: func.func @f32_activations
// CHECK-NOT: interleave
// KERNEL-LABEL: func.func @f32_activations
// KERNEL-NOT: _r8
module attributes {loom.target = #loom.cpu_target<cpu = "cascadelake", features = ["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni"]>} {
func.func @f32_activations(%x: tensor<1x64xf32>) -> tensor<1x16xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<f32>} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}
}

// -----

// A batch of 4 rows and a dynamic batch (prefill) too; not a weight with
// fewer than 8 rows.
// CHECK-LABEL: func.func @batches
// CHECK-SAME: loom.weight = #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 0>, interleave = #loom.interleave<rows = 8, block_bytes = 34, fields = 1, field_bytes = 2, unit_bytes = 4>>
// CHECK-SAME: loom.weight = #loom.weight<name = "v", source = #loom.extern<"w.bin", offset = 1088>, interleave = #loom.interleave<{{[^>]*}}>>
// CHECK-SAME: loom.weight = #loom.weight<name = "u", source = #loom.extern<"w.bin", offset = 2176>>
// KERNEL-LABEL: func.func @batches
// KERNEL: call @__loom_qmm_q8_0_b32_{{[a-z]+}}_f16_k64_i8_r8
module attributes {loom.target = #loom.cpu_target<cpu = "cascadelake", features = ["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni"]>} {
func.func @batches(%x: tensor<4x64xf32>, %y: tensor<?x64xf32>, %z: tensor<1x64xf32>) -> (tensor<4x16xf32>, tensor<?x16xf32>, tensor<1x7xf32>) {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q8_0>>
  %v = loom.weight "v" from <"w.bin", offset = 1088> : !loom.qtensor<16x64, #loom.quant<q8_0>>
  %u = loom.weight "u" from <"w.bin", offset = 2176> : !loom.qtensor<7x64, #loom.quant<q8_0>>
  %0 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<int8>} : tensor<4x64xf32>, !loom.qtensor<16x64, #loom.quant<q8_0>> -> tensor<4x16xf32>
  %1 = loom.qmatmul %y, %v {quant_activations = #loom.quant_act<int8>} : tensor<?x64xf32>, !loom.qtensor<16x64, #loom.quant<q8_0>> -> tensor<?x16xf32>
  %2 = loom.qmatmul %z, %u {quant_activations = #loom.quant_act<int8>} : tensor<1x64xf32>, !loom.qtensor<7x64, #loom.quant<q8_0>> -> tensor<1x7xf32>
  return %0, %1, %2 : tensor<4x16xf32>, tensor<?x16xf32>, tensor<1x7xf32>
}
}

// -----

// One decode use and one other use (a dequantize): the rows as stored.
// CHECK-LABEL: func.func @mixed_uses
// CHECK-NOT: interleave
// CHECK: return
module attributes {loom.target = #loom.cpu_target<cpu = "cascadelake", features = ["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni"]>} {
func.func @mixed_uses(%x: tensor<1x64xf32>) -> (tensor<1x16xf32>, tensor<16x64xf32>) {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<int8>} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  %1 = loom.dequantize %w : !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<16x64xf32>
  return %0, %1 : tensor<1x16xf32>, tensor<16x64xf32>
}
}

// -----

// Three int8 activation levels (loomc --quant-act int8x3): the same layout,
// and scratch for three levels of codes and code offsets.
// CHECK-LABEL: func.func @three_levels
// CHECK-SAME: loom.weight = #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 0>, interleave = #loom.interleave<rows = 8, block_bytes = 18,
// KERNEL-LABEL: func.func @three_levels
// VNNI: call @__loom_qmm_q4_0_b32_{{[a-z_]+}}_f16_k64_i8x3_r8({{.*}}) : (memref<?x64xf32>, memref<?x36xi8>, memref<?x?xf32>, memref<?x192xi8>, memref<?x2xf32>, memref<?x6xi32>, memref<?x2xf32>) -> ()
// AVX2: call @__loom_qmm_q4_0_b32_{{[a-z_]+}}_f16_k64_i8x3_r8_avx2({{.*}}) : (memref<?x64xf32>, memref<?x36xi8>, memref<?x?xf32>, memref<?x192xi8>, memref<?x2xf32>, memref<?x6xi32>, memref<?x2xf32>) -> ()
// GENERIC: call @__loom_qmm_q4_0_b32_{{[a-z_]+}}_f16_k64_i8x3_r8_generic({{.*}}) : (memref<?x64xf32>, memref<?x36xi8>, memref<?x?xf32>, memref<?x192xi8>, memref<?x2xf32>, memref<?x6xi32>, memref<?x2xf32>) -> ()
module attributes {loom.target = #loom.cpu_target<cpu = "cascadelake", features = ["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni"]>} {
func.func @three_levels(%x: tensor<2x64xf32>) -> tensor<2x16xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q4_0>>
  %0 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<int8x3>} : tensor<2x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
}
