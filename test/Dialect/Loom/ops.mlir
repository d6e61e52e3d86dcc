// RUN: loom-opt %s --verify-roundtrip | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --verify-roundtrip | loom-opt | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --verify-roundtrip --mlir-print-op-generic | loom-opt | FileCheck %s --enable-var-scope

// Every loom op and attribute prints and parses back to itself.

// CHECK: loom.mesh @mesh = <dp = 2, tp = 4>
loom.mesh @mesh = <dp = 2, tp = 4>
// CHECK: loom.mesh @pp = <pp = 2, "tp-x" = 2>
loom.mesh @pp = <pp = 2, "tp-x" = 2>

// Weights refer to external storage; plain and quantized.
// CHECK-LABEL: func.func @weights
func.func @weights() -> (tensor<64x128xf32>, !loom.qtensor<64x128, #loom.quant<q4_0>>, !loom.qtensor<64x128, #loom.quant<int4, block = 64, mode = min, scale = bf16>>) {
  // CHECK: loom.weight "w0" : tensor<64x128xf32>
  %0 = loom.weight "w0" : tensor<64x128xf32>
  // CHECK: loom.weight "blk.0.attn_q.weight" from <"model.gguf", offset = 736> : !loom.qtensor<64x128, #loom.quant<q4_0>>
  %1 = loom.weight "blk.0.attn_q.weight" from <"model.gguf", offset = 736> : !loom.qtensor<64x128, #loom.quant<q4_0>>
  // CHECK: !loom.qtensor<64x128, #loom.quant<int4, block = 64, mode = min, scale = bf16>>
  %2 = loom.weight "w2" : !loom.qtensor<64x128, #loom.quant<int4, block = 64, mode = min, scale = bf16>>
  return %0, %1, %2 : tensor<64x128xf32>, !loom.qtensor<64x128, #loom.quant<q4_0>>, !loom.qtensor<64x128, #loom.quant<int4, block = 64, mode = min, scale = bf16>>
}

// Every quantization format prints in its shortest form.
// CHECK-LABEL: func.func @quant_formats
// CHECK-SAME: #loom.quant<q4_1>
// CHECK-SAME: #loom.quant<q8_0>
// CHECK-SAME: #loom.quant<int8, block = 128, mode = symmetric, scale = f32>
// CHECK-SAME: #loom.quant<int4, block = 32, mode = zero_point, scale = f16>
func.func @quant_formats(%a: !loom.qtensor<32x64, #loom.quant<q4_1>>, %b: !loom.qtensor<2x32x64, #loom.quant<q8_0>>,
                         %c: !loom.qtensor<?x128, #loom.quant<int8, block = 128, scale = f32>>,
                         %d: !loom.qtensor<32, #loom.quant<int4, mode = zero_point>>) {
  return
}

