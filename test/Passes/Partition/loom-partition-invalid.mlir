// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-partition
// loom-partition materialises the loom.shard ops that
// loom-insert-explicit-reshards wrote; run alone on a program whose
// shardings still change implicitly, it refuses by name instead of
// partitioning it wrong.

// A sharded argument of an entry point (every rank receives it whole).
loom.mesh @m = <tp = 2>
// expected-error @+1 {{argument 0 is sharded [{tp}, {}] but arrives whole on every rank; run loom-insert-explicit-reshards before loom-partition}}
func.func @f(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{tp}, {}]>}) -> tensor<4x8xf32> {
  %y = loom.neg %x {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<4x8xf32>
  %z = loom.shard %y to <@m, [{}, {}]> : tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

// A split value returned where the result is replicated.
loom.mesh @m = <tp = 2>
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = loom.shard %x to <@m, [{tp}, {}]> : tensor<4x8xf32>
  %y = loom.neg %s {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<4x8xf32>
  // expected-error @+1 {{operand 0 is laid out [{tp}, {}] but is wanted as [{}, {}] without a loom.shard; run loom-insert-explicit-reshards}}
  return %y : tensor<4x8xf32>
}

// -----

// A sharded weight without storage (every rank maps it whole).
loom.mesh @m = <tp = 2>
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{is sharded [{tp}, {}] but every rank maps it whole; run loom-insert-explicit-reshards}}
  %w = loom.weight "w" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<4x8xf32>
  %z = loom.shard %w to <@m, [{}, {}]> : tensor<4x8xf32>
  %y = loom.add %x, %z : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
