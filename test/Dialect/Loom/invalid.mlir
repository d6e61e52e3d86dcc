// RUN: loom-opt %s --split-input-file --verify-diagnostics

// Every op verifier of the loom dialect rejects what it should. Mesh,
// collective and sharding rules are in invalid-collectives.mlir; attribute
// and type rules are in invalid-attrs.mlir.

//===----------------------------------------------------------------------===//
// loom.weight, loom.constant
//===----------------------------------------------------------------------===//

// A weight needs a name to be found in external storage.
func.func @weight_empty_name() {
  // expected-error @+1 {{weight needs a non-empty name}}
  %0 = loom.weight "" : tensor<4x4xf32>
  return
}

// -----

// A weight has a static shape: its bytes are laid out in a file.
func.func @weight_dynamic() {
  // expected-error @+1 {{weight 'w' must have a static shape, got ?x4}}
  %0 = loom.weight "w" : tensor<?x4xf32>
  return
}

// -----

// The same holds for a quantized weight.
func.func @weight_dynamic_quant() {
  // expected-error @+1 {{weight 'w' must have a static shape, got ?x32}}
  %0 = loom.weight "w" : !loom.qtensor<?x32, #loom.quant<q8_0>>
  return
}

// -----

// A weight is a ranked or quantized tensor, not a memref.
func.func @weight_memref() {
  // expected-error @+1 {{result #0 must be ranked tensor of any type values or}}
  %0 = loom.weight "w" : memref<4xf32>
  return
}

// -----

// Constants above 64 KiB belong in external storage.
func.func @constant_too_large() {
  // expected-error @+1 {{constant of 65540 bytes is too large to hold inline (limit 65536)}}
  %0 = loom.constant dense<1.0> : tensor<16385xf32>
  return
}

// -----

// A constant whose size overflows 64 bits is still too large, not wrapped
// around to a small size.
func.func @constant_overflow() {
  // expected-error @+1 {{constant of more than 9223372036854775807 bytes is too large}}
  %0 = loom.constant dense<1.0> : tensor<4611686018427387904xf32>
  return
}

// -----

// The value and the result have the same type.
func.func @constant_type_mismatch() {
  // expected-error @+1 {{failed to verify that all of {value, result} have same type}}
  %0 = "loom.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<2xf32>
  return
}

// -----

// Constants are tensors of float, signless integer or i1 elements.
func.func @constant_unsigned() {
  // expected-error @+1 {{result #0 must be ranked tensor of floating-point or signless integer or 1-bit signless integer values}}
  %0 = loom.constant dense<1> : tensor<4xui8>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----

// Binary operands share one element type.
func.func @add_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'; insert a loom.cast}}
  %0 = loom.add %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return
}

// -----

// The result has the operands' element type too.
func.func @sub_result_element_type(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.sub %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf16>
  return
}

// -----

// Sizes that are neither equal nor 1 do not broadcast.
func.func @mul_no_broadcast(%a: tensor<2x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{operand shapes 2x4 and 3 do not broadcast (numpy rules: sizes must match or be 1)}}
  %0 = loom.mul %a, %b : tensor<2x4xf32>, tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

// The result has the broadcast shape.
func.func @div_result_shape(%a: tensor<2x4xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+1 {{result has shape 1x4 but 2x4 is expected (dimension 0: 1 vs 2)}}
  %0 = loom.div %a, %b : tensor<2x4xf32>, tensor<1x4xf32> -> tensor<1x4xf32>
  return
}

// -----

// ... and the broadcast rank.
func.func @max_result_rank(%a: tensor<2x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{result has rank 1 (shape 4) but rank 2 is expected (shape 2x4)}}
  %0 = loom.max %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// A dynamic size against a static one is not a mismatch, but two different
// static sizes are, even behind a dynamic one.
func.func @min_dynamic(%a: tensor<?x4xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{operand shapes ?x4 and 3x5 do not broadcast}}
  %0 = loom.min %a, %b : tensor<?x4xf32>, tensor<3x5xf32> -> tensor<3x4xf32>
  return
}

// -----

// pow is defined on floats only.
func.func @pow_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values}}
  %0 = loom.pow %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return
}

// -----

// and/or are defined on i1 only.
func.func @and_float(%a: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = loom.and %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// or checks the broadcast like the arithmetic ops.
func.func @or_no_broadcast(%a: tensor<4xi1>, %b: tensor<5xi1>) {
  // expected-error @+1 {{operand shapes 4 and 5 do not broadcast}}
  %0 = loom.or %a, %b : tensor<4xi1>, tensor<5xi1> -> tensor<5xi1>
  return
}

// -----

// Compared operands share one element type.
func.func @compare_element_types(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'i32'}}
  %0 = loom.compare eq, %a, %b : tensor<4xf32>, tensor<4xi32> -> tensor<4xi1>
  return
}

// -----

// A comparison yields i1.
func.func @compare_result_float(%a: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = loom.compare eq, %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// A comparison broadcasts its operands.
func.func @compare_result_shape(%a: tensor<2x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{result has rank 1 (shape 4) but rank 2 is expected}}
  %0 = loom.compare ge, %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<4xi1>
  return
}

// -----

// An unknown predicate is a parse error.
func.func @compare_bad_predicate(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]}}
  %0 = loom.compare less, %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  return
}

// -----

// The two choices of a select share one element type.
func.func @select_element_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.select %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return
}

// -----

// The condition of a select is i1.
func.func @select_condition_float(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = loom.select %c, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// The condition takes part in the broadcast.
func.func @select_condition_shape(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{operand shapes 3 and 4 do not broadcast}}
  %0 = loom.select %c, %a, %a : tensor<3xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Transcendental unary ops are defined on floats only.
func.func @exp_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values}}
  %0 = loom.exp %a : tensor<4xi32>
  return
}

// -----

// A unary op keeps its operand's type.
func.func @tanh_result_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "loom.tanh"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// not is defined on i1 only.
func.func @not_float(%a: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = loom.not %a : tensor<4xf32>
  return
}

// -----

// Unary ops take ranked tensors.
func.func @neg_unranked(%a: tensor<*xf32>) {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = loom.neg %a : tensor<*xf32>
  return
}

// -----

