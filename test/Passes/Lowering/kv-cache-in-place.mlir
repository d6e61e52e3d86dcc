// RUN: loom-opt %s --verify-roundtrip --loom-prepare-entry-points --loom-convert-loom-to-linalg --canonicalize | FileCheck %s --check-prefix=LINALG
// RUN: loom-opt %s --verify-roundtrip --loom-prepare-entry-points --loom-record-entry-points --loom-convert-loom-to-linalg --canonicalize --linalg-fuse-elementwise-ops --canonicalize --loom-bufferize | FileCheck %s

// The cache form of loom.attention on entry arguments marked loom.state
// (%arg4, %arg5 after the context argument): the new rows are inserted at
// positions[0] into the cache argument, and the batched GEMMs read rows
// [0, positions[0] + S) of the updated cache in place, one call per KV head
// (3 query heads each) at the head's offset in the cache (C x 8 floats).
// LINALG-LABEL: func.func @decode
// LINALG: %[[P:.+]] = tensor.extract %arg3[%{{.+}}] : tensor<?xi64>
// LINALG: %[[P0:.+]] = arith.index_cast %[[P]] : i64 to index
// LINALG: %[[S:.+]] = tensor.dim %arg2, %{{.+}} : tensor<1x3x?x8xf32>
// LINALG: %[[SUM:.+]] = arith.addi %[[P0]], %[[S]] : index
// LINALG: %[[CAP:.+]] = tensor.dim %arg4, %{{.+}} : tensor<1x3x?x8xf32>
// LINALG: %[[END:.+]] = arith.minui %[[SUM]], %[[CAP]] : index
// LINALG: %[[UK:.+]] = tensor.insert_slice %arg2 into %arg4[0, 0, %[[P0]], 0] [1, 3, %[[S]], 8] [1, 1, 1, 1]
// LINALG: %[[UV:.+]] = tensor.insert_slice %arg2 into %arg5[0, 0, %[[P0]], 0] [1, 3, %[[S]], 8] [1, 1, 1, 1]
// LINALG: %[[C:.+]] = tensor.dim %arg4, %{{.+}} : tensor<1x3x?x8xf32>
// LINALG: %[[N:.+]] = arith.index_cast %[[END]] : index to i64
// LINALG: loom_cpu.kernel ins(%{{.+}}, %[[UK]] : {{.+}}) outs(%{{.+}} : {{.+}})
// LINALG-NEXT: ^bb0(%{{.+}}: memref<1x9x?x8xf32>, %[[BK:.+]]: memref<1x3x?x8xf32>, %{{.+}}: memref<1x9x?x?xf32>):
// LINALG: memref.extract_aligned_pointer_as_index %[[BK]]
// LINALG: call @loom_rt_sgemm_batched(%arg0, %{{.+}}, %c1_i32, %c3_i64, %c3_i64, %c3_i64, %{{.+}}, %[[N]], %c8_i64,
// LINALG: %[[I1:.+]] = memref.extract_aligned_pointer_as_index %[[BK]]
// LINALG: %[[H1:.+]] = arith.muli %[[C]], %c32 : index
// LINALG: arith.addi %[[I1]], %[[H1]] : index
// LINALG: call @loom_rt_sgemm_batched
// LINALG: call @loom_rt_sgemm_batched
// LINALG: loom_cpu.kernel ins(%{{.+}}, %[[UV]] : {{.+}}) outs(%{{.+}} : {{.+}})
// LINALG-COUNT-3: call @loom_rt_sgemm_batched

// Bufferized: the caches are the caller's buffers. The only writes are
// copies of the S new rows into subviews of them; the GEMMs read the
// arguments' buffers; no buffer of a cache's shape is allocated and no
// cache is copied anywhere.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: %arg4: memref<1x3x?x8xf32>
// CHECK-SAME: %arg5: memref<1x3x?x8xf32>
// CHECK-SAME: -> memref<1x9x?x8xf32>
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK-NOT: memref.copy %arg4
// CHECK-NOT: memref.copy %arg5
// CHECK: %[[DK:.+]] = memref.subview %arg4[0, 0, %{{.+}}, 0] [1, 3, %{{.+}}, 8] [1, 1, 1, 1]
// CHECK-NEXT: memref.copy %arg2, %[[DK]]
// CHECK-NEXT: %[[DV:.+]] = memref.subview %arg5[0, 0, %{{.+}}, 0] [1, 3, %{{.+}}, 8] [1, 1, 1, 1]
// CHECK-NEXT: memref.copy %arg2, %[[DV]]
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK-NOT: memref.copy
// CHECK: memref.extract_aligned_pointer_as_index %arg4
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK-NOT: memref.copy
// CHECK: memref.extract_aligned_pointer_as_index %arg5
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK-NOT: memref.copy
// CHECK: return
func.func @decode(%q: tensor<1x9x?x8xf32>, %k: tensor<1x3x?x8xf32>,
                  %pos: tensor<?xi64>,
                  %ck: tensor<1x3x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"},
                  %cv: tensor<1x3x?x8xf32> {loom.name = "cache_value_0", loom.state = "kv_cache"})
    -> tensor<1x9x?x8xf32> {
  %o, %uk, %uv = loom.attention %q, %k, %k cache(%ck, %cv at %pos : tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>, tensor<?xi64>) causal : tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32> -> tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>
  return %o : tensor<1x9x?x8xf32>
}

// A static number of new rows (a decode step of one token): the same
// in-place write with static slice sizes (this failed to verify when the
// size was taken as a run-time value: "expected type to be
// 'tensor<1x3x?x8xf32>'").
// LINALG-LABEL: func.func @decode_one
// LINALG: tensor.insert_slice %arg2 into %arg4[0, 0, %{{.+}}, 0] [1, 3, 1, 8] [1, 1, 1, 1] : tensor<1x3x1x8xf32> into tensor<1x3x?x8xf32>
// LINALG: tensor.insert_slice %arg2 into %arg5[0, 0, %{{.+}}, 0] [1, 3, 1, 8] [1, 1, 1, 1] : tensor<1x3x1x8xf32> into tensor<1x3x?x8xf32>
// CHECK-LABEL: func.func @decode_one
// CHECK-NOT: memref.copy %arg4
// CHECK: %[[DK1:.+]] = memref.subview %arg4[0, 0, %{{.+}}, 0] [1, 3, 1, 8] [1, 1, 1, 1]
// CHECK-NEXT: memref.copy %arg2, %[[DK1]]
// CHECK: return
func.func @decode_one(%q: tensor<1x9x1x8xf32>, %k: tensor<1x3x1x8xf32>,
                      %pos: tensor<1xi64>,
                      %ck: tensor<1x3x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"},
                      %cv: tensor<1x3x?x8xf32> {loom.name = "cache_value_0", loom.state = "kv_cache"})
    -> tensor<1x9x1x8xf32> {
  %o, %uk, %uv = loom.attention %q, %k, %k cache(%ck, %cv at %pos : tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1xi64>) causal : tensor<1x9x1x8xf32>, tensor<1x3x1x8xf32>, tensor<1x3x1x8xf32> -> tensor<1x9x1x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>
  return %o : tensor<1x9x1x8xf32>
}
