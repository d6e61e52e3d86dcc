// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-outline-repeated-layers --loom-convert-loom-to-linalg | FileCheck %s --enable-var-scope --check-prefix=LINALG
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-record-entry-points --loom-outline-repeated-layers --loom-convert-loom-to-linalg --canonicalize --linalg-fuse-elementwise-ops --canonicalize --loom-bufferize | FileCheck %s --enable-var-scope

// Sharded layers (a row-parallel projection then an all_reduce in each):
// the collective stays inside the layer function and lowers there, on the
// context the layer receives as its argument 0.
// LINALG-LABEL: func.func private @loom_layer_0
// LINALG-SAME: (%[[CTX:.+]]: !llvm.ptr,
// LINALG: loom.all_reduce
// LINALG-LABEL: func.func @sharded
// LINALG-COUNT-3: call @loom_layer_0(%arg0,
// CHECK-LABEL: func.func private @loom_layer_0
// CHECK-SAME: (%[[CTX:.+]]: !llvm.ptr,
// CHECK: call @loom_rt_all_reduce(%[[CTX]],
loom.mesh @mesh = <tp = 2>
func.func @sharded(%ctx: !llvm.ptr, %x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> tensor<4x8xf32> attributes {loom.entry} {
  %a0 = loom.relu %x : tensor<4x8xf32>
  %b0 = loom.matmul %a0, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %c0 = loom.all_reduce %b0 on @mesh axes = ["tp"] : tensor<4x8xf32>
  %d0 = loom.tanh %c0 : tensor<4x8xf32>
  %e0 = loom.add %d0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f0 = loom.sigmoid %e0 : tensor<4x8xf32>
  %a1 = loom.relu %f0 : tensor<4x8xf32>
  %b1 = loom.matmul %a1, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %c1 = loom.all_reduce %b1 on @mesh axes = ["tp"] : tensor<4x8xf32>
  %d1 = loom.tanh %c1 : tensor<4x8xf32>
  %e1 = loom.add %d1, %f0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f1 = loom.sigmoid %e1 : tensor<4x8xf32>
  %a2 = loom.relu %f1 : tensor<4x8xf32>
  %b2 = loom.matmul %a2, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %c2 = loom.all_reduce %b2 on @mesh axes = ["tp"] : tensor<4x8xf32>
  %d2 = loom.tanh %c2 : tensor<4x8xf32>
  %e2 = loom.add %d2, %f1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %f2 = loom.sigmoid %e2 : tensor<4x8xf32>
  return %f2 : tensor<4x8xf32>
}

// -----

// Decode layers with an in-place KV cache: each layer function writes the
// new rows into the cache buffers it receives and reads them there (the
// batched GEMMs); after bufferization the entry passes its own cache
// arguments to the calls, with no copy of a cache anywhere and no buffer
// of a cache's shape allocated.
// LINALG-LABEL: func.func private @loom_layer_0
// LINALG-SAME: (%[[CTX:.+]]: !llvm.ptr,
// LINALG: tensor.insert_slice
// LINALG: call @loom_rt_sgemm_batched(%[[CTX]],
// LINALG-LABEL: func.func @decode
// LINALG-COUNT-2: call @loom_layer_0
// CHECK-LABEL: func.func private @loom_layer_0
// CHECK-SAME: %[[K:[^:]+]]: memref<1x3x?x8xf32>, %[[CK:[^:]+]]: memref<1x3x?x8xf32>, %[[CV:[^:]+]]: memref<1x3x?x8xf32>, %{{[^:]+}}: memref<?xi64>)
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK-NOT: memref.copy %[[CK]]
// CHECK: %[[SK:.+]] = memref.subview %[[CK]]
// CHECK-NEXT: memref.copy %[[K]], %[[SK]]
// CHECK: %[[SV:.+]] = memref.subview %[[CV]]
// CHECK-NEXT: memref.copy %[[K]], %[[SV]]
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK-NOT: memref.copy
// CHECK: memref.extract_aligned_pointer_as_index %[[CK]]
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK-NOT: memref.copy
// CHECK: memref.extract_aligned_pointer_as_index %[[CV]]
// CHECK-NOT: memref.copy
// CHECK: return
// CHECK-LABEL: func.func @decode
// CHECK-SAME: %arg4: memref<1x3x?x8xf32>, %arg5: memref<1x3x?x8xf32>, %arg6: memref<1x3x?x8xf32>, %arg7: memref<1x3x?x8xf32>
// CHECK-NOT: memref.copy
// CHECK: %[[L0:.+]] = call @loom_layer_0(%arg0, %arg1, %arg2, %arg4, %arg5, %arg3)
// CHECK-NEXT: %[[L1:.+]] = call @loom_layer_0(%arg0, %[[L0]], %arg2, %arg6, %arg7, %arg3)
// CHECK-NEXT: return %[[L1]]
func.func @decode(%ctx: !llvm.ptr, %x: tensor<1x?x72xf32>, %k: tensor<1x3x?x8xf32>, %pos: tensor<?xi64>,
                  %ck0: tensor<1x3x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"},
                  %cv0: tensor<1x3x?x8xf32> {loom.name = "cache_value_0", loom.state = "kv_cache"},
                  %ck1: tensor<1x3x?x8xf32> {loom.name = "cache_key_1", loom.state = "kv_cache"},
                  %cv1: tensor<1x3x?x8xf32> {loom.name = "cache_value_1", loom.state = "kv_cache"})
    -> tensor<1x?x72xf32> attributes {loom.entry} {
  %q0 = loom.reshape %x : tensor<1x?x72xf32> -> tensor<1x?x9x8xf32>
  %t0 = loom.transpose %q0 permutation = [0, 2, 1, 3] : tensor<1x?x9x8xf32> -> tensor<1x9x?x8xf32>
  %o0, %uk0, %uv0 = loom.attention %t0, %k, %k cache(%ck0, %cv0 at %pos : tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>, tensor<?xi64>) causal : tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32> -> tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>
  %p0 = loom.transpose %o0 permutation = [0, 2, 1, 3] : tensor<1x9x?x8xf32> -> tensor<1x?x9x8xf32>
  %r0 = loom.reshape %p0 : tensor<1x?x9x8xf32> -> tensor<1x?x72xf32>
  %s0 = loom.add %r0, %x : tensor<1x?x72xf32>, tensor<1x?x72xf32> -> tensor<1x?x72xf32>
  %q1 = loom.reshape %s0 : tensor<1x?x72xf32> -> tensor<1x?x9x8xf32>
  %t1 = loom.transpose %q1 permutation = [0, 2, 1, 3] : tensor<1x?x9x8xf32> -> tensor<1x9x?x8xf32>
  %o1, %uk1, %uv1 = loom.attention %t1, %k, %k cache(%ck1, %cv1 at %pos : tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>, tensor<?xi64>) causal : tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32> -> tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>
  %p1 = loom.transpose %o1 permutation = [0, 2, 1, 3] : tensor<1x9x?x8xf32> -> tensor<1x?x9x8xf32>
  %r1 = loom.reshape %p1 : tensor<1x?x9x8xf32> -> tensor<1x?x72xf32>
  %s1 = loom.add %r1, %s0 : tensor<1x?x72xf32>, tensor<1x?x72xf32> -> tensor<1x?x72xf32>
  return %s1 : tensor<1x?x72xf32>
}