// gelu approximations are none and tanh.
func.func @gelu_bad_approximation(%a: tensor<4xf32>) {
  // expected-error @+1 {{enum values for attribute 'approximate' [none, tanh]}}
  %0 = loom.gelu %a approximate = sigmoid : tensor<4xf32>
  return
}

// -----

// A cast changes the element type, never the shape.
func.func @cast_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %0 = loom.cast %a : tensor<4xf32> -> tensor<5xf16>
  return
}

//===----------------------------------------------------------------------===//
// loom.matmul
//===----------------------------------------------------------------------===//

// -----

// matmul operands and result share one element type.
func.func @matmul_element_types(%a: tensor<4x8xf32>, %b: tensor<8x2xf16>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xf16> -> tensor<4x2xf32>
  return
}

// -----

// Vectors are reshaped to matrices first.
func.func @matmul_vector(%a: tensor<8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{operands must have rank >= 2, got 1 and 2; reshape vectors to matrices}}
  %0 = loom.matmul %a, %b : tensor<8xf32>, tensor<8x2xf32> -> tensor<2xf32>
  return
}

// -----

// The contraction sizes agree.
func.func @matmul_k(%a: tensor<4x8xf32>, %b: tensor<6x2xf32>) {
  // expected-error @+1 {{contraction sizes differ: lhs has K = 8 but rhs has K = 6}}
  %0 = loom.matmul %a, %b : tensor<4x8xf32>, tensor<6x2xf32> -> tensor<4x2xf32>
  return
}

// -----

// transpose_a contracts the lhs's second to last dimension.
func.func @matmul_transpose_a_k(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{contraction sizes differ: lhs has K = 4 but rhs has K = 8}}
  %0 = loom.matmul %a, %b transpose_a : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
  return
}

// -----

// transpose_b contracts the rhs's last dimension.
func.func @matmul_transpose_b_k(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{contraction sizes differ: lhs has K = 8 but rhs has K = 2}}
  %0 = loom.matmul %a, %b transpose_b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x8xf32>
  return
}

// -----

// Batch dimensions broadcast with numpy rules.
func.func @matmul_batch(%a: tensor<3x4x8xf32>, %b: tensor<2x8x2xf32>) {
  // expected-error @+1 {{batch dimensions 3 and 2 do not broadcast}}
  %0 = loom.matmul %a, %b : tensor<3x4x8xf32>, tensor<2x8x2xf32> -> tensor<3x4x2xf32>
  return
}

// -----

// The result is [batch..., M, N].
func.func @matmul_result(%a: tensor<?x4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{result has shape ?x4x8 but ?x4x2 is expected (dimension 2: 8 vs 2)}}
  %0 = loom.matmul %a, %b : tensor<?x4x8xf32>, tensor<8x2xf32> -> tensor<?x4x8xf32>
  return
}

// -----

// matmul is defined on floats only.
func.func @matmul_int(%a: tensor<4x8xi32>, %b: tensor<8x2xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values}}
  %0 = loom.matmul %a, %b : tensor<4x8xi32>, tensor<8x2xi32> -> tensor<4x2xi32>
  return
}

//===----------------------------------------------------------------------===//
// loom.softmax, loom.reduce
//===----------------------------------------------------------------------===//

// -----

// The softmax axis lies in [-rank, rank).
func.func @softmax_axis(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (valid: -2 to 1)}}
  %0 = loom.softmax %a axis = 2 : tensor<2x8xf32>
  return
}

// -----

// A negative axis counts from the end, down to -rank.
func.func @softmax_negative_axis(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2 (valid: -2 to 1)}}
  %0 = loom.softmax %a axis = -3 : tensor<2x8xf32>
  return
}

// -----

// A rank-0 tensor has no axis to normalise over.
func.func @softmax_scalar(%a: tensor<f32>) {
  // expected-error @+1 {{axis 0 is out of range for rank 0}}
  %0 = loom.softmax %a axis = 0 : tensor<f32>
  return
}

// -----

// A huge axis is out of range, not wrapped around.
func.func @softmax_huge_axis(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{axis -9223372036854775808 is out of range for rank 2}}
  %0 = loom.softmax %a axis = -9223372036854775808 : tensor<2x8xf32>
  return
}

// -----

// A reduction keeps the element type.
func.func @reduce_element_types(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.reduce sum %a axes = [1] : tensor<2x8xf32> -> tensor<2xf16>
  return
}

// -----

// A mean of integers has no exact result.
func.func @reduce_mean_int(%a: tensor<2x8xi32>) {
  // expected-error @+1 {{mean needs a float tensor}}
  %0 = loom.reduce mean %a axes = [1] : tensor<2x8xi32> -> tensor<2xi32>
  return
}

// -----

// Reduction axes lie in [-rank, rank).
func.func @reduce_axis_range(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{reduction axis 2 is out of range for rank 2}}
  %0 = loom.reduce max %a axes = [2] : tensor<2x8xf32> -> tensor<2xf32>
  return
}

// -----

// An axis may be named once, in either spelling.
func.func @reduce_axis_repeated(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{reduction axis -1 is repeated}}
  %0 = loom.reduce min %a axes = [1, -1] : tensor<2x8xf32> -> tensor<2xf32>
  return
}

// -----

// Without keep_dims the reduced axes disappear.
func.func @reduce_keep_dims(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{result has rank 2 (shape 2x1) but rank 1 is expected (shape 2)}}
  %0 = loom.reduce prod %a axes = [1] : tensor<2x8xf32> -> tensor<2x1xf32>
  return
}

// -----

// With keep_dims they become 1.
func.func @reduce_keep_dims_size(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{result has shape 2x8 but 2x1 is expected (dimension 1: 8 vs 1)}}
  %0 = loom.reduce sum %a axes = [1] keep_dims : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.rms_norm, loom.layer_norm
//===----------------------------------------------------------------------===//

// -----

// rms_norm normalises over the innermost dimension, so it needs one.
func.func @rms_norm_scalar(%a: tensor<f32>) {
  // expected-error @+1 {{input must have rank >= 1}}
  %0 = loom.rms_norm %a epsilon = 1.0e-5 : tensor<f32> -> tensor<f32>
  return
}

// -----

