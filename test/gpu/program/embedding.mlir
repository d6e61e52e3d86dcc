// The embedding gather for CUDA: its id check becomes a kernel (the first
// id out of range, position and value) and a host check after the step's
// synchronisation that calls the CPU's loom_rt_index_error; the gather
// reads clamped ids (a bad id reads row 0), so no kernel reads outside the
// table. The outputs of a step with a bad id are never returned.
// RUN: loom-opt %s --pass-pipeline='builtin.module(loom-prepare-entry-points{interleave=false},loom-record-entry-points,loom-convert-loom-to-linalg{gemm=false},canonicalize,loom-gpu-device-index-check)' | FileCheck %s --check-prefix=CHECKS
// RUN: loom-opt %s --loom-lower-gpu-pipeline="format=isa chips=sm_90" | FileCheck %s

// On tensors: no host loop; one reduction over the ids into two
// one-element results, the ids clamped for the gather, the check call.
// CHECKS-LABEL: func.func @embed(
// CHECKS-NOT: scf.for
// CHECKS: %[[FIRST:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction"]{{.*}} ins(%arg1 : tensor<1x5xi64>)
// CHECKS: arith.cmpi uge
// CHECKS: linalg.yield
// CHECKS: %[[CLAMPED:.+]] = linalg.generic {{.*}} ins(%arg1 : tensor<1x5xi64>)
// CHECKS: arith.cmpi uge
// CHECKS: arith.select
// CHECKS: %[[POS:.+]] = tensor.extract %[[FIRST]]#0
// CHECKS: %[[ID:.+]] = tensor.extract %[[FIRST]]#1
// CHECKS: call @loom_gpu_index_check(%arg0, %{{.+}}, %[[POS]], %[[ID]],
// CHECKS: linalg.generic {{.*}} ins(%[[CLAMPED]] : tensor<1x5xi64>)
// CHECKS: tensor.extract %arg2

// Host code: the two fills of -1 and the check kernel, its two values copied back (8 bytes each)
// before the gather kernel, the synchronisation, then the CPU's error when
// a position was found; the host copies freed after.
// CHECK-LABEL: llvm.func internal @embed(
// CHECK: llvm.call @loom_cuda_mgpu_resident(
// CHECK-COUNT-3: gpu.launch_func
// CHECK: llvm.call @loom_rt_malloc(
// CHECK: llvm.call @mgpuMemcpy(
// CHECK: llvm.call @loom_rt_malloc(
// CHECK: llvm.call @mgpuMemcpy(
// CHECK: gpu.launch_func
// CHECK: llvm.call @mgpuStreamSynchronize(
// CHECK: llvm.cond_br
// CHECK: llvm.call @loom_rt_index_error(%arg0,
// CHECK: llvm.call @free(
// CHECK: llvm.call @free(
// CHECK: llvm.return
// CHECK-NOT: loom_gpu_index_check
func.func @embed(%ids: tensor<1x5xi64> {loom.name = "ids"}) -> tensor<1x5x16xf32> {
  %t = loom.weight "table" : tensor<100x16xf32>
  %0 = loom.embedding %t, %ids : tensor<100x16xf32>, tensor<1x5xi64> -> tensor<1x5x16xf32>
  %1 = loom.add %0, %0 : tensor<1x5x16xf32>, tensor<1x5x16xf32> -> tensor<1x5x16xf32>
  return %1 : tensor<1x5x16xf32>
}
