// RUN: loom-opt %s --verify-roundtrip --loom-shard-pipeline="mesh=pp=2,tp=2" --loom-pipeline-pipeline --loom-partition-pipeline | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --verify-roundtrip --loom-shard-pipeline="mesh=pp=2,tp=2" --loom-pipeline-pipeline --loom-pipeline-pipeline | FileCheck %s --check-prefix=TWICE

// A staged module is not staged again.
// TWICE-COUNT-2: func.func @forward__stage
// TWICE-NOT: func.func

// Composition with tp: a two-layer Megatron MLP on pp=2 x tp=2. The planner
// never splits over pp; each stage function is partitioned over tp alone
// (its collectives on "tp" only, inside the stage); the boundary between
// the stages carries the value as the planner sharded it, as the rank's
// local shard: stage 0's result has exactly the local type of stage 1's
// loom.boundary argument. The planner keeps the residual both split and
// gathered; only the split form crosses, stage 1 gathers it again.
// CHECK: module attributes {loom.pipeline = {axis = "pp", stages = 2 : i64}}
// CHECK: loom.mesh @mesh = <pp = 2, tp = 2>
// CHECK-LABEL: func.func @forward__stage0(
// CHECK-SAME: %{{.*}}: tensor<4x64xf32> {loom.entry_arg = 0 : i64, loom.name = "x"})
// CHECK-SAME: -> [[$B0:tensor<[0-9x]+xf32>]] attributes
// CHECK-SAME: loom.stage_of = {entry = "forward", stage = 0 : i64}
// CHECK: loom.local_slice {{.*}}"tp"{{.*}} : tensor<4x64xf32> -> tensor<2x64xf32>
// CHECK-NOT: "pp"
// CHECK: loom.reduce_scatter {{.*}}axes = ["tp"]
// CHECK-NOT: "pp"
// CHECK: return
// CHECK-LABEL: func.func @forward__stage1(
// CHECK-SAME: %[[B:.+]]: [[$B0]] {loom.boundary = 0 : i64})
// CHECK-SAME: loom.stage_of = {entry = "forward", stage = 1 : i64}
// CHECK-NEXT: loom.all_gather %[[B]] on @mesh axes = ["tp"]
// CHECK-NOT: "pp"
// CHECK: loom.reduce_scatter {{.*}}axes = ["tp"]
// CHECK-NOT: "pp"
// CHECK: return
func.func @forward(%x: tensor<4x64xf32> {loom.name = "x"}) -> (tensor<4x64xf32> {loom.name = "y"}) {
  %w1 = loom.weight "layers.0.up" : tensor<64x256xf32>
  %w2 = loom.weight "layers.0.down" : tensor<256x64xf32>
  %h = loom.matmul %x, %w1 : tensor<4x64xf32>, tensor<64x256xf32> -> tensor<4x256xf32>
  %g = loom.gelu %h : tensor<4x256xf32>
  %y = loom.matmul %g, %w2 : tensor<4x256xf32>, tensor<256x64xf32> -> tensor<4x64xf32>
  %r = loom.add %x, %y : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  %w3 = loom.weight "layers.1.up" : tensor<64x256xf32>
  %w4 = loom.weight "layers.1.down" : tensor<256x64xf32>
  %h2 = loom.matmul %r, %w3 : tensor<4x64xf32>, tensor<64x256xf32> -> tensor<4x256xf32>
  %g2 = loom.gelu %h2 : tensor<4x256xf32>
  %y2 = loom.matmul %g2, %w4 : tensor<4x256xf32>, tensor<256x64xf32> -> tensor<4x64xf32>
  %r2 = loom.add %r, %y2 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  return %r2 : tensor<4x64xf32>
}
