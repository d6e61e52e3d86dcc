// RUN: loom-opt %s --verify-roundtrip --loom-plan-sharding="memory-limit=0.0081" | FileCheck %s
// RUN: loom-opt %s --verify-roundtrip --loom-plan-sharding | FileCheck %s --check-prefix=FREE

// Where Megatron's layout is the wrong tool: a large batch on dp=4 wants
// data parallelism, and the replicated weights do not fit 8.3 MiB next to
// the 8 MiB input. The planner stores each weight split over dp and gathers
// it before use (FSDP / ZeRO-3) rather than splitting the big activations.
// CHECK: %[[X:.*]] = loom.shard %arg0 to <@mesh, [{dp}, {}]>
// CHECK: %[[W1:.*]] = loom.weight "w1" {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}
// CHECK: %[[G1:.*]] = loom.shard %[[W1]] to <@mesh, [{}, {}]>
// CHECK: loom.matmul %[[X]], %[[G1]] {loom.sharding = #loom.sharding<@mesh, [{dp}, {}]>}
// Without the limit the weights stay whole on every rank.
// FREE: loom.weight "w1" : tensor<256x256xf32>
// FREE: loom.weight "w2" : tensor<256x256xf32>
loom.mesh @mesh = <dp = 4>
func.func @mlp(%x: tensor<8192x256xf32>) -> tensor<8192x256xf32> {
  %w1 = loom.weight "w1" : tensor<256x256xf32>
  %w2 = loom.weight "w2" : tensor<256x256xf32>
  %h = loom.matmul %x, %w1 : tensor<8192x256xf32>, tensor<256x256xf32> -> tensor<8192x256xf32>
  %g = loom.gelu %h : tensor<8192x256xf32>
  %y = loom.matmul %g, %w2 : tensor<8192x256xf32>, tensor<256x256xf32> -> tensor<8192x256xf32>
  return %y : tensor<8192x256xf32>
}
