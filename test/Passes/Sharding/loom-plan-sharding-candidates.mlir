// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-plan-sharding | FileCheck %s --enable-var-scope

// Candidate strategies (a Python sharding rule's list of choices): the
// planner keeps only strategies among them and picks the cheapest. Offered
// rows or columns for the first matmul of an MLP on tp=4, it takes columns
// (the Megatron layout, one all-reduce); the candidates are gone after.
// CHECK-LABEL: func.func @mlp_choice
// CHECK-NOT: loom.sharding_candidates
// CHECK-NOT: loom.sharding_rule
// CHECK: loom.weight "w1" {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}
// CHECK: loom.matmul {{.*}}loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>
loom.mesh @mesh = <tp = 4>
func.func @mlp_choice(%x: tensor<8x512xf32>) -> tensor<8x512xf32> {
  %w1 = loom.weight "w1" : tensor<512x2048xf32>
  %w2 = loom.weight "w2" : tensor<2048x512xf32>
  %h = loom.matmul %x, %w1 {loom.sharding_candidates = [#loom.sharding<@mesh, [{tp}, {}]>, #loom.sharding<@mesh, [{}, {tp}]>], loom.sharding_rule = "rows_or_cols"} : tensor<8x512xf32>, tensor<512x2048xf32> -> tensor<8x2048xf32>
  %g = loom.gelu %h : tensor<8x2048xf32>
  %y = loom.matmul %g, %w2 : tensor<8x2048xf32>, tensor<2048x512xf32> -> tensor<8x512xf32>
  return %y : tensor<8x512xf32>
}

// -----

// With only rows (batch) and replicated on offer, the planner chooses
// between those two, never the columns it would take on its own.
// CHECK-LABEL: func.func @rows_or_nothing
// CHECK: %[[H:.+]] = loom.matmul {{.*}}loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>
loom.mesh @mesh = <tp = 4>
func.func @rows_or_nothing(%x: tensor<64x512xf32>) -> tensor<64x512xf32> {
  %w1 = loom.weight "w1" : tensor<512x2048xf32>
  %w2 = loom.weight "w2" : tensor<2048x512xf32>
  %h = loom.matmul %x, %w1 {loom.sharding_candidates = [#loom.sharding<@mesh, [{tp}, {}]>, #loom.sharding<@mesh, [{}, {}]>]} : tensor<64x512xf32>, tensor<512x2048xf32> -> tensor<64x2048xf32>
  %g = loom.gelu %h : tensor<64x2048xf32>
  %y = loom.matmul %g, %w2 : tensor<64x2048xf32>, tensor<2048x512xf32> -> tensor<64x512xf32>
  return %y : tensor<64x512xf32>
}
