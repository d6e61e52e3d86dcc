// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-bufferize | FileCheck %s --enable-var-scope

// An all_reduce whose operand may be overwritten reduces in place (here
// the argument of a layer outlined from an entry point: a buffer of its
// caller's, writable): the runtime gets the argument's buffer as input and
// output (context, dtype
// f32 = 0, reduction sum = 0, pointers, count 32, axes mask 2: tp is axis 1);
// nothing is allocated or copied, and the result is that buffer.
// CHECK-NOT: loom.mesh
// CHECK: func.func private @loom_rt_all_reduce(!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, i64, i64)
// CHECK-LABEL: func.func @in_place
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[X:[^:]+]]: memref<4x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK-DAG: %[[F32:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[SUM:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[MASK:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[N:.+]] = arith.constant 32 : i64
// CHECK-DAG: %[[I:.+]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK-DAG: %[[O:.+]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: call @loom_rt_all_reduce(%[[CTX]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[N]], %[[MASK]])
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: return %[[X]] : memref<4x8xf32>
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @in_place(%ctx: !llvm.ptr, %x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {loom.layer} {
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// An entry point's inputs belong to its caller and are never written (they
// are marked read-only): the all_reduce of an input reads it and writes a
// fresh buffer, without a copy. A state argument (KV cache) stays writable.
// CHECK-LABEL: func.func @input_read_only
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[X:[^:]+]]: memref<4x8xf32>, %[[S:[^:]+]]: memref<1x2x?x4xf32> {loom.state = "kv_cache"})
// CHECK-NOT: memref.copy
// CHECK: %[[OUT:.+]] = memref.alloc() {{.*}}: memref<4x8xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: call @loom_rt_all_reduce
// CHECK-NOT: memref.alloc
// CHECK: memref.extract_aligned_pointer_as_index %[[S]]
// CHECK: memref.extract_aligned_pointer_as_index %[[S]]
// CHECK: call @loom_rt_all_reduce
// CHECK-NOT: memref.copy
// CHECK: return %[[OUT]], %[[S]]
loom.mesh @mesh = <tp = 2>
func.func @input_read_only(%ctx: !llvm.ptr, %x: tensor<4x8xf32>, %s: tensor<1x2x?x4xf32> {loom.state = "kv_cache"}) -> (tensor<4x8xf32>, tensor<1x2x?x4xf32>) attributes {loom.entry} {
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<4x8xf32>
  %1 = loom.all_reduce %s on @mesh axes = ["tp"] : tensor<1x2x?x4xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<1x2x?x4xf32>
}

// -----

// An all_reduce whose operand is still needed (returned as well) reads it
// and writes a fresh buffer: no copy of the operand.
// CHECK-LABEL: func.func @out_of_place
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[X:[^:]+]]: memref<4x8xf32>)
// CHECK-NOT: memref.copy
// CHECK: %[[OUT:.+]] = memref.alloc() {{.*}}: memref<4x8xf32>
// CHECK-NOT: memref.copy
// CHECK: %[[I:.+]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: %[[O:.+]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: call @loom_rt_all_reduce(%[[CTX]],
// CHECK-NOT: memref.copy
// CHECK: return %[[OUT]], %[[X]]
loom.mesh @mesh = <tp = 2>
func.func @out_of_place(%ctx: !llvm.ptr, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {loom.entry} {
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<4x8xf32>
  return %0, %x : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The operand is a runtime result that must not be overwritten (a GEMM's,
// non-writable): out of place, no copy. The all_reduce's own result is an
// ordinary buffer: the elementwise op after it writes into it in place.
// CHECK-LABEL: func.func @after_gemm
// CHECK: %[[C:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK: %[[OUT:.+]] = memref.alloc() {{.*}}: memref<4x8xf32>
// CHECK-NOT: memref.copy
// CHECK: memref.extract_aligned_pointer_as_index %[[C]]
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: call @loom_rt_all_reduce
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} outs(%[[OUT]] : memref<4x8xf32>)
// CHECK: return %[[OUT]]
#id = affine_map<(d0, d1) -> (d0, d1)>
loom.mesh @mesh = <tp = 2>
func.func @after_gemm(%ctx: !llvm.ptr) -> tensor<4x8xf32> attributes {loom.entry} {
  %c = memref.alloc() : memref<4x8xf32>
  %t = bufferization.to_tensor %c restrict : memref<4x8xf32> to tensor<4x8xf32>
  %0 = loom.all_reduce %t on @mesh axes = ["tp"] : tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<4x8xf32>) outs(%0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  } -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A strided operand (a slice of an input) is reduced in a row-major copy
// (the runtime reads one pointer), which is the result: the input is never
// written back.
// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[X:[^:]+]]: memref<4x8xf32>)
// CHECK: %[[S:.+]] = memref.subview %[[X]][0, 2] [4, 4] [1, 1]
// CHECK: %[[T:.+]] = memref.alloc() {{.*}}: memref<4x4xf32>
// CHECK: memref.copy %[[S]], %[[T]]
// CHECK: call @loom_rt_all_reduce
// CHECK-NOT: memref.copy
// CHECK: return %[[T]]
loom.mesh @mesh = <tp = 2>
func.func @strided(%ctx: !llvm.ptr, %x: tensor<4x8xf32>) -> tensor<4x4xf32> attributes {loom.entry} {
  %s = tensor.extract_slice %x[0, 2] [4, 4] [1, 1] : tensor<4x8xf32> to tensor<4x4xf32>
  %0 = loom.all_reduce %s on @mesh axes = ["tp"] : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// all_gather on dim 1: outer = 8, inner = 16 of the local shard, into a
// fresh [8, 64] buffer; reduce_scatter on dim 0: outer = 1, inner = 16 * 64,
// into a fresh [16, 64] buffer.
// CHECK-DAG: func.func private @loom_rt_reduce_scatter(!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, i64, i64, i64)
// CHECK-DAG: func.func private @loom_rt_all_gather(!llvm.ptr, i32, !llvm.ptr, !llvm.ptr, i64, i64, i64)
// CHECK-LABEL: func.func @gather_scatter
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr
// CHECK: %[[G:.+]] = memref.alloc() : memref<8x64xf32>
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : i64
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : i64
// CHECK-DAG: %[[MASK:.+]] = arith.constant 2 : i64
// CHECK: call @loom_rt_all_gather(%[[CTX]], %{{.+}}, %{{.+}}, %{{.+}}, %[[C8]], %[[C16]], %[[MASK]])
// CHECK: %[[S:.+]] = memref.alloc() : memref<16x64xf32>
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[C1024:.+]] = arith.constant 1024 : i64
// CHECK-DAG: %[[MASK2:.+]] = arith.constant 2 : i64
// CHECK: call @loom_rt_reduce_scatter(%[[CTX]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[C1]], %[[C1024]], %[[MASK2]])
// CHECK: return %[[G]], %[[S]]
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @gather_scatter(%ctx: !llvm.ptr, %z: tensor<8x16xf32>, %y: tensor<64x64xf32>) -> (tensor<8x64xf32>, tensor<16x64xf32>) attributes {loom.entry} {
  %0 = loom.all_gather %z on @mesh axes = ["tp"] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  %1 = loom.reduce_scatter %y on @mesh axes = ["tp"] scatter_dim = 0 : tensor<64x64xf32> -> tensor<16x64xf32>
  return %0, %1 : tensor<8x64xf32>, tensor<16x64xf32>
}

// -----

// all_to_all in its contiguous form: blocks of (4 / 4) * 2 * 16 = 32
// elements, into a fresh buffer.
// CHECK: func.func private @loom_rt_all_to_all(!llvm.ptr, i32, !llvm.ptr, !llvm.ptr, i64, i64)
// CHECK-LABEL: func.func @all_to_all
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<4x2x16xf32>
// CHECK: %[[B:.+]] = arith.constant 32 : i64
// CHECK: call @loom_rt_all_to_all(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[B]], %{{.+}})
// CHECK: return %[[OUT]]
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all(%ctx: !llvm.ptr, %x: tensor<4x2x16xf32>) -> tensor<4x2x16xf32> attributes {loom.entry} {
  %0 = loom.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 0 : tensor<4x2x16xf32> -> tensor<4x2x16xf32>
  return %0 : tensor<4x2x16xf32>
}

// -----

// Send and recv compute the peer's global rank from this rank's
// coordinates; send reads the argument's buffer, recv fills a fresh one.
// CHECK-LABEL: func.func @ring
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[X:[^:]+]]: memref<8xf32>)
// CHECK: call @loom_rt_coord(%[[CTX]],
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: call @loom_rt_send(%[[CTX]],
// CHECK: call @loom_rt_coord(%[[CTX]],
// CHECK: %[[R:.+]] = memref.alloc() : memref<8xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[R]]
// CHECK: call @loom_rt_recv(%[[CTX]],
// CHECK: return %[[R]]
loom.mesh @mesh = <pp = 4>
func.func @ring(%ctx: !llvm.ptr, %x: tensor<8xf32>) -> tensor<8xf32> attributes {loom.entry} {
  loom.send %x to @mesh axes = ["pp"] shift = 1 channel = 3 : tensor<8xf32>
  %0 = loom.recv from @mesh axes = ["pp"] shift = -1 channel = 3 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
