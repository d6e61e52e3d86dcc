// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points | FileCheck %s
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --check-prefix=LOWER

// A tied LM head: one quantized weight is the embedding's table and the
// weight of an int8-activation qmatmul. It gets the head's interleaved
// layout (docs/QUANTIZE.md); the embedding gathers each id's bytes through
// that layout (row r: group r / 8, lane r % 8; the rows after the last
// full group as stored) into [ids..., R] bytes, then dequantizes those.
// CHECK-LABEL: func.func @tied
// CHECK-SAME: loom.weight = #loom.weight<name = "token_embd.weight", source = #loom.extern<"w.bin", offset = 0>, interleave = #loom.interleave<rows = 8, block_bytes = 34, fields = 1, field_bytes = 2, unit_bytes = 4>>
// CHECK: loom.embedding
// CHECK: loom.qmatmul
// LOWER-LABEL: func.func @tied
// LOWER: call @loom_rt_index_error
// The rows' bytes as stored: the lane's field, or its value unit, in the
// group's block; the rows past the last full group (16 of 19) as stored.
// LOWER: %[[FULL:.+]] = arith.constant 16 : index
// LOWER: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x?xi64>) outs(%{{.*}} : tensor<1x?x68xi8>)
// LOWER: arith.remui %{{.*}}, %c8
// LOWER: %[[FIELD:.+]] = arith.cmpi ult, %{{.*}}, %c2
// LOWER: arith.select %[[FIELD]]
// LOWER: %[[GROUPED:.+]] = arith.cmpi ult, %{{.*}}, %[[FULL]]
// LOWER: %[[ROW:.+]] = arith.select %[[GROUPED]]
// LOWER: %[[COL:.+]] = arith.select %[[GROUPED]]
// LOWER: tensor.extract %{{.*}}[%[[ROW]], %[[COL]]] : tensor<19x68xi8>
// LOWER: -> tensor<1x?x68xi8>
// Then dequantized (f16 scale times int8 value).
// LOWER: linalg.generic
// LOWER: arith.extf
// LOWER: arith.sitofp
// LOWER: -> tensor<1x?x64xf32>
// LOWER: call @__loom_qmm_q8_0_b32_{{[a-z0-9_]+}}_k64_i8_r8_avx2(
module attributes {loom.target = #loom.cpu_target<cpu = "x86-64-v3", features = ["avx", "avx2", "fma"]>} {
func.func @tied(%ids: tensor<1x?xi64>, %x: tensor<1x64xf32>) -> (tensor<1x?x64xf32>, tensor<1x19xf32>) {
  %t = loom.weight "token_embd.weight" from <"w.bin", offset = 0> : !loom.qtensor<19x64, #loom.quant<q8_0>>
  %e = loom.embedding %t, %ids : !loom.qtensor<19x64, #loom.quant<q8_0>>, tensor<1x?xi64> -> tensor<1x?x64xf32>
  %h = loom.weight "token_embd.weight" from <"w.bin", offset = 0> : !loom.qtensor<19x64, #loom.quant<q8_0>>
  %y = loom.qmatmul %x, %h {quant_activations = #loom.quant_act<int8>} : tensor<1x64xf32>, !loom.qtensor<19x64, #loom.quant<q8_0>> -> tensor<1x19xf32>
  return %e, %y : tensor<1x?x64xf32>, tensor<1x19xf32>
}
}

// -----

// An embedding table with no qmatmul, and a tied head with f32 activations
// (their kernels read the rows as stored): the rows as stored.
// CHECK-LABEL: func.func @untied
// CHECK-NOT: interleave
// CHECK: return
// LOWER-LABEL: func.func @untied
// LOWER-NOT: tensor<1x?x68xi8>
// LOWER: return
module attributes {loom.target = #loom.cpu_target<cpu = "x86-64-v3", features = ["avx", "avx2", "fma"]>} {
func.func @untied(%ids: tensor<1x?xi64>, %x: tensor<1x64xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x16xf32>) {
  %t = loom.weight "table" from <"w.bin", offset = 0> : !loom.qtensor<16x64, #loom.quant<q8_0>>
  %e = loom.embedding %t, %ids : !loom.qtensor<16x64, #loom.quant<q8_0>>, tensor<1x?xi64> -> tensor<1x?x64xf32>
  %u = loom.weight "tied" from <"w.bin", offset = 1088> : !loom.qtensor<16x64, #loom.quant<q8_0>>
  %f = loom.embedding %u, %ids : !loom.qtensor<16x64, #loom.quant<q8_0>>, tensor<1x?xi64> -> tensor<1x?x64xf32>
  %y = loom.qmatmul %x, %u {quant_activations = #loom.quant_act<f32>} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q8_0>> -> tensor<1x16xf32>
  return %e, %f, %y : tensor<1x?x64xf32>, tensor<1x?x64xf32>, tensor<1x16xf32>
}
}

// -----

// A tied head split over the vocabulary on tp (docs/SHARDING.md "Weights
// read by several ops"): the head's weight is the rank's slice (loom.split)
// and the embedding's the whole table, so they are two arguments of one
// name. Only the head's is interleaved; the embedding gathers its rows as
// stored, straight from the mapped file.
// CHECK-LABEL: func.func @vocab_split
// CHECK-SAME: loom.weight = #loom.weight<name = "token_embd.weight", source = #loom.extern<"w.bin", offset = 0>, split = #loom.split<[{tp}, {}], shape = [32, 68]>, interleave = #loom.interleave<rows = 8, block_bytes = 34, fields = 1, field_bytes = 2, unit_bytes = 4>>
// CHECK-SAME: loom.weight = #loom.weight<name = "token_embd.weight", source = #loom.extern<"w.bin", offset = 0>>
// LOWER-LABEL: func.func @vocab_split
// LOWER-NOT: tensor<1x?x68xi8>
// LOWER: call @__loom_qmm_q8_0_b32_{{[a-z0-9_]+}}_k64_i8_r8_avx2(
module attributes {loom.target = #loom.cpu_target<cpu = "x86-64-v3", features = ["avx", "avx2", "fma"]>} {
func.func @vocab_split(%ids: tensor<1x?xi64>, %x: tensor<1x64xf32>) -> (tensor<1x16xf32>, tensor<1x?x64xf32>) {
  %h = loom.weight "token_embd.weight" from <"w.bin", offset = 0> {loom.split = #loom.split<[{tp}, {}], shape = [32, 68]>} : !loom.qtensor<16x64, #loom.quant<q8_0>>
  %y = loom.qmatmul %x, %h {quant_activations = #loom.quant_act<int8>} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q8_0>> -> tensor<1x16xf32>
  %t = loom.weight "token_embd.weight" from <"w.bin", offset = 0> : !loom.qtensor<32x64, #loom.quant<q8_0>>
  %e = loom.embedding %t, %ids : !loom.qtensor<32x64, #loom.quant<q8_0>>, tensor<1x?xi64> -> tensor<1x?x64xf32>
  return %y, %e : tensor<1x16xf32>, tensor<1x?x64xf32>
}
}
