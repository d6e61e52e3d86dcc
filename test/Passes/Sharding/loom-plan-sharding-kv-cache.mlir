// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-plan-sharding | FileCheck %s
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-plan-sharding --loom-insert-explicit-reshards --loom-partition | FileCheck %s --check-prefix=LOCAL

// KV caches (entry arguments marked loom.state) take the layout of the
// attention that writes them: on tp=3 with 3 KV heads the attention splits
// by KV heads and so do the caches, which stay sharded arguments (the
// runtime allocates each rank's part) instead of arriving whole.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: %arg2: tensor<1x3x?x8xf32> {loom.name = "cache_key_0", loom.sharding = #loom.sharding<@mesh, [{}, {tp}, {}, {}]>, loom.state = "kv_cache"}
// CHECK-SAME: %arg3: tensor<1x3x?x8xf32> {loom.name = "cache_value_0", loom.sharding = #loom.sharding<@mesh, [{}, {tp}, {}, {}]>, loom.state = "kv_cache"}
// CHECK: loom.attention {{.*}} cache(%arg2, %arg3 at
// LOCAL-LABEL: func.func @decode
// LOCAL-SAME: %arg2: tensor<1x1x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"}
// LOCAL-SAME: %arg3: tensor<1x1x?x8xf32>
// LOCAL-NOT: loom.local_slice %arg2
// LOCAL: loom.attention {{.*}} cache(%arg2, %arg3 at {{.*}} : tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, tensor<?xi64>)
module {
  loom.mesh @mesh = <tp = 3>
  func.func @decode(%q: tensor<1x9x?x8xf32>, %pos: tensor<?xi64>,
                    %ck: tensor<1x3x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"},
                    %cv: tensor<1x3x?x8xf32> {loom.name = "cache_value_0", loom.state = "kv_cache"},
                    %k: tensor<1x3x?x8xf32>) -> tensor<1x9x?x8xf32> {
    %o, %uk, %uv = loom.attention %q, %k, %k cache(%ck, %cv at %pos : tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>, tensor<?xi64>) causal : tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32> -> tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>
    return %o : tensor<1x9x?x8xf32>
  }
}
