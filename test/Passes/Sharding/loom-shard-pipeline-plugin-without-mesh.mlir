// A custom sharding pass (the example plugin, examples/sharding-plugin) run
// by loomc --shard-passes on a program without a loom.mesh: the shard phase
// declares --mesh before the plugin runs (loom-declare-mesh), the plugin
// pins attention on it and the planner keeps the pins (docs/SHARDING.md).
// RUN: rm -rf %t && mkdir -p %t
// RUN: loomc %s --mesh tp=2 --plugin %loom_lib_dir/LoomPinAttentionHeads.so --shard-passes='loom-pin-attention-heads{axis=tp}' --compile-to=shard -o %t/shard.mlir
// RUN: FileCheck %s < %t/shard.mlir
// RUN: loomc %s --mesh tp=2 --plugin %loom_lib_dir/LoomPinAttentionHeads.so --shard-passes='loom-pin-attention-heads{axis=tp}' --emit=plan -o %t/plan.json
// RUN: FileCheck %s --check-prefix=PLAN < %t/plan.json
// The same through the registered shard pipeline.
// RUN: loom-opt %s --verify-roundtrip --load-pass-plugin=%loom_lib_dir/LoomPinAttentionHeads.so --loom-shard-pipeline='mesh=tp=2 shard-passes=loom-pin-attention-heads{axis=tp}' | FileCheck %s
// Without --mesh the plugin names the fix.
// RUN: not loomc %s --plugin %loom_lib_dir/LoomPinAttentionHeads.so --shard-passes='loom-pin-attention-heads{axis=tp}' --compile-to=shard -o %t/none.mlir 2>&1 | FileCheck %s --check-prefix=NOMESH

// CHECK: loom.mesh @mesh = <tp = 2>
// CHECK-NOT: loom.mesh
// CHECK: %[[Q:.*]] = loom.shard %arg0 to <@mesh, [{}, {tp}, {}, {}]>
// CHECK: loom.attention %[[Q]], {{.*}}loom.sharding = #loom.sharding<@mesh, [{}, {tp}, {}, {}]>
// PLAN: "mesh": "cpu: tp=2
// NOMESH: the module has no loom.mesh; give loomc --mesh
func.func @attn(%q: tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32> {
  %o = loom.attention %q, %q, %q causal : tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32> -> tensor<1x4x16x32xf32>
  return %o : tensor<1x4x16x32xf32>
}