// epsilon is added to a variance, so it is non-negative.
func.func @rms_norm_epsilon(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{epsilon must be non-negative}}
  %0 = loom.rms_norm %a epsilon = -1.0e-5 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// A NaN epsilon is not non-negative either.
func.func @rms_norm_epsilon_nan(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{epsilon must be non-negative}}
  %0 = loom.rms_norm %a epsilon = 0x7FC00000 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// The scale has the innermost dimension's shape.
func.func @rms_norm_scale(%a: tensor<2x8xf32>, %w: tensor<2xf32>) {
  // expected-error @+1 {{scale has shape 2 but 8 is expected (dimension 0: 2 vs 8)}}
  %0 = loom.rms_norm %a scale(%w : tensor<2xf32>) epsilon = 1.0e-5 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// The scale is a vector, not the input shape.
func.func @rms_norm_scale_rank(%a: tensor<2x8xf32>, %w: tensor<2x8xf32>) {
  // expected-error @+1 {{scale has rank 2 (shape 2x8) but rank 1 is expected (shape 8)}}
  %0 = loom.rms_norm %a scale(%w : tensor<2x8xf32>) epsilon = 1.0e-5 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// rms_norm keeps the input shape.
func.func @rms_norm_result(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{result has shape 8x2 but 2x8 is expected}}
  %0 = loom.rms_norm %a epsilon = 1.0e-5 : tensor<2x8xf32> -> tensor<8x2xf32>
  return
}

// -----

// The first normalised axis lies in [-rank, rank).
func.func @layer_norm_axis(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %0 = loom.layer_norm %a axis = -3 epsilon = 1.0e-5 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// layer_norm epsilon is non-negative too.
func.func @layer_norm_epsilon(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{epsilon must be non-negative}}
  %0 = loom.layer_norm %a axis = -1 epsilon = -1.0 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// The scale has the shape of the normalised dimensions, axis.. on.
func.func @layer_norm_scale(%a: tensor<2x4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{scale has rank 1 (shape 8) but rank 2 is expected (shape 4x8)}}
  %0 = loom.layer_norm %a scale(%w : tensor<8xf32>) axis = 1 epsilon = 1.0e-5 : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return
}

// -----

// The bias has the shape of the normalised dimensions.
func.func @layer_norm_bias(%a: tensor<2x8xf32>, %w: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias has shape 4 but 8 is expected}}
  %0 = loom.layer_norm %a scale(%w : tensor<8xf32>) bias(%b : tensor<4xf32>) axis = -1 epsilon = 1.0e-5 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// layer_norm keeps the input shape.
func.func @layer_norm_result(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{result has rank 1 (shape 16) but rank 2 is expected (shape 2x8)}}
  %0 = loom.layer_norm %a axis = -1 epsilon = 1.0e-5 : tensor<2x8xf32> -> tensor<16xf32>
  return
}

// -----

