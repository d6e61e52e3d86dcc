// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-split-stages | FileCheck %s --enable-var-scope

// Three stages. %a (stage 0) is used by stages 1 and 2, so stage 1 receives
// it and returns it again; %c (stage 1) goes to stage 2. The embedding
// floats: it is cloned into each stage that uses it (0 and 1), and its
// table, tied to the LM head, is referenced by stages 0, 1 and 2. Entry
// arguments go only to the stages that use them, with their attributes and
// loom.entry_arg; a boundary value keeps the planner's sharding.
// CHECK: module attributes {loom.pipeline = {axis = "pp", stages = 3 : i64}}
// CHECK-NOT: func.func @f(
// CHECK-LABEL: func.func @f__stage0(
// CHECK-SAME: %[[TOK:.+]]: tensor<8xi64> {loom.entry_arg = 1 : i64, loom.name = "tokens"})
// CHECK-SAME: -> (tensor<8x64xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>})
// CHECK-SAME: attributes {loom.stage_of = {entry = "f", stage = 0 : i64}}
// CHECK: %[[T:.+]] = loom.weight "embed.weight"
// CHECK-NOT: loom.stage =
// CHECK: %[[E:.+]] = loom.embedding %[[T]], %[[TOK]]
// CHECK: %[[A:.+]] = loom.matmul %[[E]]
// CHECK: return %[[A]]
// CHECK-LABEL: func.func @f__stage1(
// CHECK-SAME: %[[A1:.+]]: tensor<8x64xf32> {loom.boundary = 0 : i64, loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}
// CHECK-SAME: %[[TOK1:.+]]: tensor<8xi64> {loom.entry_arg = 1 : i64, loom.name = "tokens"})
// CHECK-SAME: -> (tensor<8x64xf32> {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}, tensor<8x64xf32>)
// CHECK-SAME: loom.stage_of = {entry = "f", stage = 1 : i64}
// CHECK: loom.embedding
// CHECK: %[[B:.+]] = loom.matmul %[[A1]]
// CHECK: %[[C:.+]] = loom.add %[[B]]
// CHECK: return %[[A1]], %[[C]]
// CHECK-LABEL: func.func @f__stage2(
// CHECK-SAME: %[[A2:[^:]+]]: tensor<8x64xf32> {loom.boundary = 0 : i64, loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}
// CHECK-SAME: %[[C2:[^:]+]]: tensor<8x64xf32> {loom.boundary = 1 : i64}
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x64xf32> {loom.entry_arg = 0 : i64, loom.name = "x"})
// CHECK-SAME: -> (tensor<8x128xf32> {loom.name = "y"})
// CHECK: %[[T2:.+]] = loom.weight "embed.weight"
// CHECK: %[[D:.+]] = loom.matmul %[[C2]]
// CHECK: %[[S:.+]] = loom.add %[[D]], %[[A2]]
// CHECK: %[[S2:.+]] = loom.add %[[S]], %[[X]]
// CHECK: %[[Y:.+]] = loom.matmul %[[S2]], %[[T2]] transpose_b
// CHECK: return %[[Y]]
module attributes {loom.pipeline = {axis = "pp", stages = 3 : i64}} {
  loom.mesh @mesh = <pp = 3, tp = 2>
  func.func @f(%x: tensor<8x64xf32> {loom.name = "x"}, %tok: tensor<8xi64> {loom.name = "tokens"}) -> (tensor<8x128xf32> {loom.name = "y"}) {
    %table = loom.weight "embed.weight" {loom.stage = #loom.stage<0>} : tensor<128x64xf32>
    %e = loom.embedding %table, %tok {loom.stage = #loom.stage<0>} : tensor<128x64xf32>, tensor<8xi64> -> tensor<8x64xf32>
    %w0 = loom.weight "layers.0.w" {loom.stage = #loom.stage<0>} : tensor<64x64xf32>
    %a = loom.matmul %e, %w0 {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>, loom.stage = #loom.stage<0>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %w1 = loom.weight "layers.1.w" {loom.stage = #loom.stage<1>} : tensor<64x64xf32>
    %b = loom.matmul %a, %w1 {loom.stage = #loom.stage<1>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %c = loom.add %b, %e {loom.stage = #loom.stage<1>} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %w2 = loom.weight "layers.2.w" {loom.stage = #loom.stage<2>} : tensor<64x64xf32>
    %d = loom.matmul %c, %w2 {loom.stage = #loom.stage<2>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %s = loom.add %d, %a {loom.stage = #loom.stage<2>} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %s2 = loom.add %s, %x {loom.stage = #loom.stage<2>} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %y = loom.matmul %s2, %table transpose_b {loom.stage = #loom.stage<2>} : tensor<8x64xf32>, tensor<128x64xf32> -> tensor<8x128xf32>
    return {loom.stage = #loom.stage<2>} %y : tensor<8x128xf32>
  }
}

// -----

// Without loom.pipeline the module is left as it is.
// CHECK-LABEL: func.func @unstaged(
// CHECK-NOT: __stage
module {
  func.func @unstaged(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    return %x : tensor<8x64xf32>
  }
}
