// RUN: loom-opt %s --verify-roundtrip --loom-shard-pipeline | FileCheck %s
// RUN: loom-opt %s --verify-roundtrip --loom-shard-pipeline="mesh=tp=4 device=cpu" | FileCheck %s
// RUN: not loom-opt %s --loom-shard-pipeline="mesh=tp=2" 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: loom-opt %s --verify-roundtrip --loom-shard-pipeline --loom-partition-pipeline | FileCheck %s --check-prefix=PART

// The shard phase as one registered pipeline, with its options: an MLP on
// tp=4 gets Megatron's layout; the partition phase after it gives each rank
// its slices and one all-reduce.
// CHECK-LABEL: func.func @mlp
// CHECK: loom.weight "w1" {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}
// CHECK: loom.weight "w2" {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>}
// PART-LABEL: func.func @mlp
// PART: loom.local_slice %{{.*}} split = {{\[\[}}], ["tp"]] : tensor<512x2048xf32> -> tensor<512x512xf32>
// PART: loom.all_reduce
// PART-NOT: loom.shard
// MESH: the program declares mesh tp=4 but --mesh says tp=2
loom.mesh @mesh = <tp = 4>
func.func @mlp(%x: tensor<8x512xf32>) -> tensor<8x512xf32> {
  %w1 = loom.weight "w1" : tensor<512x2048xf32>
  %w2 = loom.weight "w2" : tensor<2048x512xf32>
  %h = loom.matmul %x, %w1 : tensor<8x512xf32>, tensor<512x2048xf32> -> tensor<8x2048xf32>
  %g = loom.gelu %h : tensor<8x2048xf32>
  %y = loom.matmul %g, %w2 : tensor<8x2048xf32>, tensor<2048x512xf32> -> tensor<8x512xf32>
  return %y : tensor<8x512xf32>
}