// The operand segments add up to the operands.
func.func @layer_norm_segments(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{operand count (1) does not match with the total size (2) specified in attribute 'operandSegmentSizes'}}
  %0 = "loom.layer_norm"(%a) <{axis = -1 : i64, epsilon = 1.0e-5 : f32, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// An optional operand takes 0 or 1 values.
func.func @layer_norm_segment_size(%a: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{operand group starting at #1 requires 0 or 1 element, but found 2}}
  %0 = "loom.layer_norm"(%a, %w, %w) <{axis = -1 : i64, epsilon = 1.0e-5 : f32, operandSegmentSizes = array<i32: 1, 2, 0>}> : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.rotary_table, loom.rotary
//===----------------------------------------------------------------------===//

// -----

// The rotary dim pairs features, so it is even.
func.func @rotary_table_odd(%p: tensor<?xi64>) {
  // expected-error @+1 {{rotary dim must be positive and even, got 63}}
  %cos, %sin = loom.rotary_table %p theta = 1.0e4 dim = 63 : tensor<?xi64> -> tensor<?x31xf32>
  return
}

// -----

// ... and positive.
func.func @rotary_table_zero(%p: tensor<?xi64>) {
  // expected-error @+1 {{rotary dim must be positive and even, got 0}}
  %cos, %sin = loom.rotary_table %p theta = 1.0e4 dim = 0 : tensor<?xi64> -> tensor<?x0xf32>
  return
}

// -----

// cos and sin are one type.
func.func @rotary_table_types(%p: tensor<?xi64>) {
  // expected-error @+1 {{failed to verify that all of {cos, sin} have same type}}
  %cos, %sin = "loom.rotary_table"(%p) <{dim = 64 : i64, theta = 1.0e4 : f32}> : (tensor<?xi64>) -> (tensor<?x32xf32>, tensor<?x32xf16>)
  return
}

// -----

// The tables are positions x dim/2.
func.func @rotary_table_shape(%p: tensor<?xi64>) {
  // expected-error @+1 {{cos has shape ?x64 but ?x32 is expected (dimension 1: 64 vs 32)}}
  %cos, %sin = loom.rotary_table %p theta = 1.0e4 dim = 64 : tensor<?xi64> -> tensor<?x64xf32>
  return
}

// -----

// Positions are i32 or i64.
func.func @rotary_table_float_positions(%p: tensor<?xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %cos, %sin = loom.rotary_table %p theta = 1.0e4 dim = 64 : tensor<?xf32> -> tensor<?x32xf32>
  return
}

// -----

// The rotated input is [batch, heads, seq, head_dim].
func.func @rotary_rank(%q: tensor<9x?x64xf32>, %c: tensor<?x32xf32>) {
  // expected-error @+1 {{input must be [batch, heads, seq, head_dim], got rank 3}}
  %0 = loom.rotary %q, %c, %c style = half : tensor<9x?x64xf32>, tensor<?x32xf32> -> tensor<9x?x64xf32>
  return
}

// -----

// cos and sin of a rotary are one type.
func.func @rotary_types(%q: tensor<1x9x?x64xf32>, %c: tensor<?x32xf32>, %s: tensor<?x16xf32>) {
  // expected-error @+1 {{failed to verify that all of {cos, sin} have same type}}
  %0 = "loom.rotary"(%q, %c, %s) <{style = 0 : i32}> : (tensor<1x9x?x64xf32>, tensor<?x32xf32>, tensor<?x16xf32>) -> tensor<1x9x?x64xf32>
  return
}

// -----

// The tables are [seq, R] or [batch, seq, R].
func.func @rotary_table_rank(%q: tensor<1x9x?x64xf32>, %c: tensor<32xf32>) {
  // expected-error @+1 {{cos/sin must be [seq, R] or [batch, seq, R], got rank 1}}
  %0 = loom.rotary %q, %c, %c style = half : tensor<1x9x?x64xf32>, tensor<32xf32> -> tensor<1x9x?x64xf32>
  return
}

// -----

// Features rotate in pairs, so head_dim is even.
func.func @rotary_odd_head_dim(%q: tensor<1x9x?x63xf32>, %c: tensor<?x31xf32>) {
  // expected-error @+1 {{head_dim 63 must be even}}
  %0 = loom.rotary %q, %c, %c style = interleaved : tensor<1x9x?x63xf32>, tensor<?x31xf32> -> tensor<1x9x?x63xf32>
  return
}

// -----

// At most head_dim features are rotated.
func.func @rotary_too_wide(%q: tensor<1x9x?x64xf32>, %c: tensor<?x33xf32>) {
  // expected-error @+1 {{cos/sin cover 2 x 33 features but head_dim is only 64}}
  %0 = loom.rotary %q, %c, %c style = half : tensor<1x9x?x64xf32>, tensor<?x33xf32> -> tensor<1x9x?x64xf32>
  return
}

// -----

// A huge R does not overflow into an accepted width.
func.func @rotary_huge(%q: tensor<1x9x4x64xf32>, %c: tensor<4x4611686018427387904xf32>) {
  // expected-error @+1 {{cos/sin cover 2 x 4611686018427387904 features but head_dim is only 64}}
  %0 = loom.rotary %q, %c, %c style = half : tensor<1x9x4x64xf32>, tensor<4x4611686018427387904xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// The tables cover the input sequence.
func.func @rotary_seq(%q: tensor<1x9x8x64xf32>, %c: tensor<4x32xf32>) {
  // expected-error @+1 {{cos/sin have 4 positions but the input has sequence length 8}}
  %0 = loom.rotary %q, %c, %c style = half : tensor<1x9x8x64xf32>, tensor<4x32xf32> -> tensor<1x9x8x64xf32>
  return
}

// -----

// Batched tables match the input's batch, or have batch 1.
func.func @rotary_batch(%q: tensor<2x9x8x64xf32>, %c: tensor<3x8x32xf32>) {
  // expected-error @+1 {{cos/sin batch 3 does not match the input batch 2}}
  %0 = loom.rotary %q, %c, %c style = half : tensor<2x9x8x64xf32>, tensor<3x8x32xf32> -> tensor<2x9x8x64xf32>
  return
}

// -----

// The tables have the input element type.
func.func @rotary_element_types(%q: tensor<1x9x8x64xf32>, %c: tensor<8x32xf16>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.rotary %q, %c, %c style = half : tensor<1x9x8x64xf32>, tensor<8x32xf16> -> tensor<1x9x8x64xf32>
  return
}

// -----

// rotary keeps the input shape.
func.func @rotary_result(%q: tensor<1x9x8x64xf32>, %c: tensor<8x32xf32>) {
  // expected-error @+1 {{result has shape 1x9x8x32 but 1x9x8x64 is expected}}
  %0 = loom.rotary %q, %c, %c style = half : tensor<1x9x8x64xf32>, tensor<8x32xf32> -> tensor<1x9x8x32xf32>
  return
}

// -----

// Rotary styles are half and interleaved.
func.func @rotary_bad_style(%q: tensor<1x9x8x64xf32>, %c: tensor<8x32xf32>) {
  // expected-error @+1 {{enum values for attribute 'style' [half, interleaved]}}
  %0 = loom.rotary %q, %c, %c style = neox : tensor<1x9x8x64xf32>, tensor<8x32xf32> -> tensor<1x9x8x64xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.attention
//===----------------------------------------------------------------------===//

// -----

// query, key and value are [batch, heads, seq, head_dim].
func.func @attention_rank(%q: tensor<9x4x64xf32>, %k: tensor<1x3x4x64xf32>) {
  // expected-error @+1 {{query, key and value must be rank 4}}
  %0 = loom.attention %q, %k, %k : tensor<9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32> -> tensor<9x4x64xf32>
  return
}

// -----

// query, key, value and output share one element type.
func.func @attention_element_types(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf16>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.attention %q, %k, %k : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf16>, tensor<1x3x4x64xf16> -> tensor<1x9x4x64xf32>
  return
}

// -----

// query, key and value share the batch.
func.func @attention_batch(%q: tensor<1x9x4x64xf32>, %k: tensor<2x3x4x64xf32>) {
  // expected-error @+1 {{query, key and value batch sizes differ}}
  %0 = loom.attention %q, %k, %k : tensor<1x9x4x64xf32>, tensor<2x3x4x64xf32>, tensor<2x3x4x64xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// Scores contract query and key over one head_dim.
func.func @attention_head_dim(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x32xf32>) {
  // expected-error @+1 {{query head_dim 64 differs from key's 32}}
  %0 = loom.attention %q, %k, %k : tensor<1x9x4x64xf32>, tensor<1x3x4x32xf32>, tensor<1x3x4x32xf32> -> tensor<1x9x4x32xf32>
  return
}

// -----

// key and value have the same heads and length.
func.func @attention_kv(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>, %v: tensor<1x3x5x64xf32>) {
  // expected-error @+1 {{key and value must have the same heads and length}}
  %0 = loom.attention %q, %k, %v : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x5x64xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// Grouped-query attention needs Hq = G * Hkv.
func.func @attention_gqa(%q: tensor<1x8x4x64xf32>, %k: tensor<1x3x4x64xf32>) {
  // expected-error @+1 {{query heads (8) must be a multiple of KV heads (3) for grouped-query attention}}
  %0 = loom.attention %q, %k, %k : tensor<1x8x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32> -> tensor<1x8x4x64xf32>
  return
}

// -----

// Zero KV heads are rejected rather than divided by.
func.func @attention_zero_kv_heads(%q: tensor<1x8x4x64xf32>, %k: tensor<1x0x4x64xf32>) {
  // expected-error @+1 {{query heads (8) must be a multiple of KV heads (0)}}
  %0 = loom.attention %q, %k, %k : tensor<1x8x4x64xf32>, tensor<1x0x4x64xf32>, tensor<1x0x4x64xf32> -> tensor<1x8x4x64xf32>
  return
}

// -----

// A cache is a pair; the generic form can give only one half.
func.func @attention_past_pair(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<1x3x?x64xf32>) {
  // expected-error @+1 {{past_key and past_value go together}}
  %0:2 = "loom.attention"(%q, %k, %k, %c) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0, 0>}> : (tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x?x64xf32>) -> (tensor<1x9x1x64xf32>, tensor<1x3x?x64xf32>)
  return
}

// -----

// The KV cache is rank 4 like the key.
func.func @attention_past_rank(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<3x?x64xf32>) {
  // expected-error @+1 {{past_key/past_value must be rank 4}}
  %0:3 = loom.attention %q, %k, %k past(%c, %c : tensor<3x?x64xf32>, tensor<3x?x64xf32>) : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>
  return
}

// -----

// The cache has the key's batch, heads and head_dim.
func.func @attention_past_key(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<1x9x?x64xf32>) {
  // expected-error @+1 {{past_key has shape 1x9x?x64 but 1x3x?x64 is expected (dimension 1: 9 vs 3)}}
  %0:3 = loom.attention %q, %k, %k past(%c, %c : tensor<1x9x?x64xf32>, tensor<1x9x?x64xf32>) : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>
  return
}

// -----

// past_value has the value's head_dim.
func.func @attention_past_value(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %v: tensor<1x3x1x32xf32>, %ck: tensor<1x3x?x64xf32>) {
  // expected-error @+1 {{past_value has shape 1x3x?x64 but 1x3x?x32 is expected}}
  %0:3 = loom.attention %q, %k, %v past(%ck, %ck : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>) : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x32xf32> -> tensor<1x9x1x32xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>
  return
}

// -----

// With a cache the op returns the grown cache as well.
func.func @attention_past_results(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<1x3x?x64xf32>) {
  // expected-error @+1 {{with a KV cache the op returns output, present_key and present_value}}
  %0 = loom.attention %q, %k, %k past(%c, %c : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>) : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>
  return
}

// -----

// The present cache holds P + T positions.
func.func @attention_present_key(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<1x3x7x64xf32>) {
  // expected-error @+1 {{present_key has shape 1x3x7x64 but 1x3x8x64 is expected (dimension 2: 7 vs 8)}}
  %0:3 = loom.attention %q, %k, %k past(%c, %c : tensor<1x3x7x64xf32>, tensor<1x3x7x64xf32>) : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x3x7x64xf32>, tensor<1x3x8x64xf32>
  return
}

// -----

// present_value has the value head_dim.
func.func @attention_present_value(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<1x3x7x64xf32>) {
  // expected-error @+1 {{present_value has shape 1x3x8x32 but 1x3x8x64 is expected}}
  %0:3 = loom.attention %q, %k, %k past(%c, %c : tensor<1x3x7x64xf32>, tensor<1x3x7x64xf32>) : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x3x8x64xf32>, tensor<1x3x8x32xf32>
  return
}

// -----

// P + T fits in 64 bits.
func.func @attention_present_overflow(%q: tensor<1x1x1x4xf32>, %k: tensor<1x1x9223372036854775807x4xf32>) {
  // expected-error @+1 {{present sequence size 9223372036854775807 + 9223372036854775807 does not fit in 64 bits}}
  %0:3 = loom.attention %q, %k, %k past(%k, %k : tensor<1x1x9223372036854775807x4xf32>, tensor<1x1x9223372036854775807x4xf32>) : tensor<1x1x1x4xf32>, tensor<1x1x9223372036854775807x4xf32>, tensor<1x1x9223372036854775807x4xf32> -> tensor<1x1x1x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>
  return
}

// -----

// Without a cache there is no present cache to return.
func.func @attention_present_without_past(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>) {
  // expected-error @+1 {{present_key/present_value need past_key and past_value}}
  %0:3 = loom.attention %q, %k, %k : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32> -> tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32>
  return
}

// -----

// A mask is additive (float) or keeps positions (i1).
func.func @attention_mask_int(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>, %m: tensor<4x4xi32>) {
  // expected-error @+1 {{mask must be float (additive) or i1 (keep)}}
  %0 = loom.attention %q, %k, %k mask(%m : tensor<4x4xi32>) : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// A mask has rank 4 at most.
func.func @attention_mask_rank(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>, %m: tensor<1x1x1x4x4xi1>) {
  // expected-error @+1 {{mask of shape 1x1x1x4x4 does not broadcast to [batch, heads, seq, kv_len] = 1x9x4x4}}
  %0 = loom.attention %q, %k, %k mask(%m : tensor<1x1x1x4x4xi1>) : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// A mask broadcasts to [batch, heads, seq, kv_len].
func.func @attention_mask_shape(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>, %m: tensor<4x5xi1>) {
  // expected-error @+1 {{mask of shape 4x5 does not broadcast to [batch, heads, seq, kv_len] = 1x9x4x4}}
  %0 = loom.attention %q, %k, %k mask(%m : tensor<4x5xi1>) : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// A mask broadcasts to the scores, never beyond them: a mask batch of 3
// does not fit a batch of 1.
func.func @attention_mask_larger(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>, %m: tensor<3x1x4x4xi1>) {
  // expected-error @+1 {{mask of shape 3x1x4x4 does not broadcast to [batch, heads, seq, kv_len] = 1x9x4x4}}
  %0 = loom.attention %q, %k, %k mask(%m : tensor<3x1x4x4xi1>) : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// With a cache the mask covers P + T key positions.
func.func @attention_mask_past(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<1x3x7x64xf32>, %m: tensor<1x7xf32>) {
  // expected-error @+1 {{mask of shape 1x7 does not broadcast to [batch, heads, seq, kv_len] = 1x9x1x8}}
  %0:3 = loom.attention %q, %k, %k mask(%m : tensor<1x7xf32>) past(%c, %c : tensor<1x3x7x64xf32>, tensor<1x3x7x64xf32>) : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x3x8x64xf32>, tensor<1x3x8x64xf32>
  return
}

// -----

// A zero scale would flatten the scores.
func.func @attention_scale(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>) {
  // expected-error @+1 {{scale must be positive}}
  %0 = loom.attention %q, %k, %k scale = 0.0 : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// A NaN scale is not positive either.
func.func @attention_scale_nan(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>) {
  // expected-error @+1 {{scale must be positive}}
  %0 = loom.attention %q, %k, %k scale = 0x7FC00000 : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// The output is [B, Hq, S, Dv].
func.func @attention_output(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>, %v: tensor<1x3x4x32xf32>) {
  // expected-error @+1 {{output has shape 1x9x4x64 but 1x9x4x32 is expected (dimension 3: 64 vs 32)}}
  %0 = loom.attention %q, %k, %v : tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x32xf32> -> tensor<1x9x4x64xf32>
  return
}

// -----

// At most one mask.
func.func @attention_segments(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>, %m: tensor<4x4xi1>) {
  // expected-error @+1 {{operand group starting at #3 requires 0 or 1 element, but found 2}}
  %0 = "loom.attention"(%q, %k, %k, %m, %m) <{operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0, 0, 0, 0>}> : (tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32>, tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<1x9x4x64xf32>
  return
}

// -----

// The segments are required.
func.func @attention_no_segments(%q: tensor<1x9x4x64xf32>, %k: tensor<1x3x4x64xf32>) {
  // expected-error @+1 {{operand count (3) does not match with the total size (0) specified in attribute 'operandSegmentSizes'}}
  %0 = "loom.attention"(%q, %k, %k) : (tensor<1x9x4x64xf32>, tensor<1x3x4x64xf32>, tensor<1x3x4x64xf32>) -> tensor<1x9x4x64xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.embedding
//===----------------------------------------------------------------------===//

// -----

// An embedding table is [vocab, dim].
func.func @embedding_table_rank(%t: tensor<2x8x4xf32>, %i: tensor<?xi64>) {
  // expected-error @+1 {{table must be [vocab, dim], got rank 3}}
  %0 = loom.embedding %t, %i : tensor<2x8x4xf32>, tensor<?xi64> -> tensor<?x4xf32>
  return
}

// -----

// The result is ids.shape + [dim].
func.func @embedding_result(%t: tensor<8x4xf32>, %i: tensor<1x?xi64>) {
  // expected-error @+1 {{result has rank 2 (shape ?x4) but rank 3 is expected (shape 1x?x4)}}
  %0 = loom.embedding %t, %i : tensor<8x4xf32>, tensor<1x?xi64> -> tensor<?x4xf32>
  return
}

// -----

// A quantized table gives rows of its K dimension.
func.func @embedding_quant_result(%t: !loom.qtensor<8x32, #loom.quant<q8_0>>, %i: tensor<3xi32>) {
  // expected-error @+1 {{result has shape 3x8 but 3x32 is expected}}
  %0 = loom.embedding %t, %i : !loom.qtensor<8x32, #loom.quant<q8_0>>, tensor<3xi32> -> tensor<3x8xf32>
  return
}

// -----

// Token ids are i32 or i64.
func.func @embedding_float_ids(%t: tensor<8x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = loom.embedding %t, %i : tensor<8x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.gather, loom.reshape, loom.transpose
//===----------------------------------------------------------------------===//

// -----

// The gather axis lies in [-rank, rank).
func.func @gather_axis(%x: tensor<8x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = loom.gather %x, %i axis = 2 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return
}

// -----

// A gather keeps the input element type.
func.func @gather_element_types(%x: tensor<8x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{element types differ: 'f32' and 'i64'}}
  %0 = loom.gather %x, %i axis = 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xi64>
  return
}

// -----

// The result is input[:axis] + indices + input[axis+1:].
func.func @gather_result(%x: tensor<8x4xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{result has rank 2 (shape 3x4) but rank 3 is expected (shape 8x2x3)}}
  %0 = loom.gather %x, %i axis = -1 : tensor<8x4xf32>, tensor<2x3xi64> -> tensor<3x4xf32>
  return
}

// -----

// Gather indices are i32 or i64.
func.func @gather_i16_indices(%x: tensor<8x4xf32>, %i: tensor<3xi16>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = loom.gather %x, %i axis = 0 : tensor<8x4xf32>, tensor<3xi16> -> tensor<3x4xf32>
  return
}

// -----

// A reshape keeps the element type.
func.func @reshape_element_types(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.reshape %x : tensor<8x4xf32> -> tensor<32xf16>
  return
}

// -----

// A reshape keeps the element count.
func.func @reshape_count(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{reshape from 8x4 (32 elements) to 4x4 (16 elements) changes the element count}}
  %0 = loom.reshape %x : tensor<8x4xf32> -> tensor<4x4xf32>
  return
}

// -----

// A rank-0 tensor holds one element.
func.func @reshape_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{reshape from scalar (1 elements) to 2 (2 elements)}}
  %0 = loom.reshape %x : tensor<f32> -> tensor<2xf32>
  return
}

// -----

// An element count beyond 64 bits is not wrapped around.
func.func @reshape_overflow(%x: tensor<9223372036854775807x2xf32>) {
  // expected-error @+1 {{reshape from 9223372036854775807x2 (at least 2^63 elements) to 2 (2 elements) changes the element count}}
  %0 = loom.reshape %x : tensor<9223372036854775807x2xf32> -> tensor<2xf32>
  return
}

// -----

// A permutation has one entry per dimension.
func.func @transpose_size(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{permutation has 2 entries for rank 3}}
  %0 = loom.transpose %x permutation = [1, 0] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return
}

// -----

// A permutation names each dimension once.
func.func @transpose_repeated(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{permutation must hold each of 0..2 exactly once}}
  %0 = loom.transpose %x permutation = [1, 1, 0] : tensor<2x3x4xf32> -> tensor<3x3x2xf32>
  return
}

// -----

// A permutation names dimensions in [0, rank).
func.func @transpose_range(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{permutation must hold each of 0..2 exactly once}}
  %0 = loom.transpose %x permutation = [0, -1, 3] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return
}

// -----

// A transpose keeps the element type.
func.func @transpose_element_types(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'bf16'}}
  %0 = loom.transpose %x permutation = [1, 0] : tensor<2x3xf32> -> tensor<3x2xbf16>
  return
}

// -----

// result.shape[i] = input.shape[permutation[i]].
func.func @transpose_result(%x: tensor<2x?x4xf32>) {
  // expected-error @+1 {{result has shape 2x?x4 but 4x?x2 is expected (dimension 0: 2 vs 4)}}
  %0 = loom.transpose %x permutation = [2, 1, 0] : tensor<2x?x4xf32> -> tensor<2x?x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.concat, loom.slice, loom.broadcast
//===----------------------------------------------------------------------===//

// -----

// The generic form can omit every input.
func.func @concat_empty() {
  // expected-error @+1 {{needs at least one input}}
  %0 = "loom.concat"() <{axis = 0 : i64}> : () -> tensor<2xf32>
  return
}

// -----

// The concatenation axis lies in [-rank, rank).
func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = loom.concat %a, %a axis = 2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  return
}

// -----

// Concatenated inputs share one element type.
func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'i32'}}
  %0 = loom.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x3xi32> -> tensor<2x6xf32>
  return
}

// -----

// Concatenated inputs share one rank.
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<6xf32>) {
  // expected-error @+1 {{input 1 has rank 1, expected 2}}
  %0 = loom.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<6xf32> -> tensor<4x3xf32>
  return
}

// -----

// Inputs agree outside the concatenation axis.
func.func @concat_size(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<4x3xf32>) {
  // expected-error @+1 {{input 2 has size 4 in dimension 0 but input 0 has 2}}
  %0 = loom.concat %a, %b, %c axis = 1 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x9xf32>
  return
}

// -----

// The result size along the axis is the sum of the inputs.
func.func @concat_result(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) {
  // expected-error @+1 {{result has shape 2x7 but 2x8 is expected (dimension 1: 7 vs 8)}}
  %0 = loom.concat %a, %b axis = -1 : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x7xf32>
  return
}

// -----

// The concatenated size fits in 64 bits.
func.func @concat_overflow(%a: tensor<9223372036854775807xf32>) {
  // expected-error @+1 {{concatenated size 9223372036854775807 + 9223372036854775807 does not fit in 64 bits}}
  %0 = loom.concat %a, %a axis = 0 : tensor<9223372036854775807xf32>, tensor<9223372036854775807xf32> -> tensor<?xf32>
  return
}

// -----

// starts, limits and steps have one entry per dimension.
func.func @slice_entries(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{starts, limits and steps need one entry per dimension (2)}}
  %0 = loom.slice %x starts = [0] limits = [8, 4] steps = [1, 1] : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

// Steps are positive.
func.func @slice_step(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{step of dimension 1 must be positive, got 0}}
  %0 = loom.slice %x starts = [0, 0] limits = [8, 4] steps = [1, 0] : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

// Starts are non-negative.
func.func @slice_negative_start(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{dimension 0 has bounds [-1, 8); need 0 <= start <= limit}}
  %0 = loom.slice %x starts = [-1, 0] limits = [8, 4] steps = [1, 1] : tensor<8x4xf32> -> tensor<9x4xf32>
  return
}

