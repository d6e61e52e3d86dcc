// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-insert-explicit-reshards --loom-partition | FileCheck %s --enable-var-scope
// The 2-layer MLP y = gelu(x W1) W2 (x: 4x8, W1: 8x16, W2: 16x8) with every
// part of it annotated in turn. Unannotated values are replicated; where an
// op's operands are not laid out as it needs, the variant says so with a
// loom.shard (plan form).

// No annotation: the program is left as written.
loom.mesh @m = <tp = 2>
func.func @none(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" : tensor<8x16xf32>
  %w2 = loom.weight "w2" : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h : tensor<4x16xf32>
  %y = loom.matmul %g, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @none(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.matmul %[[ARG0]], %[[V1]] : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.gelu %[[V3]] : tensor<4x16xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.matmul %[[V4]], %[[V2]] : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V5]] : tensor<4x8xf32>

// -----


// Megatron: W1 split by columns, W2 by rows, one all_reduce.
loom.mesh @m = <tp = 2>
func.func @megatron(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<8x16xf32>
  %w2 = loom.weight "w2" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x16xf32>
  %y = loom.matmul %g, %w2 {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @megatron(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}], ["tp"]] : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.local_slice %[[V3]] on @m split = {{\[\[}}"tp"], []] : tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.matmul %[[ARG0]], %[[V2]] : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.gelu %[[V5]] : tensor<4x8xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.matmul %[[V6]], %[[V4]] : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = loom.all_reduce %[[V7]] on @m axes = ["tp"] : tensor<4x8xf32>
// CHECK-NEXT: return %[[V8]] : tensor<4x8xf32>

// -----


// Megatron with the output split by rows (sequence parallel): reduce_scatter.
loom.mesh @m = <tp = 2>
func.func @megatron_rows_out(%x: tensor<4x8xf32>) -> (tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<8x16xf32>
  %w2 = loom.weight "w2" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x16xf32>
  %y = loom.matmul %g, %w2 {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @megatron_rows_out(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<2x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}], ["tp"]] : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.local_slice %[[V3]] on @m split = {{\[\[}}"tp"], []] : tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.matmul %[[ARG0]], %[[V2]] : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.gelu %[[V5]] : tensor<4x8xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.matmul %[[V6]], %[[V4]] : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = loom.reduce_scatter %[[V7]] on @m axes = ["tp"] scatter_dim = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return %[[V8]] : tensor<2x8xf32>

// -----


// Only the weights are annotated (stored split, gathered for use).
loom.mesh @m = <tp = 2>
func.func @weights_only(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<8x16xf32>
  %w2 = loom.weight "w2" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<16x8xf32>
  %r1 = loom.shard %w1 to <@m, [{}, {}]> : tensor<8x16xf32>
  %r2 = loom.shard %w2 to <@m, [{}, {}]> : tensor<16x8xf32>
  %h = loom.matmul %x, %r1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h : tensor<4x16xf32>
  %y = loom.matmul %g, %r2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @weights_only(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}], ["tp"]] : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.local_slice %[[V3]] on @m split = {{\[\[}}"tp"], []] : tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.all_gather %[[V2]] on @m axes = ["tp"] gather_dim = 1 : tensor<8x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.all_gather %[[V4]] on @m axes = ["tp"] gather_dim = 0 : tensor<8x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.matmul %[[ARG0]], %[[V5]] : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = loom.gelu %[[V7]] : tensor<4x16xf32>
// CHECK-NEXT: %[[V9:[a-zA-Z0-9_]+]] = loom.matmul %[[V8]], %[[V6]] : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V9]] : tensor<4x8xf32>

// -----


// Only the first layer is split; its output is gathered before the second.
loom.mesh @m = <tp = 2>
func.func @first_layer_only(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<8x16xf32>
  %w2 = loom.weight "w2" : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x16xf32>
  %gr = loom.shard %g to <@m, [{}, {}]> : tensor<4x16xf32>
  %y = loom.matmul %gr, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @first_layer_only(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}], ["tp"]] : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.matmul %[[ARG0]], %[[V2]] : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.gelu %[[V4]] : tensor<4x8xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.all_gather %[[V5]] on @m axes = ["tp"] gather_dim = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.matmul %[[V6]], %[[V3]] : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V7]] : tensor<4x8xf32>

