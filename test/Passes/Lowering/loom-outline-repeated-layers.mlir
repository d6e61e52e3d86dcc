// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-outline-repeated-layers | FileCheck %s --enable-var-scope

// Four identical layers (an MLP block of 7 ops: norm, gate, up, SiLU,
// product, down, residual) become one private function called four times
// with each layer's weights; the context is passed first, the residual
// chain flows through the calls' results; ops before and after stay.
// CHECK-LABEL: func.func private @loom_layer_0
// CHECK-SAME: (%[[C:.+]]: !llvm.ptr, %[[X:.+]]: tensor<4x8xf32>, %[[N:.+]]: tensor<8xf32> {loom.weight = #loom.weight<name = "n0">}, %[[G:.+]]: tensor<16x8xf32> {loom.weight = #loom.weight<name = "g0">}, %[[U:.+]]: tensor<16x8xf32> {loom.weight = #loom.weight<name = "u0">}, %[[D:.+]]: tensor<8x16xf32> {loom.weight = #loom.weight<name = "d0">})
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-SAME: attributes {loom.layer, passthrough = ["noinline"]}
// CHECK: loom.rms_norm %[[X]] scale(%[[N]]
// CHECK: loom.matmul %{{.+}}, %[[G]]
// CHECK: loom.matmul %{{.+}}, %[[U]]
// CHECK: loom.silu
// CHECK: loom.mul
// CHECK: loom.matmul %{{.+}}, %[[D]]
// CHECK: %[[R:.+]] = loom.add %[[X]], %{{.+}}
// CHECK: return %[[R]]
// CHECK-NOT: func.func private
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[CTX:.+]]: !llvm.ptr, %[[IN:.+]]: tensor<4x8xf32>
// CHECK: %[[E:.+]] = loom.relu %[[IN]]
// CHECK: %[[L0:.+]] = call @loom_layer_0(%[[CTX]], %[[E]], %arg2, %arg3, %arg4, %arg5)
// CHECK: %[[L1:.+]] = call @loom_layer_0(%[[CTX]], %[[L0]], %arg6, %arg7, %arg8, %arg9)
// CHECK: %[[L2:.+]] = call @loom_layer_0(%[[CTX]], %[[L1]], %arg10, %arg11, %arg12, %arg13)
// CHECK: %[[L3:.+]] = call @loom_layer_0(%[[CTX]], %[[L2]], %arg14, %arg15, %arg16, %arg17)
// CHECK: %[[F:.+]] = loom.rms_norm %[[L3]]
// CHECK: return %[[F]]
func.func @forward(%ctx: !llvm.ptr, %in: tensor<4x8xf32>,
    %n0: tensor<8xf32> {loom.weight = #loom.weight<name = "n0">}, %g0: tensor<16x8xf32> {loom.weight = #loom.weight<name = "g0">}, %u0: tensor<16x8xf32> {loom.weight = #loom.weight<name = "u0">}, %d0: tensor<8x16xf32> {loom.weight = #loom.weight<name = "d0">},
    %n1: tensor<8xf32> {loom.weight = #loom.weight<name = "n1">}, %g1: tensor<16x8xf32> {loom.weight = #loom.weight<name = "g1">}, %u1: tensor<16x8xf32> {loom.weight = #loom.weight<name = "u1">}, %d1: tensor<8x16xf32> {loom.weight = #loom.weight<name = "d1">},
    %n2: tensor<8xf32> {loom.weight = #loom.weight<name = "n2">}, %g2: tensor<16x8xf32> {loom.weight = #loom.weight<name = "g2">}, %u2: tensor<16x8xf32> {loom.weight = #loom.weight<name = "u2">}, %d2: tensor<8x16xf32> {loom.weight = #loom.weight<name = "d2">},
    %n3: tensor<8xf32> {loom.weight = #loom.weight<name = "n3">}, %g3: tensor<16x8xf32> {loom.weight = #loom.weight<name = "g3">}, %u3: tensor<16x8xf32> {loom.weight = #loom.weight<name = "u3">}, %d3: tensor<8x16xf32> {loom.weight = #loom.weight<name = "d3">},
    %nf: tensor<8xf32> {loom.weight = #loom.weight<name = "nf">}) -> tensor<4x8xf32> attributes {loom.entry} {
  %e = loom.relu %in : tensor<4x8xf32>
  %a0 = loom.rms_norm %e scale(%n0 : tensor<8xf32>) epsilon = 1.0e-05 : tensor<4x8xf32> -> tensor<4x8xf32>
  %b0 = loom.matmul %a0, %g0 transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %c0 = loom.matmul %a0, %u0 transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %s0 = loom.silu %b0 : tensor<4x16xf32>
  %m0 = loom.mul %s0, %c0 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %o0 = loom.matmul %m0, %d0 transpose_b : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %r0 = loom.add %e, %o0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = loom.rms_norm %r0 scale(%n1 : tensor<8xf32>) epsilon = 1.0e-05 : tensor<4x8xf32> -> tensor<4x8xf32>
  %b1 = loom.matmul %a1, %g1 transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %c1 = loom.matmul %a1, %u1 transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %s1 = loom.silu %b1 : tensor<4x16xf32>
  %m1 = loom.mul %s1, %c1 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %o1 = loom.matmul %m1, %d1 transpose_b : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %r1 = loom.add %r0, %o1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a2 = loom.rms_norm %r1 scale(%n2 : tensor<8xf32>) epsilon = 1.0e-05 : tensor<4x8xf32> -> tensor<4x8xf32>
  %b2 = loom.matmul %a2, %g2 transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %c2 = loom.matmul %a2, %u2 transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %s2 = loom.silu %b2 : tensor<4x16xf32>
  %m2 = loom.mul %s2, %c2 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %o2 = loom.matmul %m2, %d2 transpose_b : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %r2 = loom.add %r1, %o2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a3 = loom.rms_norm %r2 scale(%n3 : tensor<8xf32>) epsilon = 1.0e-05 : tensor<4x8xf32> -> tensor<4x8xf32>
  %b3 = loom.matmul %a3, %g3 transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %c3 = loom.matmul %a3, %u3 transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %s3 = loom.silu %b3 : tensor<4x16xf32>
  %m3 = loom.mul %s3, %c3 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %o3 = loom.matmul %m3, %d3 transpose_b : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %r3 = loom.add %r2, %o3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f = loom.rms_norm %r3 scale(%nf : tensor<8xf32>) epsilon = 1.0e-05 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %f : tensor<4x8xf32>
}

// -----

// Two blocks that differ only in one constant (2.0 and 3.0, as an ONNX
// exporter writes a scale per block) are not merged: nothing is outlined.
// CHECK-LABEL: func.func @constant_differs
// CHECK-NOT: call
// CHECK-NOT: func.func private
func.func @constant_differs(%ctx: !llvm.ptr, %x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32> attributes {loom.entry} {
  %k0 = loom.constant dense<2.0> : tensor<f32>
  %a0 = loom.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b0 = loom.mul %a0, %k0 : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %c0 = loom.tanh %b0 : tensor<4x8xf32>
  %d0 = loom.add %c0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e0 = loom.relu %d0 : tensor<4x8xf32>
  %f0 = loom.sub %e0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %k1 = loom.constant dense<3.0> : tensor<f32>
  %a1 = loom.matmul %f0, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b1 = loom.mul %a1, %k1 : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %c1 = loom.tanh %b1 : tensor<4x8xf32>
  %d1 = loom.add %c1, %f0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e1 = loom.relu %d1 : tensor<4x8xf32>
  %f1 = loom.sub %e1, %f0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %f1 : tensor<4x8xf32>
}

// -----

// The same blocks with equal constants are one function; the constant
// (merged into one by CSE, so defined before both blocks) is
// rematerialised inside it rather than passed.
// CHECK-LABEL: func.func private @loom_layer_0
// CHECK-SAME: (%{{.+}}: !llvm.ptr, %{{.+}}: tensor<4x8xf32>, %{{.+}}: tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: loom.constant dense<2.000000e+00> : tensor<f32>
// CHECK-LABEL: func.func @constant_same
// CHECK: call @loom_layer_0
// CHECK: call @loom_layer_0
func.func @constant_same(%ctx: !llvm.ptr, %x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32> attributes {loom.entry} {
  %k = loom.constant dense<2.0> : tensor<f32>
  %a0 = loom.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b0 = loom.mul %a0, %k : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %c0 = loom.tanh %b0 : tensor<4x8xf32>
  %d0 = loom.add %c0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e0 = loom.relu %d0 : tensor<4x8xf32>
  %f0 = loom.sub %e0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = loom.matmul %f0, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b1 = loom.mul %a1, %k : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %c1 = loom.tanh %b1 : tensor<4x8xf32>
  %d1 = loom.add %c1, %f0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e1 = loom.relu %d1 : tensor<4x8xf32>
  %f1 = loom.sub %e1, %f0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %f1 : tensor<4x8xf32>
}

// -----

// Blocks whose dataflow differs (the second one's residual is the entry's
// input, not its own input) are not merged, though their ops match.
// CHECK-LABEL: func.func @dataflow_differs
// CHECK-NOT: call
func.func @dataflow_differs(%ctx: !llvm.ptr, %x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32> attributes {loom.entry} {
  %a0 = loom.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %c0 = loom.tanh %a0 : tensor<4x8xf32>
  %d0 = loom.add %c0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e0 = loom.relu %d0 : tensor<4x8xf32>
  %g0 = loom.exp %e0 : tensor<4x8xf32>
  %f0 = loom.sub %g0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = loom.matmul %f0, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %c1 = loom.tanh %a1 : tensor<4x8xf32>
  %d1 = loom.add %c1, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e1 = loom.relu %d1 : tensor<4x8xf32>
  %g1 = loom.exp %e1 : tensor<4x8xf32>
  %f1 = loom.sub %g1, %f0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %f1 : tensor<4x8xf32>
}

// -----

// Blocks that differ in one shape (the hidden size of the second MLP is
// 24, not 16) stay as they are.
// CHECK-LABEL: func.func @shape_differs
// CHECK-NOT: call
func.func @shape_differs(%ctx: !llvm.ptr, %x: tensor<4x8xf32>, %g0: tensor<16x8xf32>, %d0: tensor<8x16xf32>, %g1: tensor<24x8xf32>, %d1: tensor<8x24xf32>) -> tensor<4x8xf32> attributes {loom.entry} {
  %a0 = loom.relu %x : tensor<4x8xf32>
  %b0 = loom.matmul %a0, %g0 transpose_b : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %s0 = loom.silu %b0 : tensor<4x16xf32>
  %m0 = loom.mul %s0, %b0 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %o0 = loom.matmul %m0, %d0 transpose_b : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %r0 = loom.add %x, %o0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = loom.relu %r0 : tensor<4x8xf32>
  %b1 = loom.matmul %a1, %g1 transpose_b : tensor<4x8xf32>, tensor<24x8xf32> -> tensor<4x24xf32>
  %s1 = loom.silu %b1 : tensor<4x24xf32>
  %m1 = loom.mul %s1, %b1 : tensor<4x24xf32>, tensor<4x24xf32> -> tensor<4x24xf32>
  %o1 = loom.matmul %m1, %d1 transpose_b : tensor<4x24xf32>, tensor<8x24xf32> -> tensor<4x8xf32>
  %r1 = loom.add %r0, %o1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %r1 : tensor<4x8xf32>
}

// -----

// Blocks that differ in one weight's quantization (q4_0, then q4_1) stay
// as they are.
// CHECK-LABEL: func.func @quant_differs
// CHECK-NOT: call
func.func @quant_differs(%ctx: !llvm.ptr, %x: tensor<4x64xf32>, %w0: !loom.qtensor<64x64, #loom.quant<q4_0>>, %w1: !loom.qtensor<64x64, #loom.quant<q4_1>>) -> tensor<4x64xf32> attributes {loom.entry} {
  %a0 = loom.relu %x : tensor<4x64xf32>
  %b0 = loom.qmatmul %a0, %w0 : tensor<4x64xf32>, !loom.qtensor<64x64, #loom.quant<q4_0>> -> tensor<4x64xf32>
  %s0 = loom.silu %b0 : tensor<4x64xf32>
  %m0 = loom.mul %s0, %b0 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %o0 = loom.tanh %m0 : tensor<4x64xf32>
  %r0 = loom.add %x, %o0 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %a1 = loom.relu %r0 : tensor<4x64xf32>
  %b1 = loom.qmatmul %a1, %w1 : tensor<4x64xf32>, !loom.qtensor<64x64, #loom.quant<q4_1>> -> tensor<4x64xf32>
  %s1 = loom.silu %b1 : tensor<4x64xf32>
  %m1 = loom.mul %s1, %b1 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %o1 = loom.tanh %m1 : tensor<4x64xf32>
  %r1 = loom.add %r0, %o1 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  return %r1 : tensor<4x64xf32>
}

// -----

// Blocks whose weights differ only in their stored layout (the second is
// interleaved for int8-activation kernels, loom.weight's `interleave`)
// stay as they are: the lowering reads the two differently.
// CHECK-LABEL: func.func @layout_differs
// CHECK-NOT: call
func.func @layout_differs(%ctx: !llvm.ptr, %x: tensor<4x64xf32>, %w0: !loom.qtensor<64x64, #loom.quant<q4_0>> {loom.weight = #loom.weight<name = "w0">}, %w1: !loom.qtensor<64x64, #loom.quant<q4_0>> {loom.weight = #loom.weight<name = "w1", interleave = #loom.interleave<rows = 8, block_bytes = 18, fields = 1, field_bytes = 2, unit_bytes = 4>>}) -> tensor<4x64xf32> attributes {loom.entry} {
  %a0 = loom.relu %x : tensor<4x64xf32>
  %b0 = loom.qmatmul %a0, %w0 : tensor<4x64xf32>, !loom.qtensor<64x64, #loom.quant<q4_0>> -> tensor<4x64xf32>
  %s0 = loom.silu %b0 : tensor<4x64xf32>
  %m0 = loom.mul %s0, %b0 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %o0 = loom.tanh %m0 : tensor<4x64xf32>
  %r0 = loom.add %x, %o0 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %a1 = loom.relu %r0 : tensor<4x64xf32>
  %b1 = loom.qmatmul %a1, %w1 : tensor<4x64xf32>, !loom.qtensor<64x64, #loom.quant<q4_0>> -> tensor<4x64xf32>
  %s1 = loom.silu %b1 : tensor<4x64xf32>
  %m1 = loom.mul %s1, %b1 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %o1 = loom.tanh %m1 : tensor<4x64xf32>
  %r1 = loom.add %r0, %o1 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  return %r1 : tensor<4x64xf32>
}

// -----

// Two kinds of layers (A A B B B): each run gets its function; two entry
// points with the same layer share one function; functions that are not
// prepared entry points are left alone.
// CHECK-LABEL: func.func private @loom_layer_0
// CHECK: loom.tanh
// CHECK-LABEL: func.func private @loom_layer_1
// CHECK: loom.exp
// CHECK-NOT: func.func private @loom_layer
// CHECK-LABEL: func.func @two_kinds
// CHECK-COUNT-2: call @loom_layer_1
// CHECK-COUNT-3: call @loom_layer_0
// CHECK-LABEL: func.func @same_kind
// CHECK-COUNT-3: call @loom_layer_0
// CHECK-LABEL: func.func @not_prepared
// CHECK-NOT: call
func.func @two_kinds(%ctx: !llvm.ptr, %x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {loom.entry} {
  %a0 = loom.exp %x : tensor<4x8xf32>
  %b0 = loom.relu %a0 : tensor<4x8xf32>
  %c0 = loom.add %b0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d0 = loom.sigmoid %c0 : tensor<4x8xf32>
  %e0 = loom.mul %d0, %c0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f0 = loom.sub %e0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = loom.exp %f0 : tensor<4x8xf32>
  %b1 = loom.relu %a1 : tensor<4x8xf32>
  %c1 = loom.add %b1, %f0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d1 = loom.sigmoid %c1 : tensor<4x8xf32>
  %e1 = loom.mul %d1, %c1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f1 = loom.sub %e1, %f0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a2 = loom.tanh %f1 : tensor<4x8xf32>
  %b2 = loom.relu %a2 : tensor<4x8xf32>
  %c2 = loom.add %b2, %f1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d2 = loom.sigmoid %c2 : tensor<4x8xf32>
  %e2 = loom.mul %d2, %c2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f2 = loom.sub %e2, %f1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a3 = loom.tanh %f2 : tensor<4x8xf32>
  %b3 = loom.relu %a3 : tensor<4x8xf32>
  %c3 = loom.add %b3, %f2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d3 = loom.sigmoid %c3 : tensor<4x8xf32>
  %e3 = loom.mul %d3, %c3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f3 = loom.sub %e3, %f2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a4 = loom.tanh %f3 : tensor<4x8xf32>
  %b4 = loom.relu %a4 : tensor<4x8xf32>
  %c4 = loom.add %b4, %f3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d4 = loom.sigmoid %c4 : tensor<4x8xf32>
  %e4 = loom.mul %d4, %c4 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f4 = loom.sub %e4, %f3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %f4 : tensor<4x8xf32>
}
func.func @same_kind(%ctx: !llvm.ptr, %x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {loom.entry} {
  %a2 = loom.tanh %x : tensor<4x8xf32>
  %b2 = loom.relu %a2 : tensor<4x8xf32>
  %c2 = loom.add %b2, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d2 = loom.sigmoid %c2 : tensor<4x8xf32>
  %e2 = loom.mul %d2, %c2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f2 = loom.sub %e2, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a3 = loom.tanh %f2 : tensor<4x8xf32>
  %b3 = loom.relu %a3 : tensor<4x8xf32>
  %c3 = loom.add %b3, %f2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d3 = loom.sigmoid %c3 : tensor<4x8xf32>
  %e3 = loom.mul %d3, %c3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f3 = loom.sub %e3, %f2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a4 = loom.tanh %f3 : tensor<4x8xf32>
  %b4 = loom.relu %a4 : tensor<4x8xf32>
  %c4 = loom.add %b4, %f3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d4 = loom.sigmoid %c4 : tensor<4x8xf32>
  %e4 = loom.mul %d4, %c4 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f4 = loom.sub %e4, %f3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %f4 : tensor<4x8xf32>
}
func.func @not_prepared(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a2 = loom.tanh %x : tensor<4x8xf32>
  %b2 = loom.relu %a2 : tensor<4x8xf32>
  %c2 = loom.add %b2, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d2 = loom.sigmoid %c2 : tensor<4x8xf32>
  %e2 = loom.mul %d2, %c2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f2 = loom.sub %e2, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a3 = loom.tanh %f2 : tensor<4x8xf32>
  %b3 = loom.relu %a3 : tensor<4x8xf32>
  %c3 = loom.add %b3, %f2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d3 = loom.sigmoid %c3 : tensor<4x8xf32>
  %e3 = loom.mul %d3, %c3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f3 = loom.sub %e3, %f2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %f3 : tensor<4x8xf32>
}
