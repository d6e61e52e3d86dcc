// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --enable-var-scope

// loom.local_slice lowers to the rank's block index from the runtime (one
// loom_rt_group_index when the axes are in mesh order, as the runtime
// numbers groups; loom_rt_coord per axis otherwise), a tensor.extract_slice
// at that block, and a copy into a fresh tensor.

loom.mesh @m = <dp = 2, tp = 4>
// CHECK-LABEL: func.func @mesh_order(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr, %[[X:.*]]: tensor<8x64xf32>
// CHECK-NOT: loom_rt_abort
// CHECK: %[[MASK:.*]] = arith.constant 3 : i64
// CHECK: %[[IDX:.*]] = call @loom_rt_group_index(%[[CTX]], %[[MASK]])
// CHECK: %[[I:.*]] = arith.index_cast %[[IDX]] : i64 to index
// CHECK: %[[OFF:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK: %[[S:.*]] = tensor.extract_slice %[[X]][%[[OFF]], 0] [1, 64] [1, 1] : tensor<8x64xf32> to tensor<1x64xf32>
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<1x64xf32>)
func.func @mesh_order(%x: tensor<8x64xf32>) -> tensor<1x64xf32> {
  %0 = loom.local_slice %x on @m split = [["dp", "tp"], []] : tensor<8x64xf32> -> tensor<1x64xf32>
  return %0 : tensor<1x64xf32>
}

// -----

loom.mesh @m = <dp = 2, tp = 4>
// Axes against mesh order: index = coord(tp) * 2 + coord(dp).
// CHECK: llvm.mlir.global internal constant @loom.str.{{.*}}("loom.local_slice at loc({{.*}}): dimension 0 has a run-time size that does not divide over the 8 ranks of mesh axes [\22tp\22, \22dp\22]; give a size that is a multiple of 8, or compile without splitting that dimension\00")
// CHECK-LABEL: func.func @against_mesh_order(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr, %[[X:.*]]: tensor<?x64xf32>
// CHECK: %[[TP:.*]] = call @loom_rt_coord(%[[CTX]], %{{.*}})
// CHECK: %[[M:.*]] = arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: %[[A:.*]] = arith.addi %[[M]], %[[TP]] : i64
// CHECK: %[[DP:.*]] = call @loom_rt_coord(%[[CTX]], %{{.*}})
// CHECK: %[[M2:.*]] = arith.muli %[[A]], %{{.*}} : i64
// CHECK: %[[B:.*]] = arith.addi %[[M2]], %[[DP]] : i64
// A run-time size must divide over the group (here 8 ranks), else the job
// fails with the op, its location, the dimension and the axes.
// CHECK: %[[DIM:.*]] = tensor.dim %[[X]]
// CHECK: %[[REM:.*]] = arith.remui %[[DIM]], %{{.*}} : index
// CHECK: %[[BAD:.*]] = arith.cmpi ne, %[[REM]], %{{.*}} : index
// CHECK: scf.if %[[BAD]] {
// CHECK-NEXT: func.call @loom_rt_abort(%[[CTX]], %{{.*}})
// CHECK: %[[LOCAL:.*]] = arith.divui %[[DIM]], %{{.*}} : index
// CHECK: %[[I:.*]] = arith.index_cast %[[B]] : i64 to index
// CHECK: %[[OFF:.*]] = arith.muli %[[I]], %[[LOCAL]] : index
// CHECK: tensor.extract_slice %[[X]][%[[OFF]], 0] [%[[LOCAL]], 64] [1, 1] : tensor<?x64xf32> to tensor<?x64xf32>
func.func @against_mesh_order(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = loom.local_slice %x on @m split = [["tp", "dp"], []] : tensor<?x64xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