// -----


// Only the second layer is split: its input is cut locally, its output reduced.
loom.mesh @m = <tp = 2>
func.func @second_layer_only(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" : tensor<8x16xf32>
  %w2 = loom.weight "w2" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h : tensor<4x16xf32>
  %gs = loom.shard %g to <@m, [{}, {tp}]> : tensor<4x16xf32>
  %y = loom.matmul %gs, %w2 {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @second_layer_only(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.local_slice %[[V2]] on @m split = {{\[\[}}"tp"], []] : tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.matmul %[[ARG0]], %[[V1]] : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.gelu %[[V4]] : tensor<4x16xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.local_slice %[[V5]] on @m split = {{\[\[}}], ["tp"]] : tensor<4x16xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.matmul %[[V6]], %[[V3]] : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = loom.all_reduce %[[V7]] on @m axes = ["tp"] : tensor<4x8xf32>
// CHECK-NEXT: return %[[V8]] : tensor<4x8xf32>

// -----


// Only the input is annotated: split by rows, data parallel through both layers.
loom.mesh @m = <tp = 2>
func.func @data_parallel(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" : tensor<8x16xf32>
  %w2 = loom.weight "w2" : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<4x16xf32>
  %y = loom.matmul %g, %w2 {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @data_parallel(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.local_slice %[[ARG0]] on @m split = {{\[\[}}"tp"], []] : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.matmul %[[V1]], %[[V2]] : tensor<2x8xf32>, tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.gelu %[[V4]] : tensor<2x16xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.matmul %[[V5]], %[[V3]] : tensor<2x16xf32>, tensor<16x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.all_gather %[[V6]] on @m axes = ["tp"] gather_dim = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V7]] : tensor<4x8xf32>

// -----


// Only the input is annotated, and the ops are not: it is gathered back.
loom.mesh @m = <tp = 2>
func.func @input_only(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" : tensor<8x16xf32>
  %w2 = loom.weight "w2" : tensor<16x8xf32>
  %xr = loom.shard %x to <@m, [{}, {}]> : tensor<4x8xf32>
  %h = loom.matmul %xr, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h : tensor<4x16xf32>
  %y = loom.matmul %g, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @input_only(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.local_slice %[[ARG0]] on @m split = {{\[\[}}"tp"], []] : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.all_gather %[[V1]] on @m axes = ["tp"] gather_dim = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.matmul %[[V4]], %[[V2]] : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.gelu %[[V5]] : tensor<4x16xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.matmul %[[V6]], %[[V3]] : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V7]] : tensor<4x8xf32>

// -----


// Only the output is annotated: each rank returns its block of rows.
loom.mesh @m = <tp = 2>
func.func @output_only(%x: tensor<4x8xf32>) -> (tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) {
  %w1 = loom.weight "w1" : tensor<8x16xf32>
  %w2 = loom.weight "w2" : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h : tensor<4x16xf32>
  %y = loom.matmul %g, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @output_only(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<2x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.matmul %[[ARG0]], %[[V1]] : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.gelu %[[V3]] : tensor<4x16xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.matmul %[[V4]], %[[V2]] : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.local_slice %[[V5]] on @m split = {{\[\[}}"tp"], []] : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return %[[V6]] : tensor<2x8xf32>

// -----


// A 2x2 mesh: data parallel over dp, Megatron over tp.
loom.mesh @m = <dp = 2, tp = 2>
func.func @dp_tp(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {}]>}) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<8x16xf32>
  %w2 = loom.weight "w2" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 {loom.sharding = #loom.sharding<@m, [{dp}, {tp}]>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h {loom.sharding = #loom.sharding<@m, [{dp}, {tp}]>} : tensor<4x16xf32>
  %y = loom.matmul %g, %w2 {loom.sharding = #loom.sharding<@m, [{dp}, {}], partial = {tp}>} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @dp_tp(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.local_slice %[[ARG0]] on @m split = {{\[\[}}"dp"], []] : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.local_slice %[[V2]] on @m split = {{\[\[}}], ["tp"]] : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.local_slice %[[V4]] on @m split = {{\[\[}}"tp"], []] : tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.matmul %[[V1]], %[[V3]] : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.gelu %[[V6]] : tensor<2x8xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = loom.matmul %[[V7]], %[[V5]] : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[V9:[a-zA-Z0-9_]+]] = loom.all_reduce %[[V8]] on @m axes = ["tp"] : tensor<2x8xf32>
// CHECK-NEXT: %[[V10:[a-zA-Z0-9_]+]] = loom.all_gather %[[V9]] on @m axes = ["dp"] gather_dim = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V10]] : tensor<4x8xf32>

// -----


// A 2x2x2 mesh: the hidden dimension over two axes, batch over the third.
loom.mesh @m = <a = 2, b = 2, c = 2>
func.func @cube(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{a}, {}]>}) -> (tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{a}, {}]>}) {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{}, {b, c}]>} : tensor<8x16xf32>
  %w2 = loom.weight "w2" {loom.sharding = #loom.sharding<@m, [{b, c}, {}]>} : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 {loom.sharding = #loom.sharding<@m, [{a}, {b, c}]>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h {loom.sharding = #loom.sharding<@m, [{a}, {b, c}]>} : tensor<4x16xf32>
  %y = loom.matmul %g, %w2 {loom.sharding = #loom.sharding<@m, [{a}, {}], partial = {b, c}>} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @cube(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<2x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.local_slice %[[ARG0]] on @m split = {{\[\[}}"a"], []] : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.local_slice %[[V2]] on @m split = {{\[\[}}], ["b", "c"]] : tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.local_slice %[[V4]] on @m split = {{\[\[}}"b", "c"], []] : tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.matmul %[[V1]], %[[V3]] : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = loom.gelu %[[V6]] : tensor<2x4xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = loom.matmul %[[V7]], %[[V5]] : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[V9:[a-zA-Z0-9_]+]] = loom.all_reduce %[[V8]] on @m axes = ["b", "c"] : tensor<2x8xf32>
// CHECK-NEXT: return %[[V9]] : tensor<2x8xf32>

// -----


// A private function: arguments and results are local values.
loom.mesh @m = <tp = 2>
func.func private @layer(%g: tensor<4x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}, %w2: tensor<16x8xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) -> (tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>}) {
  %y = loom.matmul %g, %w2 {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func @calls(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<8x16xf32>
  %w2 = loom.weight "w2" : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x16xf32>
  %y = func.call @layer(%g, %w2) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func private @layer(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: %[[ARG1:[a-zA-Z0-9_]+]]: tensor<8x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.matmul %[[ARG0]], %[[ARG1]] : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[V2]] : tensor<4x8xf32>
// CHECK-LABEL: func.func @calls(
// CHECK-SAME: %[[ARG0:[a-zA-Z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_]+]] = loom.weight "w1" : tensor<8x16xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_]+]] = loom.local_slice %[[V1]] on @m split = {{\[\[}}], ["tp"]] : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_]+]] = loom.weight "w2" : tensor<16x8xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_]+]] = loom.matmul %[[ARG0]], %[[V2]] : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_]+]] = loom.gelu %[[V4]] : tensor<4x8xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_]+]] = loom.local_slice %[[V3]] on @m split = {{\[\[}}"tp"], []] : tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_]+]] = call @layer(%[[V5]], %[[V6]]) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_]+]] = loom.all_reduce %[[V7]] on @m axes = ["tp"] : tensor<4x8xf32>
// CHECK-NEXT: return %[[V8]] : tensor<4x8xf32>
