// The example sharding plugin (examples/sharding-plugin) pins attention to
// heads-only sharding; the planner keeps its annotations.
// RUN: loom-opt %s --verify-roundtrip --load-pass-plugin=%loom_lib_dir/LoomPinAttentionHeads.so --pass-pipeline='builtin.module(loom-pin-attention-heads{axis=tp},loom-plan-sharding)' | FileCheck %s

// CHECK: %[[Q:.*]] = loom.shard %arg0 to <@mesh, [{}, {tp}, {}, {}]>
// CHECK: loom.attention %[[Q]], {{.*}}loom.sharding = #loom.sharding<@mesh, [{}, {tp}, {}, {}]>
loom.mesh @mesh = <tp = 2>
func.func @attn(%q: tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32> {
  %o = loom.attention %q, %q, %q causal : tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32> -> tensor<1x4x16x32xf32>
  return %o : tensor<1x4x16x32xf32>
}