// -----

// A limit is not below its start.
func.func @slice_reversed(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{dimension 1 has bounds [3, 2); need 0 <= start <= limit}}
  %0 = loom.slice %x starts = [0, 3] limits = [8, 2] steps = [1, 1] : tensor<8x4xf32> -> tensor<8x0xf32>
  return
}

// -----

// A static dimension bounds the limit.
func.func @slice_limit(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{limit 9 of dimension 0 is past its size 8}}
  %0 = loom.slice %x starts = [0, 0] limits = [9, 4] steps = [1, 1] : tensor<8x4xf32> -> tensor<9x4xf32>
  return
}

// -----

// A slice keeps the element type.
func.func @slice_element_types(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f64'}}
  %0 = loom.slice %x starts = [0, 0] limits = [8, 4] steps = [1, 1] : tensor<8x4xf32> -> tensor<8x4xf64>
  return
}

// -----

// The result has ceil((limit - start) / step) elements per dimension.
func.func @slice_result(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{result has shape 4x3 but 3x3 is expected (dimension 0: 4 vs 3)}}
  %0 = loom.slice %x starts = [1, 1] limits = [8, 4] steps = [3, 1] : tensor<8x4xf32> -> tensor<4x3xf32>
  return
}

// -----

// A huge step takes one element; the size does not overflow to 0.
func.func @slice_huge_step(%x: tensor<8xf32>) {
  // expected-error @+1 {{result has shape 0 but 1 is expected}}
  %0 = loom.slice %x starts = [0] limits = [4] steps = [9223372036854775807] : tensor<8xf32> -> tensor<0xf32>
  return
}

