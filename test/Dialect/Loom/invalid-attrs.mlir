// RUN: loom-opt %s --split-input-file --verify-diagnostics

// The attributes and types of the loom dialect reject what they should:
// #loom.mesh, #loom.sharding, #loom.quant, #loom.stage, #loom.extern,
// !loom.qtensor, and the discardable loom.sharding / loom.stage attributes
// on ops, function arguments and results.

//===----------------------------------------------------------------------===//
// #loom.mesh
//===----------------------------------------------------------------------===//

// A mesh has at least one axis.
// expected-error @+1 {{mesh needs at least one axis, e.g. <tp = 2>}}
loom.mesh @empty = <>

// -----

// The same rule for the attribute on its own.
// expected-error @+1 {{mesh needs at least one axis}}
#empty = #loom.mesh<>

// -----

// Sizes are at least 1.
// expected-error @+1 {{mesh axis 'tp' has size 0; sizes must be at least 1}}
loom.mesh @zero = <dp = 2, tp = 0>

// -----

// Negative sizes are no better.
// expected-error @+1 {{mesh axis 'dp' has size -2; sizes must be at least 1}}
loom.mesh @negative = <dp = -2>

// -----

// Axis names are unique.
// expected-error @+1 {{mesh axis 'tp' is declared twice; give each axis its own name}}
loom.mesh @twice = <tp = 2, dp = 2, tp = 4>

// -----

// Axis names are non-empty.
// expected-error @+1 {{mesh axis names must be non-empty}}
loom.mesh @unnamed = <"" = 2>

// -----

// At most 16 axes.
// expected-error @+1 {{mesh has 17 axes; at most 16 are supported}}
loom.mesh @wide = <a0 = 1, a1 = 1, a2 = 1, a3 = 1, a4 = 1, a5 = 1, a6 = 1, a7 = 1, a8 = 1, a9 = 1, a10 = 1, a11 = 1, a12 = 1, a13 = 1, a14 = 1, a15 = 1, a16 = 1>

// -----

// The device count fits in 64 bits, so that no group size wraps around.
// expected-error @+1 {{mesh has too many devices: the product of its axis sizes does not fit in 64 bits}}
loom.mesh @huge = <a = 4611686018427387904, b = 4>

// -----

// An axis is `name = size`.
// expected-error @+1 {{expected '='}}
loom.mesh @syntax = <tp 2>

// -----

// An axis size is an integer.
// expected-error @+1 {{expected integer value}}
loom.mesh @syntax = <tp = two>

//===----------------------------------------------------------------------===//
// #loom.sharding (context-free rules)
//===----------------------------------------------------------------------===//

// -----

// An axis splits one dimension at most.
// expected-error @+1 {{mesh axis 'tp' is used twice in the sharding (again in dimension 1)}}
#s = #loom.sharding<@mesh, [{tp}, {tp}]>

// -----

// ... once.
// expected-error @+1 {{mesh axis 'tp' is used twice in the sharding (again in dimension 0)}}
#s = #loom.sharding<@mesh, [{tp, tp}]>

// -----

// An axis either splits a dimension or holds partial sums.
// expected-error @+1 {{mesh axis 'dp' is used twice in the sharding (again in partial); each axis can split one dimension or hold partial sums, not both}}
#s = #loom.sharding<@mesh, [{dp}, {}], partial = {dp}>

// -----

// Axis names are non-empty.
// expected-error @+1 {{sharding axes must be non-empty names}}
#s = #loom.sharding<@mesh, [{""}]>

// -----

// The mesh is a symbol reference.
// expected-error @+1 {{invalid kind of attribute specified}}
#s = #loom.sharding<"mesh", [{}]>

// -----

// The only trailing field is `partial`.
// expected-error @+1 {{expected 'partial'}}
#s = #loom.sharding<@mesh, [{}], replicated = {tp}>

// -----

// Dimensions are brace-delimited axis sets.
// expected-error @+1 {{expected '{'}}
#s = #loom.sharding<@mesh, [tp]>

//===----------------------------------------------------------------------===//
// #loom.stage, #loom.extern
//===----------------------------------------------------------------------===//

// -----

// Pipeline stages are numbered from 0.
// expected-error @+1 {{pipeline stage index must be non-negative, got -1}}
#st = #loom.stage<-1>

