// The lower phase for one CUDA device as its registered pipeline (what
// loomc --target=cuda runs), on the smallest program: the add is one kernel
// compiled for the chip (format=isa: PTX, no ptxas needed), the host code
// is on the runtime's mgpu* functions (one stream: the entry's workspace,
// upload into it, launch, copy back, synchronise; no allocation or free
// per call), the memory plan is on the function, and the
// CPU bundle's loom_entry_<f> wrapper is the only external definition.
// The pipeline's passes alone: loom-gpu-*.mlir; larger programs: mlp.mlir,
// families.mlir, qmatmul.mlir, embedding.mlir.
// RUN: loom-opt %s --loom-lower-gpu-pipeline="format=isa chips=sm_90" | FileCheck %s

// CHECK: module attributes {gpu.container_module, loom.entry_points = [{{.*}}name = "f"
// CHECK: llvm.func internal @f(
// CHECK: %[[S:.*]] = llvm.call @mgpuStreamCreate()
// CHECK-NOT: llvm.call @mgpuMemAlloc(
// CHECK: llvm.call @loom_cuda_mgpu_workspace(
// CHECK-NOT: llvm.call @mgpuMemAlloc(
// CHECK: llvm.call @mgpuMemcpy(
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @f_kernel::@f_kernel
// CHECK: llvm.call @mgpuMemcpy(
// CHECK-NOT: llvm.call @mgpuMemFree(
// CHECK: llvm.call @mgpuStreamSynchronize(%[[S]])
// CHECK: llvm.call @mgpuStreamDestroy(%[[S]])
// CHECK: llvm.func internal @_mlir_ciface_f({{.*}}loom_gpu_peak_bytes = 512 : i64, loom_gpu_resident_bytes = 0 : i64, loom_gpu_upload_bytes = 256 : i64, loom_gpu_workspace_bytes = 512 : i64
// CHECK: gpu.binary @f_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}assembly = "{{.*}}.target sm_90
// CHECK: llvm.func @loom_entry_f(%{{.*}}: !llvm.ptr)
// CHECK-NOT: linalg.
// CHECK-NOT: loom.add
func.func @f(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = loom.add %x, %x : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