// -----

// A broadcast keeps the element type.
func.func @broadcast_element_types(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.broadcast %x : tensor<1x4xf32> -> tensor<8x4xf16>
  return
}

// -----

// A broadcast never drops dimensions.
func.func @broadcast_rank(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{cannot broadcast rank 2 to the smaller rank 1}}
  %0 = loom.broadcast %x : tensor<2x4xf32> -> tensor<4xf32>
  return
}

// -----

// Only sizes of 1 broadcast.
func.func @broadcast_shape(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{shape 3x4 does not broadcast to 8x4}}
  %0 = loom.broadcast %x : tensor<3x4xf32> -> tensor<8x4xf32>
  return
}

// -----

// Broadcasting never shrinks a dimension.
func.func @broadcast_shrink(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{result has shape 1x4 but 8x4 is expected (dimension 0: 1 vs 8)}}
  %0 = loom.broadcast %x : tensor<8x4xf32> -> tensor<1x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.qmatmul, loom.quantize, loom.dequantize
//===----------------------------------------------------------------------===//

// -----

// A quantized weight is a matrix [N, K].
func.func @qmatmul_weight_rank(%x: tensor<?x32xf32>, %w: !loom.qtensor<2x64x32, #loom.quant<q4_0>>) {
  // expected-error @+1 {{quantized weight must be [N, K], got rank 3}}
  %0 = loom.qmatmul %x, %w : tensor<?x32xf32>, !loom.qtensor<2x64x32, #loom.quant<q4_0>> -> tensor<?x64xf32>
  return
}

