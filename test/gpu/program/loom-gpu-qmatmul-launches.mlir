// loom-gpu-qmatmul-launches alone, on buffers: a call of a loom_gpu_qmatmul
// declaration (as loom-gpu-qmatmuls made it) becomes a gpu.launch_func of
// the generated kernel the runtime would pick for its batch (M = 1:
// <base>_gemv1, 128 threads, one block per 8 of the 96 rows) on the
// buffers' global addresses and M; the kernels of the spec are appended as
// gpu.module @loom_qmatmul_kernels (named from the spec's format and mode).
// RUN: loom-opt %s --loom-gpu-qmatmul-launches | FileCheck %s

// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[W:[a-z0-9]+]]: memref<96x40xi8>, %[[X:[a-z0-9]+]]: memref<1x64xf32>
// CHECK: %[[Y:.*]] = memref.alloc() : memref<1x96xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: %[[PW:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<1>
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: %[[PX:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<1>
// CHECK: memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: %[[PY:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<1>
// CHECK: %[[M:.*]] = arith.constant 1 : i32
// CHECK: %[[BLOCKS:.*]] = arith.constant 12 : index
// CHECK: %[[THREADS:.*]] = arith.constant 128 : index
// CHECK: gpu.launch_func @loom_qmatmul_kernels::@loom_qmm_q4_1_n96_k64_f32_gemv1 blocks in (%[[BLOCKS]], %{{.*}}, %{{.*}}) threads in (%[[THREADS]], %{{.*}}, %{{.*}}) args(%[[PW]] : !llvm.ptr<1>, %[[PX]] : !llvm.ptr<1>, %[[PY]] : !llvm.ptr<1>, %[[M]] : i32)
// CHECK-NOT: call @loom_gpu_qmatmul_0
// CHECK: return %[[Y]]
// CHECK: gpu.module @loom_qmatmul_kernels
// CHECK: gpu.func @loom_qmm_q4_1_n96_k64_f32_gemv1(
module attributes {gpu.container_module} {
  func.func @decode(%w: memref<96x40xi8>, %x: memref<1x64xf32>) -> memref<1x96xf32> {
    %y = memref.alloc() : memref<1x96xf32>
    call @loom_gpu_qmatmul_0(%w, %x, %y) : (memref<96x40xi8>, memref<1x64xf32>, memref<1x96xf32>) -> ()
    return %y : memref<1x96xf32>
  }
  func.func private @loom_gpu_qmatmul_0(memref<96x40xi8>, memref<1x64xf32>, memref<1x96xf32>) attributes {loom_gpu_qmatmul = {act = "f32", block = 32 : i64, format = "q4_1", k = 64 : i64, m = 1 : i64, mode = "min", n = 96 : i64, scale = "f16"}}
}