// CHECK-LABEL: func.func @constant
func.func @constant() -> tensor<4xf32> {
  // CHECK: loom.constant dense<1.000000e+00> : tensor<4xf32>
  %0 = loom.constant dense<1.0> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Binary ops broadcast with numpy rules.
// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<2x4xf32>, %b: tensor<4xf32>, %p: tensor<2x4xi1>, %q: tensor<1x4xi1>) {
  // CHECK: loom.add %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %0 = loom.add %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  // CHECK: loom.sub
  %1 = loom.sub %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  // CHECK: loom.mul
  %2 = loom.mul %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  // CHECK: loom.div
  %3 = loom.div %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  // CHECK: loom.pow
  %4 = loom.pow %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  // CHECK: loom.max
  %5 = loom.max %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  // CHECK: loom.min
  %6 = loom.min %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  // CHECK: loom.and %{{.*}}, %{{.*}} : tensor<2x4xi1>, tensor<1x4xi1> -> tensor<2x4xi1>
  %7 = loom.and %p, %q : tensor<2x4xi1>, tensor<1x4xi1> -> tensor<2x4xi1>
  // CHECK: loom.or
  %8 = loom.or %p, %q : tensor<2x4xi1>, tensor<1x4xi1> -> tensor<2x4xi1>
  // CHECK: loom.compare lt, %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xi1>
  %9 = loom.compare lt, %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xi1>
  // CHECK: loom.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4xi1>, tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %10 = loom.select %9, %a, %b : tensor<2x4xi1>, tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// Dynamic dimensions broadcast against static ones.
// CHECK-LABEL: func.func @binary_dynamic
func.func @binary_dynamic(%a: tensor<?x?x576xf32>, %b: tensor<576xf32>) -> tensor<?x?x576xf32> {
  // CHECK: loom.mul %{{.*}}, %{{.*}} : tensor<?x?x576xf32>, tensor<576xf32> -> tensor<?x?x576xf32>
  %0 = loom.mul %a, %b : tensor<?x?x576xf32>, tensor<576xf32> -> tensor<?x?x576xf32>
  return %0 : tensor<?x?x576xf32>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<2x4xf32>, %i: tensor<4xi32>, %p: tensor<4xi1>) {
  // CHECK: loom.neg %{{.*}} : tensor<4xi32>
  %0 = loom.neg %i : tensor<4xi32>
  // CHECK: loom.abs
  %1 = loom.abs %x : tensor<2x4xf32>
  // CHECK: loom.exp
  %2 = loom.exp %x : tensor<2x4xf32>
  // CHECK: loom.log
  %3 = loom.log %x : tensor<2x4xf32>
  // CHECK: loom.sqrt
  %4 = loom.sqrt %x : tensor<2x4xf32>
  // CHECK: loom.rsqrt
  %5 = loom.rsqrt %x : tensor<2x4xf32>
  // CHECK: loom.reciprocal
  %6 = loom.reciprocal %x : tensor<2x4xf32>
  // CHECK: loom.sin
  %7 = loom.sin %x : tensor<2x4xf32>
  // CHECK: loom.cos
  %8 = loom.cos %x : tensor<2x4xf32>
  // CHECK: loom.tanh
  %9 = loom.tanh %x : tensor<2x4xf32>
  // CHECK: loom.sigmoid
  %10 = loom.sigmoid %x : tensor<2x4xf32>
  // CHECK: loom.silu
  %11 = loom.silu %x : tensor<2x4xf32>
  // CHECK: loom.relu
  %12 = loom.relu %x : tensor<2x4xf32>
  // CHECK: loom.erf
  %13 = loom.erf %x : tensor<2x4xf32>
  // CHECK: loom.not %{{.*}} : tensor<4xi1>
  %14 = loom.not %p : tensor<4xi1>
  // CHECK: loom.gelu %{{.*}} : tensor<2x4xf32>
  %15 = loom.gelu %x : tensor<2x4xf32>
  // CHECK: loom.gelu %{{.*}} approximate = tanh : tensor<2x4xf32>
  %16 = loom.gelu %x approximate = tanh : tensor<2x4xf32>
  // CHECK: loom.cast %{{.*}} : tensor<2x4xf32> -> tensor<2x4xf16>
  %17 = loom.cast %x : tensor<2x4xf32> -> tensor<2x4xf16>
  return
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<?x16x64xf32>, %w: tensor<64x32xf32>, %wt: tensor<32x64xf32>, %a: tensor<4x64x16xf32>) {
  // CHECK: loom.matmul %{{.*}}, %{{.*}} : tensor<?x16x64xf32>, tensor<64x32xf32> -> tensor<?x16x32xf32>
  %0 = loom.matmul %x, %w : tensor<?x16x64xf32>, tensor<64x32xf32> -> tensor<?x16x32xf32>
  // CHECK: loom.matmul %{{.*}}, %{{.*}} transpose_b : tensor<?x16x64xf32>, tensor<32x64xf32> -> tensor<?x16x32xf32>
  %1 = loom.matmul %x, %wt transpose_b : tensor<?x16x64xf32>, tensor<32x64xf32> -> tensor<?x16x32xf32>
  // CHECK: loom.matmul %{{.*}}, %{{.*}} transpose_a : tensor<4x64x16xf32>, tensor<64x32xf32> -> tensor<4x16x32xf32>
  %2 = loom.matmul %a, %w transpose_a : tensor<4x64x16xf32>, tensor<64x32xf32> -> tensor<4x16x32xf32>
  return
}

// CHECK-LABEL: func.func @norms_and_reductions
func.func @norms_and_reductions(%x: tensor<?x576xf32>, %w: tensor<576xf32>, %b: tensor<576xf32>) {
  // CHECK: loom.softmax %{{.*}} axis = -1 : tensor<?x576xf32>
  %0 = loom.softmax %x axis = -1 : tensor<?x576xf32>
  // CHECK: loom.reduce mean %{{.*}} axes = [1] keep_dims : tensor<?x576xf32> -> tensor<?x1xf32>
  %1 = loom.reduce mean %x axes = [1] keep_dims : tensor<?x576xf32> -> tensor<?x1xf32>
  // CHECK: loom.reduce max %{{.*}} axes = [0, 1] : tensor<?x576xf32> -> tensor<f32>
  %2 = loom.reduce max %x axes = [0, 1] : tensor<?x576xf32> -> tensor<f32>
  // CHECK: loom.rms_norm %{{.*}} scale(%{{.*}} : tensor<576xf32>) epsilon = 9.99999974E-6 : tensor<?x576xf32> -> tensor<?x576xf32>
  %3 = loom.rms_norm %x scale(%w : tensor<576xf32>) epsilon = 1.0e-5 : tensor<?x576xf32> -> tensor<?x576xf32>
  // CHECK: loom.rms_norm %{{.*}} epsilon
  %4 = loom.rms_norm %x epsilon = 1.0e-6 : tensor<?x576xf32> -> tensor<?x576xf32>
  // CHECK: loom.layer_norm %{{.*}} scale(%{{.*}} : tensor<576xf32>) bias(%{{.*}} : tensor<576xf32>) axis = -1 epsilon
  %5 = loom.layer_norm %x scale(%w : tensor<576xf32>) bias(%b : tensor<576xf32>) axis = -1 epsilon = 1.0e-12 : tensor<?x576xf32> -> tensor<?x576xf32>
  // CHECK: loom.layer_norm %{{.*}} axis = 1 epsilon
  %6 = loom.layer_norm %x axis = 1 epsilon = 1.0e-5 : tensor<?x576xf32> -> tensor<?x576xf32>
  return
}

// CHECK-LABEL: func.func @transformer_blocks
func.func @transformer_blocks(%pos: tensor<?xi64>, %q: tensor<1x9x?x64xf32>, %k: tensor<1x3x?x64xf32>, %v: tensor<1x3x?x64xf32>,
                              %mask: tensor<1x1x?x?xi1>, %table: tensor<49152x576xf32>, %ids: tensor<1x?xi64>,
                              %q1: tensor<1x9x1x64xf32>, %k1: tensor<1x3x1x64xf32>, %v1: tensor<1x3x1x64xf32>,
                              %ck: tensor<1x3x?x64xf32>, %cv: tensor<1x3x?x64xf32>,
                              %qt: !loom.qtensor<49152x576, #loom.quant<q8_0>>) {
  // CHECK: %[[COS:.+]], %[[SIN:.+]] = loom.rotary_table %{{.*}} theta = 1.000000e+04 dim = 64 : tensor<?xi64> -> tensor<?x32xf32>
  %cos, %sin = loom.rotary_table %pos theta = 1.0e4 dim = 64 : tensor<?xi64> -> tensor<?x32xf32>
  // CHECK: loom.rotary %{{.*}}, %[[COS]], %[[SIN]] style = half : tensor<1x9x?x64xf32>, tensor<?x32xf32> -> tensor<1x9x?x64xf32>
  %0 = loom.rotary %q, %cos, %sin style = half : tensor<1x9x?x64xf32>, tensor<?x32xf32> -> tensor<1x9x?x64xf32>
  // CHECK: loom.rotary {{.*}} style = interleaved
  %1 = loom.rotary %k, %cos, %sin style = interleaved : tensor<1x3x?x64xf32>, tensor<?x32xf32> -> tensor<1x3x?x64xf32>
  // CHECK: loom.attention %{{.*}}, %{{.*}}, %{{.*}} causal : tensor<1x9x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32> -> tensor<1x9x?x64xf32>
  %2 = loom.attention %0, %1, %v causal : tensor<1x9x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32> -> tensor<1x9x?x64xf32>
  // CHECK: loom.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<1x1x?x?xi1>) scale = 1.250000e-01 :
  %3 = loom.attention %q, %k, %v mask(%mask : tensor<1x1x?x?xi1>) scale = 0.125 : tensor<1x9x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32> -> tensor<1x9x?x64xf32>
  // CHECK: loom.attention %{{.*}}, %{{.*}}, %{{.*}} past(%{{.*}}, %{{.*}} : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>) causal : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>
  %4:3 = loom.attention %q1, %k1, %v1 past(%ck, %cv : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>) causal : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>
  // CHECK: loom.embedding %{{.*}}, %{{.*}} : tensor<49152x576xf32>, tensor<1x?xi64> -> tensor<1x?x576xf32>
  %5 = loom.embedding %table, %ids : tensor<49152x576xf32>, tensor<1x?xi64> -> tensor<1x?x576xf32>
  // CHECK: loom.embedding %{{.*}}, %{{.*}} : !loom.qtensor<49152x576, #loom.quant<q8_0>>, tensor<1x?xi64> -> tensor<1x?x576xf32>
  %6 = loom.embedding %qt, %ids : !loom.qtensor<49152x576, #loom.quant<q8_0>>, tensor<1x?xi64> -> tensor<1x?x576xf32>
  return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<8x4xf32>, %i: tensor<3xi64>, %s: tensor<1x?x576xf32>, %a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %r: tensor<1x4xf32>) {
  // CHECK: loom.gather %{{.*}}, %{{.*}} axis = 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  %0 = loom.gather %x, %i axis = 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  // CHECK: loom.reshape %{{.*}} : tensor<1x?x576xf32> -> tensor<1x?x9x64xf32>
  %1 = loom.reshape %s : tensor<1x?x576xf32> -> tensor<1x?x9x64xf32>
  // CHECK: loom.transpose %{{.*}} permutation = [0, 2, 1, 3] : tensor<1x?x9x64xf32> -> tensor<1x9x?x64xf32>
  %2 = loom.transpose %1 permutation = [0, 2, 1, 3] : tensor<1x?x9x64xf32> -> tensor<1x9x?x64xf32>
  // CHECK: loom.concat %{{.*}}, %{{.*}} axis = 1 : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  %3 = loom.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  // CHECK: loom.slice %{{.*}} starts = [0, 1] limits = [8, 4] steps = [2, 1] : tensor<8x4xf32> -> tensor<4x3xf32>
  %4 = loom.slice %x starts = [0, 1] limits = [8, 4] steps = [2, 1] : tensor<8x4xf32> -> tensor<4x3xf32>
  // CHECK: loom.broadcast %{{.*}} : tensor<1x4xf32> -> tensor<8x4xf32>
  %5 = loom.broadcast %r : tensor<1x4xf32> -> tensor<8x4xf32>
  return
}

// CHECK-LABEL: func.func @quantized
func.func @quantized(%x: tensor<?x128xf32>, %w: !loom.qtensor<64x128, #loom.quant<q4_0>>, %f: tensor<64x128xf32>) {
  // CHECK: loom.qmatmul %{{.*}}, %{{.*}} : tensor<?x128xf32>, !loom.qtensor<64x128, #loom.quant<q4_0>> -> tensor<?x64xf32>
  %0 = loom.qmatmul %x, %w : tensor<?x128xf32>, !loom.qtensor<64x128, #loom.quant<q4_0>> -> tensor<?x64xf32>
  // CHECK: loom.quantize %{{.*}} : tensor<64x128xf32> -> !loom.qtensor<64x128, #loom.quant<int4, block = 32, mode = symmetric, scale = f16>>
  %1 = loom.quantize %f : tensor<64x128xf32> -> !loom.qtensor<64x128, #loom.quant<int4>>
  // CHECK: loom.dequantize %{{.*}} : !loom.qtensor<64x128, #loom.quant<q4_0>> -> tensor<64x128xf32>
  %2 = loom.dequantize %w : !loom.qtensor<64x128, #loom.quant<q4_0>> -> tensor<64x128xf32>
  return
}

// Shardings on values, arguments, results, and the stage attribute.
// CHECK-LABEL: func.func @sharding
// CHECK-SAME: loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>
// CHECK-SAME: loom.sharding = #loom.sharding<@mesh, [{dp}, {}], partial = {tp}>
func.func @sharding(%x: tensor<8x64xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>})
    -> (tensor<8x64xf32> {loom.sharding = #loom.sharding<@mesh, [{dp}, {}], partial = {tp}>}) {
  // CHECK: loom.shard %{{.*}} to <@mesh, [{dp, tp}, {}]> : tensor<8x64xf32>
  %0 = loom.shard %x to <@mesh, [{dp, tp}, {}]> : tensor<8x64xf32>
  // CHECK: loom.exp %{{.*}} {loom.sharding = #loom.sharding<@mesh, [{}, {}]>, loom.stage = #loom.stage<1>}
  %1 = loom.exp %0 {loom.sharding = #loom.sharding<@mesh, [{}, {}]>, loom.stage = #loom.stage<1>} : tensor<8x64xf32>
  // CHECK: loom.shard %{{.*}} to <@pp, [{"tp-x"}, {}]>
  %2 = loom.shard %1 to <@pp, [{"tp-x"}, {}]> : tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// Quantized weights shard along K in whole blocks.
// CHECK-LABEL: func.func @sharding_quant
func.func @sharding_quant(%w: !loom.qtensor<64x256, #loom.quant<q4_0>> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}) {
  return
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<8x64xf32>, %y: tensor<64x64xf32>, %z: tensor<8x16xf32>) {
  // CHECK: loom.all_reduce %{{.*}} on @mesh axes = ["tp"] : tensor<8x64xf32>
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<8x64xf32>
  // CHECK: loom.all_reduce %{{.*}} on @mesh axes = ["dp", "tp"] reduction = max : tensor<8x64xf32>
  %1 = loom.all_reduce %x on @mesh axes = ["dp", "tp"] reduction = max : tensor<8x64xf32>
  // CHECK: loom.all_gather %{{.*}} on @mesh axes = ["tp"] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  %2 = loom.all_gather %z on @mesh axes = ["tp"] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  // CHECK: loom.reduce_scatter %{{.*}} on @mesh axes = ["tp"] scatter_dim = 0 : tensor<64x64xf32> -> tensor<16x64xf32>
  %3 = loom.reduce_scatter %y on @mesh axes = ["tp"] scatter_dim = 0 : tensor<64x64xf32> -> tensor<16x64xf32>
  // CHECK: loom.reduce_scatter {{.*}} reduction = min
  %4 = loom.reduce_scatter %y on @mesh axes = ["dp"] scatter_dim = 1 reduction = min : tensor<64x64xf32> -> tensor<64x32xf32>
  // CHECK: loom.all_to_all %{{.*}} on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  %5 = loom.all_to_all %z on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  // CHECK: loom.send %{{.*}} to @pp axes = ["pp"] peer = 1 channel = 0 : tensor<8x16xf32>
  loom.send %z to @pp axes = ["pp"] peer = 1 channel = 0 : tensor<8x16xf32>
  // CHECK: loom.send %{{.*}} to @mesh axes = ["tp"] shift = 1 channel = 2 : tensor<8x16xf32>
  loom.send %z to @mesh axes = ["tp"] shift = 1 channel = 2 : tensor<8x16xf32>
  // CHECK: loom.recv from @pp axes = ["pp"] peer = 0 channel = 0 : tensor<8x16xf32>
  %6 = loom.recv from @pp axes = ["pp"] peer = 0 channel = 0 : tensor<8x16xf32>
  // CHECK: loom.recv from @mesh axes = ["tp"] shift = -1 channel = 2 : tensor<8x16xf32>
  %7 = loom.recv from @mesh axes = ["tp"] shift = -1 channel = 2 : tensor<8x16xf32>
  return
}

// The typed contracts between phases: a weight loaded split (#loom.split,
// from the partitioner), an outlined weight argument (#loom.weight with its
// source, split, interleaved layout and GEMM layout) and the GPU kernel
// family of a qmatmul (loom.gpu_kernel).
// CHECK-LABEL: func.func @phase_contracts
// CHECK-SAME: {loom.weight = #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 16>, split = #loom.split<[{tp}, {}], shape = [8, 4]>, gemm_b = "kn">}
// CHECK-SAME: {loom.weight = #loom.weight<name = "q", interleave = #loom.interleave<rows = 8, block_bytes = 18, fields = 1, field_bytes = 2, unit_bytes = 4>>}
// CHECK: loom.weight "s" from <"w.bin", offset = 0> {loom.split = #loom.split<[{dp, tp}, {}], shape = [16, 4]>} : tensor<2x4xf32>
// CHECK: loom.qmatmul %{{.*}}, %{{.*}} {loom.gpu_kernel = "loom_qmm_q4_0_n16_k64_f32"}
func.func @phase_contracts(%w: tensor<4x4xf32> {loom.weight = #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 16>, split = #loom.split<[{tp}, {}], shape = [8, 4]>, gemm_b = "kn">},
    %q: !loom.qtensor<16x64, #loom.quant<q4_0>> {loom.weight = #loom.weight<name = "q", interleave = #loom.interleave<rows = 8, block_bytes = 18, fields = 1, field_bytes = 2, unit_bytes = 4>>},
    %x: tensor<1x64xf32>) -> (tensor<2x4xf32>, tensor<1x16xf32>) {
  %s = loom.weight "s" from <"w.bin", offset = 0> {loom.split = #loom.split<[{dp, tp}, {}], shape = [16, 4]>} : tensor<2x4xf32>
  %y = loom.qmatmul %x, %q {loom.gpu_kernel = "loom_qmm_q4_0_n16_k64_f32"} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return %s, %y : tensor<2x4xf32>, tensor<1x16xf32>
}
