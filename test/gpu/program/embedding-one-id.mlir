// A decode step's embedding: one id (canonicalization drops the CPU check's
// loop of one trip, leaving an scf.if on the id read before it) from a
// quantized (q8_0) table. The check still becomes the device kernel and the
// host check after the step; the gather dequantizes the clamped id's row
// from the resident blocks (8 rows x 34 bytes).
// RUN: loom-opt %s --pass-pipeline='builtin.module(loom-prepare-entry-points{interleave=false},loom-record-entry-points,loom-convert-loom-to-linalg{gemm=false},canonicalize,loom-gpu-device-index-check)' | FileCheck %s --check-prefix=CHECKS
// RUN: loom-opt %s --loom-lower-gpu-pipeline="format=isa chips=sm_90" | FileCheck %s

// CHECKS-LABEL: func.func @embed_one(
// CHECKS-NOT: scf.if
// CHECKS-NOT: loom_rt_index_error
// CHECKS: %[[FIRST:.+]]:2 = linalg.generic {{.*}} ins(%arg1 : tensor<1x1xi64>)
// CHECKS: %[[CLAMPED:.+]] = linalg.generic {{.*}} ins(%arg1 : tensor<1x1xi64>)
// CHECKS: call @loom_gpu_index_check(%arg0,
// CHECKS: linalg.generic {{.*}} ins(%[[CLAMPED]] : tensor<1x1xi64>)
// CHECKS-NOT: tensor.extract %arg1

// CHECK-LABEL: llvm.func internal @embed_one(
// CHECK-SAME: loom_gpu_resident_bytes = 272 : i64
// CHECK: llvm.call @loom_cuda_mgpu_resident(
// CHECK: gpu.launch_func
// CHECK: llvm.call @mgpuStreamSynchronize(
// CHECK: llvm.call @loom_rt_index_error(%arg0,
// CHECK-NOT: loom_gpu_index_check
func.func @embed_one(%ids: tensor<1x1xi64> {loom.name = "ids"}) -> tensor<1x1x32xf32> {
  %t = loom.weight "table" : !loom.qtensor<8x32, #loom.quant<q8_0>>
  %0 = loom.embedding %t, %ids : !loom.qtensor<8x32, #loom.quant<q8_0>>, tensor<1x1xi64> -> tensor<1x1x32xf32>
  return %0 : tensor<1x1x32xf32>
}
