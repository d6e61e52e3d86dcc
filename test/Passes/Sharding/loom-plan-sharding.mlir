// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-plan-sharding | FileCheck %s

// An MLP on tp=4 with no hints: the Megatron layout (first weight split by
// columns, second by rows, one all-reduce of the partial result).
// CHECK-LABEL: func.func @mlp
// CHECK: loom.weight "w1" {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}
// CHECK: loom.weight "w2" {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>}
// CHECK: loom.matmul {{.*}}loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>
// CHECK: loom.gelu {{.*}}loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>
// CHECK: %[[P:.*]] = loom.matmul {{.*}}partial = {tp}
// CHECK: %[[R:.*]] = loom.shard %[[P]] to <@mesh, [{}, {}]>
// CHECK: return %[[R]]
loom.mesh @mesh = <tp = 4>
func.func @mlp(%x: tensor<8x512xf32>) -> tensor<8x512xf32> {
  %w1 = loom.weight "w1" : tensor<512x2048xf32>
  %w2 = loom.weight "w2" : tensor<2048x512xf32>
  %h = loom.matmul %x, %w1 : tensor<8x512xf32>, tensor<512x2048xf32> -> tensor<8x2048xf32>
  %g = loom.gelu %h : tensor<8x2048xf32>
  %y = loom.matmul %g, %w2 : tensor<8x2048xf32>, tensor<2048x512xf32> -> tensor<8x512xf32>
  return %y : tensor<8x512xf32>
}

// -----

// A user annotation is kept as given: the first matmul is pinned to rows
// (batch) and the planner works around it.
// CHECK-LABEL: func.func @pinned
// CHECK: loom.matmul {{.*}}{loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>}
loom.mesh @mesh = <tp = 2>
func.func @pinned(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w1 = loom.weight "w1" : tensor<64x64xf32>
  %h = loom.matmul %x, %w1 {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
  return %h : tensor<8x64xf32>
}

// -----

// Attention split by heads (q, k, v from column-split projections), the
// output projection by rows: one all-reduce per block.
// CHECK-LABEL: func.func @attn
// CHECK: loom.attention {{.*}}loom.sharding = #loom.sharding<@mesh, [{}, {tp}, {}, {}]>
// CHECK: partial = {tp}
// CHECK-NOT: loom.attention
loom.mesh @mesh = <tp = 2>
func.func @attn(%x: tensor<1x16x128xf32>) -> tensor<1x16x128xf32> {
  %wq = loom.weight "wq" : tensor<128x128xf32>
  %wk = loom.weight "wk" : tensor<128x128xf32>
  %wv = loom.weight "wv" : tensor<128x128xf32>
  %wo = loom.weight "wo" : tensor<128x128xf32>
  %q = loom.matmul %x, %wq : tensor<1x16x128xf32>, tensor<128x128xf32> -> tensor<1x16x128xf32>
  %k = loom.matmul %x, %wk : tensor<1x16x128xf32>, tensor<128x128xf32> -> tensor<1x16x128xf32>
  %v = loom.matmul %x, %wv : tensor<1x16x128xf32>, tensor<128x128xf32> -> tensor<1x16x128xf32>
  %q1 = loom.reshape %q : tensor<1x16x128xf32> -> tensor<1x16x4x32xf32>
  %k1 = loom.reshape %k : tensor<1x16x128xf32> -> tensor<1x16x4x32xf32>
  %v1 = loom.reshape %v : tensor<1x16x128xf32> -> tensor<1x16x4x32xf32>
  %q2 = loom.transpose %q1 permutation = [0, 2, 1, 3] : tensor<1x16x4x32xf32> -> tensor<1x4x16x32xf32>
  %k2 = loom.transpose %k1 permutation = [0, 2, 1, 3] : tensor<1x16x4x32xf32> -> tensor<1x4x16x32xf32>
  %v2 = loom.transpose %v1 permutation = [0, 2, 1, 3] : tensor<1x16x4x32xf32> -> tensor<1x4x16x32xf32>
  %o = loom.attention %q2, %k2, %v2 causal : tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32> -> tensor<1x4x16x32xf32>
  %o1 = loom.transpose %o permutation = [0, 2, 1, 3] : tensor<1x4x16x32xf32> -> tensor<1x16x4x32xf32>
  %o2 = loom.reshape %o1 : tensor<1x16x4x32xf32> -> tensor<1x16x128xf32>
  %y = loom.matmul %o2, %wo : tensor<1x16x128xf32>, tensor<128x128xf32> -> tensor<1x16x128xf32>
  return %y : tensor<1x16x128xf32>
}

// -----

// A 2-D mesh: the batch goes to dp, the weights to tp.
// CHECK-LABEL: func.func @mesh2d
// CHECK: loom.weight "w1" {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}
// CHECK: loom.matmul {{.*}}loom.sharding = #loom.sharding<@mesh, [{dp}, {tp}]>
// CHECK: loom.matmul {{.*}}loom.sharding = #loom.sharding<@mesh, [{dp}, {}], partial = {tp}>
loom.mesh @mesh = <dp = 2, tp = 2>
func.func @mesh2d(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %w1 = loom.weight "w1" : tensor<256x1024xf32>
  %w2 = loom.weight "w2" : tensor<1024x256xf32>
  %h = loom.matmul %x, %w1 : tensor<64x256xf32>, tensor<256x1024xf32> -> tensor<64x1024xf32>
  %g = loom.relu %h : tensor<64x1024xf32>
  %y = loom.matmul %g, %w2 : tensor<64x1024xf32>, tensor<1024x256xf32> -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

// -----

// Without a mesh there is nothing to plan.
// CHECK-LABEL: func.func @nomesh
// CHECK-NOT: loom.sharding
func.func @nomesh(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = loom.relu %x : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
