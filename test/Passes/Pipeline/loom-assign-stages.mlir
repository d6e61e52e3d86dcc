// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-assign-stages | FileCheck %s

// 30 equal layers (one matmul + residual add each) on pp=4: balanced by
// predicted time, none dropped or padded; the head's matmul makes the last
// stage's layers fewer: 7/8/8/7 (the slowest stage as fast as can be, the
// slack spread; 8/8/8/6 has the same slowest stage and is not chosen).
// CHECK: loom.pipeline = {axis = "pp", stages = 4 : i64}
// CHECK-LABEL: func.func @forward
// CHECK: "layers.0.w" {loom.stage = #loom.stage<0>}
// CHECK: "layers.6.w" {loom.stage = #loom.stage<0>}
// CHECK: "layers.7.w" {loom.stage = #loom.stage<1>}
// CHECK: "layers.14.w" {loom.stage = #loom.stage<1>}
// CHECK: "layers.15.w" {loom.stage = #loom.stage<2>}
// CHECK: "layers.22.w" {loom.stage = #loom.stage<2>}
// CHECK: "layers.23.w" {loom.stage = #loom.stage<3>}
// CHECK: "layers.29.w" {loom.stage = #loom.stage<3>}
// CHECK: "head" {loom.stage = #loom.stage<3>}
// CHECK: return {{.*}}loom.stage = #loom.stage<3>
loom.mesh @mesh = <pp = 4>
func.func @forward(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
  %m0 = loom.matmul %x, %w0 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h0 = loom.add %x, %m0 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
  %m1 = loom.matmul %h0, %w1 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h1 = loom.add %h0, %m1 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w2 = loom.weight "layers.2.w" : tensor<64x64xf32>
  %m2 = loom.matmul %h1, %w2 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h2 = loom.add %h1, %m2 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w3 = loom.weight "layers.3.w" : tensor<64x64xf32>
  %m3 = loom.matmul %h2, %w3 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h3 = loom.add %h2, %m3 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w4 = loom.weight "layers.4.w" : tensor<64x64xf32>
  %m4 = loom.matmul %h3, %w4 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h4 = loom.add %h3, %m4 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w5 = loom.weight "layers.5.w" : tensor<64x64xf32>
  %m5 = loom.matmul %h4, %w5 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h5 = loom.add %h4, %m5 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w6 = loom.weight "layers.6.w" : tensor<64x64xf32>
  %m6 = loom.matmul %h5, %w6 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h6 = loom.add %h5, %m6 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w7 = loom.weight "layers.7.w" : tensor<64x64xf32>
  %m7 = loom.matmul %h6, %w7 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h7 = loom.add %h6, %m7 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w8 = loom.weight "layers.8.w" : tensor<64x64xf32>
  %m8 = loom.matmul %h7, %w8 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h8 = loom.add %h7, %m8 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w9 = loom.weight "layers.9.w" : tensor<64x64xf32>
  %m9 = loom.matmul %h8, %w9 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h9 = loom.add %h8, %m9 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w10 = loom.weight "layers.10.w" : tensor<64x64xf32>
  %m10 = loom.matmul %h9, %w10 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h10 = loom.add %h9, %m10 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w11 = loom.weight "layers.11.w" : tensor<64x64xf32>
  %m11 = loom.matmul %h10, %w11 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h11 = loom.add %h10, %m11 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w12 = loom.weight "layers.12.w" : tensor<64x64xf32>
  %m12 = loom.matmul %h11, %w12 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h12 = loom.add %h11, %m12 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w13 = loom.weight "layers.13.w" : tensor<64x64xf32>
  %m13 = loom.matmul %h12, %w13 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h13 = loom.add %h12, %m13 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w14 = loom.weight "layers.14.w" : tensor<64x64xf32>
  %m14 = loom.matmul %h13, %w14 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h14 = loom.add %h13, %m14 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w15 = loom.weight "layers.15.w" : tensor<64x64xf32>
  %m15 = loom.matmul %h14, %w15 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h15 = loom.add %h14, %m15 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w16 = loom.weight "layers.16.w" : tensor<64x64xf32>
  %m16 = loom.matmul %h15, %w16 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h16 = loom.add %h15, %m16 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w17 = loom.weight "layers.17.w" : tensor<64x64xf32>
  %m17 = loom.matmul %h16, %w17 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h17 = loom.add %h16, %m17 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w18 = loom.weight "layers.18.w" : tensor<64x64xf32>
  %m18 = loom.matmul %h17, %w18 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h18 = loom.add %h17, %m18 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w19 = loom.weight "layers.19.w" : tensor<64x64xf32>
  %m19 = loom.matmul %h18, %w19 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h19 = loom.add %h18, %m19 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w20 = loom.weight "layers.20.w" : tensor<64x64xf32>
  %m20 = loom.matmul %h19, %w20 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h20 = loom.add %h19, %m20 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w21 = loom.weight "layers.21.w" : tensor<64x64xf32>
  %m21 = loom.matmul %h20, %w21 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h21 = loom.add %h20, %m21 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w22 = loom.weight "layers.22.w" : tensor<64x64xf32>
  %m22 = loom.matmul %h21, %w22 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h22 = loom.add %h21, %m22 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w23 = loom.weight "layers.23.w" : tensor<64x64xf32>
  %m23 = loom.matmul %h22, %w23 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h23 = loom.add %h22, %m23 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w24 = loom.weight "layers.24.w" : tensor<64x64xf32>
  %m24 = loom.matmul %h23, %w24 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h24 = loom.add %h23, %m24 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w25 = loom.weight "layers.25.w" : tensor<64x64xf32>
  %m25 = loom.matmul %h24, %w25 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h25 = loom.add %h24, %m25 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w26 = loom.weight "layers.26.w" : tensor<64x64xf32>
  %m26 = loom.matmul %h25, %w26 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h26 = loom.add %h25, %m26 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w27 = loom.weight "layers.27.w" : tensor<64x64xf32>
  %m27 = loom.matmul %h26, %w27 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h27 = loom.add %h26, %m27 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w28 = loom.weight "layers.28.w" : tensor<64x64xf32>
  %m28 = loom.matmul %h27, %w28 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h28 = loom.add %h27, %m28 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w29 = loom.weight "layers.29.w" : tensor<64x64xf32>
  %m29 = loom.matmul %h28, %w29 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h29 = loom.add %h28, %m29 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %wh = loom.weight "head" : tensor<64x64xf32>
  %y = loom.matmul %h29, %wh : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// An odd count: 5 layers on pp=2; the head counts in the last stage, which
// gets the fewer layers.
// CHECK-LABEL: func.func @odd
// CHECK: "layers.2.w" {loom.stage = #loom.stage<0>}
// CHECK: "layers.3.w" {loom.stage = #loom.stage<1>}
loom.mesh @mesh = <pp = 2>
func.func @odd(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
  %m0 = loom.matmul %x, %w0 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h0 = loom.add %x, %m0 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
  %m1 = loom.matmul %h0, %w1 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h1 = loom.add %h0, %m1 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w2 = loom.weight "layers.2.w" : tensor<64x64xf32>
  %m2 = loom.matmul %h1, %w2 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h2 = loom.add %h1, %m2 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w3 = loom.weight "layers.3.w" : tensor<64x64xf32>
  %m3 = loom.matmul %h2, %w3 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h3 = loom.add %h2, %m3 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w4 = loom.weight "layers.4.w" : tensor<64x64xf32>
  %m4 = loom.matmul %h3, %w4 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h4 = loom.add %h3, %m4 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %wh = loom.weight "head" : tensor<64x64xf32>
  %y = loom.matmul %h4, %wh : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// An embedding-heavy model (a 1024-row table, read as the cost model
// prices a gather: the table's bytes): stage 0 holds the embedding and so
// fewer layers (the head is small here). The embedding floats: it has no
// layer of its own and sits with its first user.
// CHECK-LABEL: func.func @embedding_heavy
// CHECK: loom.embedding {{.*}}loom.stage = #loom.stage<0>
// CHECK: "layers.3.w" {loom.stage = #loom.stage<0>}
// CHECK: "layers.4.w" {loom.stage = #loom.stage<1>}
// CHECK: "layers.11.w" {loom.stage = #loom.stage<1>}
loom.mesh @mesh = <pp = 2>
func.func @embedding_heavy(%tok: tensor<8xi64>) -> tensor<8x256xf32> {
  %table = loom.weight "embed_tokens.weight" : tensor<1024x256xf32>
  %e = loom.embedding %table, %tok : tensor<1024x256xf32>, tensor<8xi64> -> tensor<8x256xf32>
  %w0 = loom.weight "layers.0.w" : tensor<256x256xf32>
  %m0 = loom.matmul %e, %w0 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h0 = loom.add %e, %m0 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w1 = loom.weight "layers.1.w" : tensor<256x256xf32>
  %m1 = loom.matmul %h0, %w1 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h1 = loom.add %h0, %m1 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w2 = loom.weight "layers.2.w" : tensor<256x256xf32>
  %m2 = loom.matmul %h1, %w2 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h2 = loom.add %h1, %m2 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w3 = loom.weight "layers.3.w" : tensor<256x256xf32>
  %m3 = loom.matmul %h2, %w3 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h3 = loom.add %h2, %m3 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w4 = loom.weight "layers.4.w" : tensor<256x256xf32>
  %m4 = loom.matmul %h3, %w4 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h4 = loom.add %h3, %m4 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w5 = loom.weight "layers.5.w" : tensor<256x256xf32>
  %m5 = loom.matmul %h4, %w5 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h5 = loom.add %h4, %m5 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w6 = loom.weight "layers.6.w" : tensor<256x256xf32>
  %m6 = loom.matmul %h5, %w6 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h6 = loom.add %h5, %m6 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w7 = loom.weight "layers.7.w" : tensor<256x256xf32>
  %m7 = loom.matmul %h6, %w7 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h7 = loom.add %h6, %m7 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w8 = loom.weight "layers.8.w" : tensor<256x256xf32>
  %m8 = loom.matmul %h7, %w8 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h8 = loom.add %h7, %m8 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w9 = loom.weight "layers.9.w" : tensor<256x256xf32>
  %m9 = loom.matmul %h8, %w9 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h9 = loom.add %h8, %m9 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w10 = loom.weight "layers.10.w" : tensor<256x256xf32>
  %m10 = loom.matmul %h9, %w10 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h10 = loom.add %h9, %m10 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  %w11 = loom.weight "layers.11.w" : tensor<256x256xf32>
  %m11 = loom.matmul %h10, %w11 : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>
  %h11 = loom.add %h10, %m11 : tensor<8x256xf32>, tensor<8x256xf32> -> tensor<8x256xf32>
  return %h11 : tensor<8x256xf32>
}

// -----

// A loom.stage the user wrote on an op of layer 1 pins the whole layer to
// stage 1, so stage 1 starts there (balanced would be 3/3).
// CHECK-LABEL: func.func @op_pin
// CHECK: "layers.0.w" {loom.stage = #loom.stage<0>}
// CHECK: "layers.1.w" {loom.stage = #loom.stage<1>}
// CHECK: "layers.5.w" {loom.stage = #loom.stage<1>}
loom.mesh @mesh = <pp = 2>
func.func @op_pin(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
  %m0 = loom.matmul %x, %w0 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h0 = loom.add %x, %m0 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
  %m1 = loom.matmul %h0, %w1 {loom.stage = #loom.stage<1>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h1 = loom.add %h0, %m1 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w2 = loom.weight "layers.2.w" : tensor<64x64xf32>
  %m2 = loom.matmul %h1, %w2 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h2 = loom.add %h1, %m2 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w3 = loom.weight "layers.3.w" : tensor<64x64xf32>
  %m3 = loom.matmul %h2, %w3 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h3 = loom.add %h2, %m3 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w4 = loom.weight "layers.4.w" : tensor<64x64xf32>
  %m4 = loom.matmul %h3, %w4 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h4 = loom.add %h3, %m4 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w5 = loom.weight "layers.5.w" : tensor<64x64xf32>
  %m5 = loom.matmul %h4, %w5 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h5 = loom.add %h4, %m5 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %wh = loom.weight "head" : tensor<64x64xf32>
  %y = loom.matmul %h5, %wh : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// Without a 'pp' axis the module is left as it is.
// CHECK: {{^}}module {
// CHECK-NEXT: loom.mesh @mesh = <tp = 2>
// CHECK-NOT: loom.stage
loom.mesh @mesh = <tp = 2>
func.func @no_pipeline(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
  %m0 = loom.matmul %x, %w0 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h0 = loom.add %x, %m0 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
  %m1 = loom.matmul %h0, %w1 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  %h1 = loom.add %h0, %m1 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %wh = loom.weight "head" : tensor<64x64xf32>
  %y = loom.matmul %h1, %wh : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// A program that sends and receives over 'pp' itself is staged by hand: it
// is left as written (no loom.pipeline, no loom.stage).
// CHECK-LABEL: func.func @ring
// CHECK-NOT: loom.stage
// CHECK: loom.send
// CHECK-NOT: loom.stage
// CHECK: return
loom.mesh @mesh = <pp = 2>
func.func @ring(%x: tensor<6xf32>) -> tensor<6xf32> {
  loom.send %x to @mesh axes = ["pp"] shift = 1 channel = 7 : tensor<6xf32>
  %0 = loom.recv from @mesh axes = ["pp"] shift = -1 channel = 7 : tensor<6xf32>
  return %0 : tensor<6xf32>
}