// -----

// The input has a K dimension.
func.func @qmatmul_scalar_input(%x: tensor<f32>, %w: !loom.qtensor<64x32, #loom.quant<q4_0>>) {
  // expected-error @+1 {{input must have rank >= 1}}
  %0 = loom.qmatmul %x, %w : tensor<f32>, !loom.qtensor<64x32, #loom.quant<q4_0>> -> tensor<64xf32>
  return
}

// -----

// The weight is [N, K], as nn.Linear stores it: K is its second dimension.
func.func @qmatmul_k(%x: tensor<?x64xf32>, %w: !loom.qtensor<64x32, #loom.quant<q4_0>>) {
  // expected-error @+1 {{input has K = 64 but the weight [N, K] has K = 32}}
  %0 = loom.qmatmul %x, %w : tensor<?x64xf32>, !loom.qtensor<64x32, #loom.quant<q4_0>> -> tensor<?x64xf32>
  return
}

// -----

// The result has the input element type.
func.func @qmatmul_element_types(%x: tensor<?x32xf32>, %w: !loom.qtensor<64x32, #loom.quant<q4_0>>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.qmatmul %x, %w : tensor<?x32xf32>, !loom.qtensor<64x32, #loom.quant<q4_0>> -> tensor<?x64xf16>
  return
}