// -----

// An external weight names its file.
// expected-error @+1 {{external weight needs a file name}}
#e = #loom.extern<"", offset = 0>

// -----

// ... and a non-negative byte offset in it.
// expected-error @+1 {{external weight offset must be non-negative, got -8}}
#e = #loom.extern<"model.gguf", offset = -8>

// -----

// The same rules apply where loom.weight spells the source inline.
func.func @weight_extern() {
  // expected-error @+1 {{external weight needs a file name}}
  %0 = loom.weight "w" from <"", offset = 0> : tensor<4xf32>
  return
}

// -----

// An inline source has a non-negative offset.
func.func @weight_extern_offset() {
  // expected-error @+1 {{external weight offset must be non-negative, got -1}}
  %0 = loom.weight "w" from <"model.gguf", offset = -1> : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// #loom.quant
//===----------------------------------------------------------------------===//

// -----

// Formats are q4_0, q4_1, q8_0, int4 and int8.
// expected-error @+1 {{unknown quantization format 'q5_k'; expected q4_0, q4_1, q8_0, int4 or int8}}
#q = #loom.quant<q5_k>

// -----

// Modes are symmetric, min and zero_point.
// expected-error @+1 {{unknown quantization mode 'asymmetric'; expected symmetric, min or zero_point}}
#q = #loom.quant<int4, mode = asymmetric>

// -----

// Parameters are block, mode and scale.
// expected-error @+1 {{unknown quantization parameter 'bits'; expected block, mode or scale}}
#q = #loom.quant<int4, bits = 4>

// -----

// Scales are f16, bf16 or f32.
// expected-error @+1 {{quantization scale type must be f16, bf16 or f32}}
#q = #loom.quant<int8, scale = f64>

// -----

// An integer scale is no scale type either.
// expected-error @+1 {{quantization scale type must be f16, bf16 or f32}}
#q = #loom.quant<int8, scale = i16>

// -----

// Loom's own formats take blocks of 32, 64 or 128.
// expected-error @+1 {{quantization block size must be 32, 64 or 128, got 16}}
#q = #loom.quant<int4, block = 16>

// -----

// A zero or negative block is no exception.
// expected-error @+1 {{quantization block size must be 32, 64 or 128, got -32}}
#q = #loom.quant<int8, block = -32>

// -----

// GGUF formats have a fixed block size...
// expected-error @+1 {{GGUF format q4_0 has a fixed layout (block 32, zero_point, f16 scale); write #loom.quant<q4_0>}}
#q = #loom.quant<q4_0, block = 64>

// -----

// ... a fixed mode...
// expected-error @+1 {{GGUF format q4_1 has a fixed layout (block 32, min, f16 scale); write #loom.quant<q4_1>}}
#q = #loom.quant<q4_1, mode = symmetric>

// -----

// ... and an f16 scale.
// expected-error @+1 {{GGUF format q8_0 has a fixed layout (block 32, symmetric, f16 scale); write #loom.quant<q8_0>}}
#q = #loom.quant<q8_0, scale = bf16>

// -----

// Parameters are `key = value`.
// expected-error @+1 {{expected '='}}
#q = #loom.quant<int4, block 64>

//===----------------------------------------------------------------------===//
// !loom.qtensor
//===----------------------------------------------------------------------===//

// -----

// A quantized tensor has rank at least 1.
// expected-error @+1 {{quantized tensor must have rank at least 1}}
func.func private @qtensor_scalar(!loom.qtensor<, #loom.quant<q4_0>>)

// -----

// Blocks run along the innermost dimension, so it is static.
// expected-error @+1 {{the innermost dimension of a quantized tensor must be static (blocks run along it)}}
func.func private @qtensor_dynamic(!loom.qtensor<64x?, #loom.quant<q4_0>>)

// -----

// ... and a multiple of the block size.
// expected-error @+1 {{innermost dimension 96 is not a multiple of the quantization block 64; pad K or choose a block size that divides it}}
func.func private @qtensor_block(!loom.qtensor<64x96, #loom.quant<int4, block = 64>>)

// -----

// The scheme is a #loom.quant.
// expected-error @+1 {{invalid kind of attribute specified}}
func.func private @qtensor_scheme(!loom.qtensor<64x32, #loom.stage<0>>)

// -----

// A scheme error inside a qtensor is reported at the scheme.
// expected-error @+1 {{quantization block size must be 32, 64 or 128, got 48}}
func.func private @qtensor_bad_scheme(!loom.qtensor<64x96, #loom.quant<int4, block = 48>>)

//===----------------------------------------------------------------------===//
// loom.stage on ops
//===----------------------------------------------------------------------===//

// -----

// loom.stage holds a #loom.stage.
func.func @stage_not_stage(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.stage' must be a #loom.stage attribute, e.g. #loom.stage<0>}}
  %0 = loom.exp %x {loom.stage = 1 : i64} : tensor<4xf32>
  return
}

// -----

// Stage indices are non-negative on ops too.
func.func @stage_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{pipeline stage index must be non-negative, got -3}}
  %0 = loom.exp %x {loom.stage = #loom.stage<-3>} : tensor<4xf32>
  return
}

// -----

// The dialect knows two discardable attributes.
func.func @unknown_attr(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown loom attribute 'loom.shard'}}
  %0 = loom.exp %x {loom.shard = #loom.stage<0>} : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.sharding on ops
//===----------------------------------------------------------------------===//

// -----

// loom.sharding holds a #loom.sharding or an array of them.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @sharding_not_sharding(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'loom.sharding' on the op's results must be a #loom.sharding or an array of them}}
  %0 = loom.exp %x {loom.sharding = "tp"} : tensor<8x64xf32>
  return
}

// -----

// An array of shardings holds only #loom.sharding.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @sharding_array_element(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'loom.sharding' on the op's results must hold #loom.sharding attributes}}
  %0 = loom.exp %x {loom.sharding = [#loom.stage<0>]} : tensor<8x64xf32>
  return
}

// -----

// One sharding per result.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @sharding_count(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'loom.sharding' on the op's results has 2 shardings for 1 values; give one per value}}
  %0 = loom.exp %x {loom.sharding = [#loom.sharding<@mesh, [{}, {}]>, #loom.sharding<@mesh, [{}, {}]>]} : tensor<8x64xf32>
  return
}

// -----

// An op without results has nothing to shard.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @sharding_no_results(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'loom.sharding' on the op's results has 1 shardings for 0 values}}
  loom.send %x to @mesh axes = ["tp"] shift = 1 channel = 0 {loom.sharding = #loom.sharding<@mesh, [{}, {}]>} : tensor<8x64xf32>
  return
}

// -----

// A result sharding names a declared mesh.
func.func @sharding_unknown_mesh(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{sharding refers to unknown mesh @mesh; declare it with loom.mesh}}
  %0 = loom.exp %x {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>} : tensor<8x64xf32>
  return
}

// -----

// A result sharding has one entry per result dimension.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @sharding_rank(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{sharding has 3 dimensions but the value has rank 2}}
  %0 = loom.exp %x {loom.sharding = #loom.sharding<@mesh, [{}, {tp}, {}]>} : tensor<8x64xf32>
  return
}

// -----

// A result sharding uses axes of its mesh.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @sharding_unknown_axis(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{unknown mesh axis 'x' in sharding on mesh @mesh (its axes are dp, tp)}}
  %0 = loom.exp %x {loom.sharding = #loom.sharding<@mesh, [{}, {x}]>} : tensor<8x64xf32>
  return
}

// -----

// A result dimension divides over its axes.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @sharding_divisible(%x: tensor<6x64xf32>) {
  // expected-error @+1 {{dimension 0 of size 6 does not divide over 4 devices (axes tp)}}
  %0 = loom.exp %x {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>} : tensor<6x64xf32>
  return
}

// -----

// Shardings annotate ranked tensors.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @sharding_scalar_result(%x: i32) {
  // expected-error @+1 {{a sharding annotates a ranked tensor, not 'i32'}}
  %0 = arith.addi %x, %x {loom.sharding = #loom.sharding<@mesh, []>} : i32
  return
}

// -----

// Each sharding of an array is checked against its own result.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @sharding_array_second(%q: tensor<1x8x1x64xf32>, %c: tensor<1x8x4x64xf32>) {
  // expected-error @+1 {{dimension 2 of size 5 does not divide over 2 devices (axes dp)}}
  %0:3 = loom.attention %q, %q, %q past(%c, %c : tensor<1x8x4x64xf32>, tensor<1x8x4x64xf32>) {loom.sharding = [#loom.sharding<@mesh, [{}, {tp}, {}, {}]>, #loom.sharding<@mesh, [{}, {tp}, {dp}, {}]>, #loom.sharding<@mesh, [{}, {}, {}, {}]>]} : tensor<1x8x1x64xf32>, tensor<1x8x1x64xf32>, tensor<1x8x1x64xf32> -> tensor<1x8x1x64xf32>, tensor<1x8x5x64xf32>, tensor<1x8x5x64xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.sharding on function arguments and results
//===----------------------------------------------------------------------===//

// -----

// An argument sharding has one entry per argument dimension.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{sharding has 1 dimensions but the value has rank 2}}
func.func @arg_rank(%x: tensor<8x64xf32> {loom.sharding = #loom.sharding<@mesh, [{tp}]>}) {
  return
}

// -----

// An argument sharding names a declared mesh.
// expected-error @+1 {{sharding refers to unknown mesh @mesh}}
func.func @arg_unknown_mesh(%x: tensor<8x64xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {}]>}) {
  return
}

// -----

// An argument holds one value, and so one sharding.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{'loom.sharding' on argument 0 has 2 shardings for 1 values}}
func.func @arg_array(%x: tensor<8x64xf32> {loom.sharding = [#loom.sharding<@mesh, [{}, {}]>, #loom.sharding<@mesh, [{}, {}]>]}) {
  return
}

// -----

// loom.sharding on an argument holds a #loom.sharding.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{'loom.sharding' on argument 1 must be a #loom.sharding or an array of them}}
func.func @arg_not_sharding(%x: tensor<8x64xf32>, %y: tensor<8x64xf32> {loom.sharding = 3 : i64}) {
  return
}

// -----

// Scalars are replicated; they take no sharding.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{a sharding annotates a ranked tensor, not 'f32'}}
func.func @arg_scalar(%x: f32 {loom.sharding = #loom.sharding<@mesh, []>}) {
  return
}

// -----

// Only loom.sharding is understood on an argument.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{unknown loom argument attribute 'loom.stage'}}
func.func @arg_stage(%x: tensor<8x64xf32> {loom.stage = #loom.stage<0>}) {
  return
}

// -----

// A declaration's arguments are checked against its signature.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{dimension 1 of size 30 does not divide over 4 devices (axes tp)}}
func.func private @decl_arg(tensor<8x30xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>})

// -----

// A quantized weight splits along K in whole blocks: 64 / 4 = 16 cuts a
loom.mesh @mesh = <dp = 2, tp = 4>
// block of 32.
// expected-error @+1 {{splitting the innermost dimension 64 over 4 devices cuts a quantization block of 32; each shard must hold whole blocks}}
func.func @arg_quant_blocks(%w: !loom.qtensor<64x64, #loom.quant<q4_0>> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}) {
  return
}

// -----

// Quantized rows divide like any other dimension.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{dimension 0 of size 6 does not divide over 4 devices (axes tp)}}
func.func @arg_quant_rows(%w: !loom.qtensor<6x64, #loom.quant<q4_0>> {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>}) {
  return
}

// -----

// Partial axes of an argument are mesh axes.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{unknown mesh axis 'sp' in sharding on mesh @mesh}}
func.func @arg_partial(%x: tensor<8x64xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {}], partial = {sp}>}) {
  return
}

// -----

// A function result sharding has the result rank.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{sharding has 1 dimensions but the value has rank 2}}
func.func @result_rank(%x: tensor<8x64xf32>) -> (tensor<8x64xf32> {loom.sharding = #loom.sharding<@mesh, [{tp}]>}) {
  return %x : tensor<8x64xf32>
}

// -----

// Results of a declaration are checked too.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{'loom.sharding' on result 1 must hold #loom.sharding attributes}}
func.func private @result_decl() -> (tensor<8xf32>, tensor<8xf32> {loom.sharding = ["tp"]})

// -----

// Only loom.sharding is understood on a result.
loom.mesh @mesh = <dp = 2, tp = 4>
// expected-error @+1 {{unknown loom result attribute 'loom.stage'}}
func.func @result_stage(%x: tensor<8x64xf32>) -> (tensor<8x64xf32> {loom.stage = #loom.stage<0>}) {
  return %x : tensor<8x64xf32>
}

// -----

// A mesh from another symbol table is not visible.
loom.mesh @mesh = <dp = 2, tp = 4>
module @inner {
  // expected-error @+1 {{sharding refers to unknown mesh @mesh}}
  func.func @result_inner(%x: tensor<8x64xf32>) -> (tensor<8x64xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {}]>}) {
    return %x : tensor<8x64xf32>
  }
}

//===----------------------------------------------------------------------===//
// loom.entry on functions, loom.weight on entry-point arguments
//===----------------------------------------------------------------------===//

// -----

// loom.entry marks a function; it carries no value.
// expected-error @+1 {{'loom.entry' is a unit attribute of functions}}
func.func @entry_value() attributes {loom.entry = 1 : i64} {
  return
}

// -----

// ... and it marks functions only.
func.func @entry_on_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.entry' is a unit attribute of functions}}
  %0 = loom.exp %x {loom.entry} : tensor<4xf32>
  return
}

// -----

// An outlined weight is described by a #loom.weight (a dictionary, the
// older spelling, is refused too).
// expected-error @+1 {{'loom.weight' on argument 0 must be a #loom.weight<name = "..."[, source = #loom.extern<...>]}}
func.func @weight_arg_not_dict(%w: tensor<4xf32> {loom.weight = "w"}) {
  return
}

// -----

// expected-error @+1 {{'loom.weight' on argument 0 must be a #loom.weight<}}
func.func @weight_arg_dict(%w: tensor<4xf32> {loom.weight = {name = "w"}}) {
  return
}

// -----

// The description names the weight.
// expected-error @+1 {{struct is missing required parameter: name}}
func.func @weight_arg_no_name(%x: tensor<4xf32>, %w: tensor<4xf32> {loom.weight = #loom.weight<source = #loom.extern<"m.gguf", offset = 0>>}) {
  return
}

// -----

// expected-error @+1 {{#loom.weight needs a non-empty name}}
func.func @weight_arg_empty_name(%w: tensor<4xf32> {loom.weight = #loom.weight<name = "">}) {
  return
}

// -----

// Its source, when given, is a #loom.extern.
// expected-error @+2 {{expected '<'}}
// expected-error @+1 {{failed to parse Loom_WeightAttr parameter 'source' which is to be a `::loom::ExternAttr`}}
func.func @weight_arg_bad_source(%w: tensor<4xf32> {loom.weight = #loom.weight<name = "w", source = "m.gguf">}) {
  return
}

// -----

// The layout of a GEMM's right operand is "kn" or "nk".
// expected-error @+1 {{#loom.weight gemm_b is "kn" or "nk", got "kk"}}
func.func @weight_arg_bad_gemm_b(%w: tensor<4x4xf32> {loom.weight = #loom.weight<name = "w", gemm_b = "kk">}) {
  return
}

//===----------------------------------------------------------------------===//
// #loom.cpu_target, loom.target
//===----------------------------------------------------------------------===//

// -----

// Features are names of include/loom/runtime/CpuFeatures.h.
// expected-error @+1 {{#loom.cpu_target: unknown feature 'avx3'; the features are those of include/loom/runtime/CpuFeatures.h}}
func.func private @unknown_feature() attributes {t = #loom.cpu_target<cpu = "znver4", features = ["avx2", "avx3"]>}

// -----

// expected-error @+1 {{#loom.cpu_target: feature 'avx2' given twice}}
func.func private @twice() attributes {t = #loom.cpu_target<cpu = "znver4", features = ["avx2", "avx2"]>}

// -----

// expected-error @+1 {{#loom.cpu_target needs a CPU name}}
func.func private @no_cpu() attributes {t = #loom.cpu_target<cpu = "", features = []>}

// -----

// expected-error @+1 {{#loom.cpu_target features are strings, got 1 : i64}}
func.func private @not_string() attributes {t = #loom.cpu_target<cpu = "znver4", features = [1]>}

// -----

// loom.target is a #loom.cpu_target on the module.
// expected-error @+1 {{'loom.target' is a #loom.cpu_target attribute of the module}}
func.func private @target_on_func() attributes {loom.target = #loom.cpu_target<cpu = "znver4", features = []>}

// -----

// expected-error @+1 {{'loom.target' is a #loom.cpu_target attribute of the module}}
module attributes {loom.target = "znver4"} {
}

// -----

// The interleaved layout recorded on a weight argument is five positive
// sizes (loom-prepare-entry-points writes it, loom-run repacks by it).
// expected-error @+2 {{expected ','}}
// expected-error @+1 {{failed to parse Loom_WeightAttr parameter 'interleave' which is to be a `::loom::InterleaveAttr`}}
func.func @weight_arg_bad_interleave(%w: tensor<4x34xi8> {loom.weight = #loom.weight<name = "w", interleave = #loom.interleave<rows = 8>>}) {
  return
}

// -----

// expected-error @+2 {{#loom.interleave unit_bytes = 0 must be at least 1}}
// expected-error @+1 {{failed to parse Loom_WeightAttr parameter 'interleave'}}
func.func @weight_arg_zero_interleave(%w: tensor<4x34xi8> {loom.weight = #loom.weight<name = "w", interleave = #loom.interleave<rows = 8, block_bytes = 18, fields = 1, field_bytes = 2, unit_bytes = 0>>}) {
  return
}

// -----

// A weight loaded split carries a #loom.split (a dictionary, the older
// spelling, is refused).
func.func @split_not_attr() {
  // expected-error @+1 {{'loom.split' is a #loom.split<[{axes}, ...], shape = [...]> on a loom.weight, one axes list per dimension}}
  %w = loom.weight "w" from <"w.bin", offset = 0> {loom.split = {axes = [[1], []], shape = array<i64: 8, 4>}} : tensor<4x4xf32>
  return
}

// -----

// The axes of a weight loaded split are lists of mesh axis names, one per
// dimension of its global shape.
func.func @split_axes_per_dim() {
  // expected-error @+1 {{#loom.split has 1 axes lists for a global shape of rank 2; give one list of mesh axes per dimension}}
  %w = loom.weight "w" from <"w.bin", offset = 0> {loom.split = #loom.split<[{tp}], shape = [8, 4]>} : tensor<4x4xf32>
  return
}

// -----

func.func @split_axis_twice() {
  // expected-error @+1 {{mesh axis 'tp' splits two dimensions of the #loom.split}}
  %w = loom.weight "w" from <"w.bin", offset = 0> {loom.split = #loom.split<[{tp}, {tp}], shape = [8, 8]>} : tensor<4x4xf32>
  return
}

// -----

func.func @split_zero_size() {
  // expected-error @+1 {{#loom.split global size 0 of dimension 1 must be at least 1}}
  %w = loom.weight "w" from <"w.bin", offset = 0> {loom.split = #loom.split<[{tp}, {}], shape = [8, 0]>} : tensor<4x4xf32>
  return
}

// -----

func.func @split_rank_mismatch() {
  // expected-error @+1 {{'loom.split' has 1 dimensions but the weight has rank 2; give one axes list per dimension of the weight}}
  %w = loom.weight "w" from <"w.bin", offset = 0> {loom.split = #loom.split<[{tp}], shape = [8]>} : tensor<4x4xf32>
  return
}

// -----

// loom.split belongs on a loom.weight.
func.func @split_not_on_weight(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.split' is a #loom.split<[{axes}, ...], shape = [...]> on a loom.weight}}
  %y = loom.relu %x {loom.split = #loom.split<[{tp}], shape = [8]>} : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.gpu_kernel
//===----------------------------------------------------------------------===//

// -----

// The GPU kernel family of a loom.qmatmul is a non-empty string on it.
func.func @gpu_kernel_not_qmatmul(%x: tensor<4xf32>) {
  // expected-error @+1 {{'loom.gpu_kernel' is the base name of a GPU kernel family (a non-empty string) on a loom.qmatmul}}
  %y = loom.relu %x {loom.gpu_kernel = "k"} : tensor<4xf32>
  return
}

// -----

func.func @gpu_kernel_empty(%x: tensor<1x64xf32>, %w: !loom.qtensor<16x64, #loom.quant<q4_0>>) {
  // expected-error @+1 {{'loom.gpu_kernel' is the base name of a GPU kernel family}}
  %y = loom.qmatmul %x, %w {loom.gpu_kernel = ""} : tensor<1x64xf32>, !loom.qtensor<16x64, #loom.quant<q4_0>> -> tensor<1x16xf32>
  return
}
