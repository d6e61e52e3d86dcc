// Collectives of a partitioned program for CUDA (loom-gpu-sync-collectives,
// then loom-gpu-host-program): the bufferized collective stays a call of the
// runtime's ABI on its buffers' addresses, which are now device buffers (the
// runtime's device communicators take them: runtime/cuda/DeviceComm.h), and
// the host program synchronises its stream before the call and starts a new
// chain after it. The driver still refuses collectives for --target=cuda
// (docs/GPU.md, "Collectives on device buffers").
// RUN: loom-opt %s --loom-lower-gpu-pipeline="format=isa chips=sm_90" --mlir-print-ir-after=loom-gpu-host-program 2>&1 >/dev/null | FileCheck %s
// The pass alone (ALONE), on calls as bufferization leaves them:
// RUN: loom-opt %S/Inputs/loom-gpu-sync-collectives-calls.mlir --split-input-file --verify-diagnostics --loom-gpu-sync-collectives | FileCheck %S/Inputs/loom-gpu-sync-collectives-calls.mlir --check-prefix=ALONE

loom.mesh @mesh = <tp = 2>

// The input is uploaded and the output placed in the entry's workspace, the
// stream waited for, then the all-reduce on the two device buffers'
// addresses, then a new chain copies the result out.
// CHECK-LABEL: func.func @sum(
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: call @loom_cuda_mgpu_workspace(
// CHECK: %[[DEV:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<4x16xf32>
// CHECK: %[[T1:.*]] = gpu.memcpy async [%[[T0]]] %[[DEV]]
// CHECK: %[[OUT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<4x16xf32>
// CHECK: memref.extract_aligned_pointer_as_index %[[DEV]]
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: gpu.wait [%[[T1]]]
// CHECK-NEXT: call @loom_rt_all_reduce({{.*}}) {loom_gpu_host_sync}
// CHECK-NEXT: %[[T2:.*]] = gpu.wait async
// CHECK: gpu.memcpy async [%[[T2]]] %{{.*}}, %[[OUT]]
// CHECK: gpu.wait [
// CHECK-NEXT: return
func.func @sum(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
