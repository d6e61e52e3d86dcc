// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-insert-explicit-reshards --loom-partition

// Programs that are not in plan form, or that cannot run on shards, fail
// with a diagnostic at the op that names the value, the axis and the
// dimension.

loom.mesh @m = <tp = 2>
func.func @operand_not_as_needed(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<8x16xf32>
  // expected-error @+1 {{columns: operand 1 is split on dimension 1 over {tp} but {} is needed; reshard it with loom.shard}}
  %h = loom.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %h : tensor<4x16xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @contraction_without_partial(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> tensor<4x16xf32> {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<8x16xf32>
  // expected-error @+1 {{the contraction dimension is split over 'tp', so the result holds partial sums over it: declare `partial = {tp}` on the result}}
  %h = loom.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return %h : tensor<4x16xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @elementwise_mismatch(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{operand 1 ('tensor<4x8xf32>') is split on dimension 0 over {} but the result's dimension 0 is split over {tp}; in plan form they agree (reshard the operand with loom.shard)}}
  %0 = loom.add %x, %y {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func private @nonlinear_on_partial(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>}) -> tensor<4x8xf32> {
  // expected-error @+1 {{operand 0 holds partial sums over {tp} but the op is not linear in it: sum the partial values first (loom.shard to a sharding without `partial`)}}
  %0 = loom.gelu %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func private @partial_plus_replicated(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>}, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{operands 0 and 1 hold partial sums over different axes ({tp} and {}); a sum of partial sums needs the same axes on every operand}}
  %0 = loom.add %x, %b {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @reshard_to_partial(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{the target sharding [{}, {}], partial = {tp} holds partial sums over axis 'tp' but the value [{}, {}] does not; a reshard cannot create partial sums}}
  %0 = loom.shard %x to <@m, [{}, {}], partial = {tp}> : tensor<4x8xf32>
  %1 = loom.shard %0 to <@m, [{}, {}]> : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
// expected-error @+1 {{argument 0 is declared partial over {tp}: every rank receives the whole value of an entry point's argument, so it can be split, not partial}}
func.func @partial_argument(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>}) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
loom.mesh @n = <dp = 2>
func.func @two_meshes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-note @+1 {{mesh @m is used here}}
  %0 = loom.shard %x to <@m, [{tp}, {}]> : tensor<4x8xf32>
  // expected-error @+1 {{shardings refer to two meshes, @m and @n; a program is partitioned over one mesh}}
  %1 = loom.shard %0 to <@n, [{dp}, {}]> : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @collective_in_plan(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = loom.shard %x to <@m, [{tp}, {}]> : tensor<4x8xf32>
  // expected-error @+1 {{is a per-rank op in a program that carries shardings: in plan form the partitioner inserts every collective (remove the shardings to run the program as written)}}
  %1 = loom.all_reduce %x on @m axes = ["tp"] : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @softmax_split_axis(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> tensor<4x8xf32> {
  // expected-error @+1 {{cannot run on a shard: the input is split on dimension 1 over {tp}, the softmax normalises along it (replicate that dimension with loom.shard before the op)}}
  %0 = loom.softmax %x axis = -1 {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @norm_split_features(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> tensor<4x8xf32> {
  // expected-error @+1 {{cannot run on a shard: the input is split on dimension 1 over {tp}, the norm's statistics are taken along it}}
  %0 = loom.rms_norm %x epsilon = 1.0e-05 {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @slice_split_dim(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> tensor<4x4xf32> {
  // expected-error @+1 {{cannot run on a shard: the input is split on dimension 1 over {tp}, and the slice cuts it}}
  %0 = loom.slice %x starts = [0, 0] limits = [4, 4] steps = [1, 1] {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @concat_split_axis(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> tensor<4x16xf32> {
  // expected-error @+1 {{cannot run on a shard: operand 0 is split on dimension 1 over {tp}, the op concatenates along it}}
  %0 = loom.concat %x, %x axis = 1 {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @embedding_vocab(%ids: tensor<4xi64>) -> tensor<4x8xf32> {
  %t = loom.weight "emb" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<32x8xf32>
  // expected-error @+1 {{cannot run on a shard: the table is split on dimension 0 over {tp}, the ids index its rows (a vocabulary-parallel embedding is not implemented)}}
  %0 = loom.embedding %t, %ids : tensor<32x8xf32>, tensor<4xi64> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @reduce_max_split(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> tensor<4xf32> {
  // expected-error @+1 {{cannot run on a shard: the input is split on dimension 1 over {tp}, and only a sum over a split dimension gives partial results}}
  %0 = loom.reduce max %x axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @reduce_sum_not_partial(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> tensor<4xf32> {
  // expected-error @+1 {{sums over dimension 1, which is split over {tp}: the result holds partial sums over 'tp'; declare `partial = {tp}` on the result}}
  %0 = loom.reduce sum %x axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @reshape_mismatch(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}]>}) -> tensor<32xf32> {
  // expected-error @+1 {{the operand [{}, {tp}] and the result [{}] are split differently: locally 'tensor<4x4xf32>' would become 'tensor<32xf32>'; reshard one of them with loom.shard}}
  %0 = loom.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @quantized_weight(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{is a sharded quantized weight without block storage; the partitioner splits quantized weights only as they are loaded (give it `from <file>` or replicate it)}}
  %w = loom.weight "w" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : !loom.qtensor<64x64, #loom.quant<q8_0>>
  %0 = loom.qmatmul %x, %w : tensor<4x64xf32>, !loom.qtensor<64x64, #loom.quant<q8_0>> -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @attention_heads(%q: tensor<1x4x8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {tp}, {}, {}]>}, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{query heads are split over {tp} but key/value heads over {}/{}; split query and KV heads over the same axes so that each device keeps whole groups}}
  %0 = loom.attention %q, %k, %v {loom.sharding = #loom.sharding<@m, [{}, {tp}, {}, {}]>} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

loom.mesh @m = <tp = 2>
func.func @causal_sequence_split(%q: tensor<1x4x8x16xf32> {loom.sharding = #loom.sharding<@m, [{}, {}, {tp}, {}]>}, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{cannot run on a shard: the query is split on dimension 2 over {tp}, and the causal mask needs global query positions}}
  %0 = loom.attention %q, %k, %v causal {loom.sharding = #loom.sharding<@m, [{}, {}, {tp}, {}]>} : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32> -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// A convolution's windows read across the edges of a spatial shard.
loom.mesh @m = <tp = 2>
func.func @conv_spatial(%x: tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w = loom.weight "w" : tensor<8x4x3x3xf32>
  %s = loom.shard %x to <@m, [{}, {}, {tp}, {}]> : tensor<1x4x8x8xf32>
  // expected-error @+1 {{cannot run on a shard: the input is split on dimension 2 over {tp}, and the windows read across shard edges}}
  %y = loom.conv %s, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 {loom.sharding = #loom.sharding<@m, [{}, {}, {tp}, {}]>} : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}
