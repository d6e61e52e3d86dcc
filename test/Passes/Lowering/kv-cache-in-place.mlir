// RUN: loom-opt %s --loom-prepare-entry-points --loom-convert-loom-to-linalg --canonicalize | FileCheck %s --check-prefix=LINALG
// RUN: loom-opt %s --loom-prepare-entry-points --loom-convert-loom-to-linalg --canonicalize --linalg-fuse-elementwise-ops --canonicalize --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// The cache form of loom.attention on entry arguments marked loom.state: the
// new rows are inserted at positions[0] into the cache argument and attention
// reads rows [0, positions[0] + S) of the updated cache.
// LINALG-LABEL: func.func @decode
// LINALG: %[[P:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<?xi64>
// LINALG: %[[P0:.+]] = arith.index_cast %[[P]] : i64 to index
// LINALG: %[[END:.+]] = arith.addi %[[P0]], %{{.+}} : index
// LINALG: %[[UK:.+]] = tensor.insert_slice %{{.+}} into %arg3[0, 0, %[[P0]], 0] [1, 3, %{{.+}}, 8] [1, 1, 1, 1]
// LINALG: tensor.extract_slice %[[UK]][0, 0, 0, 0] [1, 3, %[[END]], 8] [1, 1, 1, 1]
// LINALG: %[[UV:.+]] = tensor.insert_slice %{{.+}} into %arg4[0, 0, %[[P0]], 0]
// LINALG: tensor.extract_slice %[[UV]][0, 0, 0, 0] [1, 3, %[[END]], 8]

// Bufferized: the caches are the caller's buffers, written through subviews
// in place; no buffer of the cache's size is allocated and none is copied
// (the only copies are of the new rows into the cache).
// CHECK-LABEL: func.func @decode
// CHECK-SAME: %arg3: memref<1x3x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"}
// CHECK-SAME: %arg4: memref<1x3x?x8xf32> {loom.name = "cache_value_0", loom.state = "kv_cache"}
// CHECK-SAME: -> memref<1x9x?x8xf32>
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK: %[[DK:.+]] = memref.subview %arg3[0, 0, %{{.+}}, 0] [1, 3, %{{.+}}, 8] [1, 1, 1, 1]
// CHECK: memref.copy %{{.+}}, %[[DK]]
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK: memref.subview %arg3[0, 0, 0, 0] [1, 3, %{{.+}}, 8]
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK: %[[DV:.+]] = memref.subview %arg4[0, 0, %{{.+}}, 0] [1, 3, %{{.+}}, 8] [1, 1, 1, 1]
// CHECK: memref.copy %{{.+}}, %[[DV]]
// CHECK-NOT: memref.alloc{{.*}}memref<1x3x?x8xf32>
// CHECK-NOT: memref.copy %arg3
// CHECK-NOT: memref.copy %arg4
// CHECK: return
func.func @decode(%q: tensor<1x9x?x8xf32>, %k: tensor<1x3x?x8xf32>,
                  %pos: tensor<?xi64>,
                  %ck: tensor<1x3x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"},
                  %cv: tensor<1x3x?x8xf32> {loom.name = "cache_value_0", loom.state = "kv_cache"})
    -> tensor<1x9x?x8xf32> {
  %o, %uk, %uv = loom.attention %q, %k, %k cache(%ck, %cv at %pos : tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>, tensor<?xi64>) causal : tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32> -> tensor<1x9x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>
  return %o : tensor<1x9x?x8xf32>
}
