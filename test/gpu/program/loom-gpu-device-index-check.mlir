// loom-gpu-device-index-check alone, on the CPU lowering of an embedding
// (loom-convert-loom-to-linalg: a host loop over the ids calling
// loom_rt_index_error on the first bad one). The loop becomes a reduction
// over the ids into the first bad position and its value (-1 when none),
// the gather reads clamped ids (a bad id reads row 0), and one
// loom_gpu_index_check call gets the two values with the check's own
// operands (context, name, bounds, op), for loom-gpu-host-program.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-gpu-device-index-check | FileCheck %s

// CHECK-LABEL: func.func @embed(
// CHECK-SAME: %[[CTX:[a-z0-9]+]]: !llvm.ptr, %[[IDS:[a-z0-9]+]]: tensor<1x5xi64>, %[[TABLE:[a-z0-9]+]]: tensor<100x16xf32>
// CHECK-NOT: scf.for
// CHECK-NOT: loom_rt_index_error
// CHECK: %[[NONE:.*]] = arith.constant -1 : i64
// CHECK: %[[P0:.*]] = linalg.fill ins(%[[NONE]] : i64) outs(%{{.*}} : tensor<1xi64>)
// CHECK: %[[V0:.*]] = linalg.fill ins(%[[NONE]] : i64) outs(%{{.*}} : tensor<1xi64>)
// CHECK: %[[FIRST:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction"]} ins(%[[IDS]] : tensor<1x5xi64>) outs(%[[P0]], %[[V0]] :
// CHECK: arith.cmpi uge
// CHECK: linalg.yield
// CHECK: %[[CLAMPED:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<1x5xi64>)
// CHECK: %[[BAD:.*]] = arith.cmpi uge
// CHECK: arith.select %[[BAD]], %{{.*}}, %{{.*}} : i64
// CHECK: %[[POS:.*]] = tensor.extract %[[FIRST]]#0
// CHECK: %[[ID:.*]] = tensor.extract %[[FIRST]]#1
// CHECK: %[[LO:.*]] = arith.constant -100 : i64
// CHECK: %[[ROWS:.*]] = arith.constant 100 : i64
// CHECK: call @loom_gpu_index_check(%[[CTX]], %{{.*}}, %[[POS]], %[[ID]], %[[LO]], %[[ROWS]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, !llvm.ptr) -> ()
// CHECK: linalg.generic {{.*}} ins(%[[CLAMPED]] : tensor<1x5xi64>)
// CHECK: tensor.extract %[[TABLE]]
// CHECK: func.func private @loom_gpu_index_check(!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, !llvm.ptr)
#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @loom_rt_index_error(!llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
llvm.mlir.global internal constant @op_name("loom.embedding\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @input_name("ids\00") {addr_space = 0 : i32}
func.func @embed(%arg0: !llvm.ptr, %arg1: tensor<1x5xi64>, %arg2: tensor<100x16xf32>) -> tensor<1x5x16xf32> {
  %c5 = arith.constant 5 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %0 = llvm.mlir.addressof @op_name : !llvm.ptr
  %1 = llvm.mlir.addressof @input_name : !llvm.ptr
  %c100 = arith.constant 100 : index
  %c100_i64 = arith.constant 100 : i64
  %c-100_i64 = arith.constant -100 : i64
  %c200_i64 = arith.constant 200 : i64
  scf.for %arg3 = %c0 to %c5 step %c1 {
    %extracted = tensor.extract %arg1[%c0, %arg3] : tensor<1x5xi64>
    %6 = arith.subi %extracted, %c-100_i64 : i64
    %7 = arith.cmpi uge, %6, %c200_i64 : i64
    scf.if %7 {
      func.call @loom_rt_index_error(%arg0, %1, %extracted, %c-100_i64, %c100_i64, %0) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr) -> ()
    }
  }
  %2 = tensor.empty() : tensor<1x5x16xf32>
  %3 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<1x5xi64>) outs(%2 : tensor<1x5x16xf32>) {
  ^bb0(%in: i64, %out: f32):
    %6 = arith.index_cast %in : i64 to index
    %7 = arith.cmpi slt, %6, %c0 : index
    %8 = arith.addi %6, %c100 : index
    %9 = arith.select %7, %8, %6 : index
    %10 = linalg.index 2 : index
    %extracted = tensor.extract %arg2[%9, %10] : tensor<100x16xf32>
    linalg.yield %extracted : f32
  } -> tensor<1x5x16xf32>
  return %3 : tensor<1x5x16xf32>
}

// -----

// A check that is not the CPU lowering's loop is refused.
func.func private @loom_rt_index_error(!llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr)
func.func @bare(%ctx: !llvm.ptr, %id: i64) {
  %lo = arith.constant 0 : i64
  %rows = arith.constant 100 : i64
  // expected-error @below {{index check not in the form of the CPU lowering (a loop reading the ids)}}
  call @loom_rt_index_error(%ctx, %ctx, %id, %lo, %rows, %ctx) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr) -> ()
  return
}