// -----

// The result is input.shape[:-1] + [N].
func.func @qmatmul_result(%x: tensor<?x32xf32>, %w: !loom.qtensor<64x32, #loom.quant<q4_0>>) {
  // expected-error @+1 {{result has shape ?x32 but ?x64 is expected (dimension 1: 32 vs 64)}}
  %0 = loom.qmatmul %x, %w : tensor<?x32xf32>, !loom.qtensor<64x32, #loom.quant<q4_0>> -> tensor<?x32xf32>
  return
}

// -----

// The weight of a qmatmul is quantized; a plain one goes to loom.matmul.
func.func @qmatmul_plain_weight(%x: tensor<?x32xf32>, %w: tensor<64x32xf32>) {
  // expected-error @+1 {{operand #1 must be a block-quantized tensor, but got 'tensor<64x32xf32>'}}
  %0 = loom.qmatmul %x, %w : tensor<?x32xf32>, tensor<64x32xf32> -> tensor<?x64xf32>
  return
}

// -----

// Quantization keeps the shape.
func.func @quantize_shape(%x: tensor<64x128xf32>) {
  // expected-error @+1 {{result has shape 64x64 but 64x128 is expected}}
  %0 = loom.quantize %x : tensor<64x128xf32> -> !loom.qtensor<64x64, #loom.quant<int8>>
  return
}

// -----

// Only floats are quantized.
func.func @quantize_int(%x: tensor<64x128xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values}}
  %0 = loom.quantize %x : tensor<64x128xi32> -> !loom.qtensor<64x128, #loom.quant<int8>>
  return
}

// -----

// Dequantization keeps the shape.
func.func @dequantize_shape(%w: !loom.qtensor<64x128, #loom.quant<q8_0>>) {
  // expected-error @+1 {{result has rank 1 (shape 8192) but rank 2 is expected (shape 64x128)}}
  %0 = loom.dequantize %w : !loom.qtensor<64x128, #loom.quant<q8_0>> -> tensor<8192xf32>
  return
}

// -----

// Dequantization yields floats.
func.func @dequantize_int(%w: !loom.qtensor<64x128, #loom.quant<q8_0>>) {
  // expected-error @+1 {{result #0 must be ranked tensor of floating-point values}}
  %0 = loom.dequantize %w : !loom.qtensor<64x128, #loom.quant<q8_0>> -> tensor<64x128xi8>
  return
}

// -----

// The cache form: caches [B, Hkv, C, D] like the keys' heads.
func.func @attention_cache_heads(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<1x9x?x64xf32>, %p: tensor<1xi64>) {
  // expected-error @+1 {{cache_key has shape 1x9x?x64 but 1x3x?x64 is expected (dimension 1: 9 vs 3)}}
  %0:3 = loom.attention %q, %k, %k cache(%c, %c at %p : tensor<1x9x?x64xf32>, tensor<1x9x?x64xf32>, tensor<1xi64>) causal : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x9x?x64xf32>, tensor<1x9x?x64xf32>
  return
}

// -----

// The positions give one per new key row.
func.func @attention_cache_positions(%q: tensor<1x9x2x64xf32>, %k: tensor<1x3x2x64xf32>, %c: tensor<1x3x?x64xf32>, %p: tensor<3xi64>) {
  // expected-error @+1 {{cache_positions must be [seq] with the key's length 2, got shape 3}}
  %0:3 = loom.attention %q, %k, %k cache(%c, %c at %p : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>, tensor<3xi64>) causal : tensor<1x9x2x64xf32>, tensor<1x3x2x64xf32>, tensor<1x3x2x64xf32> -> tensor<1x9x2x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>
  return
}

// -----

// The updated caches have the caches' types.
func.func @attention_cache_results(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<1x3x?x64xf32>, %p: tensor<1xi64>) {
  // expected-error @+1 {{with cache_key/cache_value the op returns output and the updated caches, of the caches' types}}
  %0 = loom.attention %q, %k, %k cache(%c, %c at %p : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1xi64>) causal : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>
  return
}

// -----

// The cache form is causal.
func.func @attention_cache_causal(%q: tensor<1x9x1x64xf32>, %k: tensor<1x3x1x64xf32>, %c: tensor<1x3x?x64xf32>, %p: tensor<1xi64>) {
  // expected-error @+1 {{the cache form must be causal}}
  %0:3 = loom.attention %q, %k, %k cache(%c, %c at %p : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1xi64>) : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>
  return
}

// -----

// loom.state: a KV cache with a dynamic context dimension.
// expected-error @+1 {{'loom.state' = "kv_cache" on argument 0 needs a tensor [batch, kv_heads, ?, head_dim]}}
func.func @state_static_context(%c: tensor<1x3x8x64xf32> {loom.state = "kv_cache"}) {
  return
}

// -----

// expected-error @+1 {{'loom.state' on argument 0 must be "kv_cache"}}
func.func @state_kind(%c: tensor<1x3x?x64xf32> {loom.state = "rng"}) {
  return
}
