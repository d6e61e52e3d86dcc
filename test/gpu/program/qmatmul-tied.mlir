// A tied LM head on CUDA (SmolLM2's q8_0 token_embd): the embedding's table
// is the head's qmatmul weight. Both read the same device-resident blocks:
// loom-gpu-qmatmuls gives the argument its storage type (the bytes of the
// loom_qmm_* kernels) and the embedding a !loom.qtensor view of it, which
// loom-convert-loom-to-linalg reads through (the gather indexes the bytes)
// and erases; the plan counts the table once.
// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points=interleave=false --loom-gpu-qmatmuls | FileCheck %s --check-prefix=TENSORS
// RUN: loom-opt %s --split-input-file --pass-pipeline='builtin.module(loom-prepare-entry-points{interleave=false},loom-record-entry-points,loom-gpu-qmatmuls,loom-convert-loom-to-linalg{gemm=false})' | FileCheck %s --check-prefix=LINALG
// RUN: loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90" -mlir-print-ir-after=loom-gpu-qmatmul-launches 2>&1 >/dev/null | FileCheck %s --check-prefix=LAUNCH
// RUN: loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90" | FileCheck %s

// Decode: one id, the gather then the head's GEMV (64 rows of 64: 4352
// bytes of blocks, resident once).
// TENSORS-LABEL: func.func @decode(
// TENSORS-SAME: %[[T:arg[0-9]+]]: tensor<64x68xi8> {loom.weight = #loom.weight<name = "token_embd">}
// TENSORS: %[[VIEW:.+]] = builtin.unrealized_conversion_cast %[[T]] : tensor<64x68xi8> to !loom.qtensor<64x64, #loom.quant<q8_0>>
// TENSORS: %[[E:.+]] = loom.embedding %[[VIEW]], %arg1 : !loom.qtensor<64x64, #loom.quant<q8_0>>
// TENSORS: loom_cpu.kernel ins(%[[T]], %[[E]] : tensor<64x68xi8>, tensor<1x1x64xf32>)
// TENSORS: func.call @loom_gpu_qmatmul_0(
// The gather reads the blocks themselves; the view is gone.
// LINALG-LABEL: func.func @decode(
// LINALG-SAME: %[[T:arg[0-9]+]]: tensor<64x68xi8>)
// LINALG-NOT: unrealized_conversion_cast
// LINALG-NOT: !loom.qtensor
// LINALG: linalg.generic {{.*}} ins(%arg1 : tensor<1x1xi64>)
// LINALG: tensor.extract %[[T]][
// LINALG: loom_cpu.kernel ins(%[[T]], %{{.*}} : tensor<64x68xi8>, tensor<1x1x64xf32>)
// LINALG-NOT: unrealized_conversion_cast
// LINALG-NOT: !loom.qtensor
// LINALG: func.func private @loom_gpu_qmatmul_0(
// LAUNCH-LABEL: func.func @decode(
// LAUNCH-SAME: %[[T:arg[0-9]+]]: memref<64x68xi8>)
// LAUNCH: gpu.launch_func @{{decode_kernel_[0-9]+}}::@decode_kernel {{.*}}, %[[T]] : memref<64x68xi8>,
// LAUNCH: memref.extract_aligned_pointer_as_index %[[T]] : memref<64x68xi8>
// LAUNCH: gpu.launch_func @loom_qmatmul_kernels::@loom_qmm_q8_0_n64_k64_f32_gemv1 blocks in (%c8,
// One resident upload of the table; the gather kernel and the GEMV both
// read its device copy. Peak: the table and the workspace (520 bytes: the
// id (8), the check's two values (16), the rows and the logits (256 each),
// each at a multiple of 256, the id's place taken again once it is read).
// CHECK-LABEL: llvm.func internal @decode(
// CHECK-SAME: loom_gpu_peak_bytes = 4872 : i64, loom_gpu_resident_bytes = 4352 : i64, loom_gpu_upload_bytes = 8 : i64, loom_gpu_workspace_bytes = 520 : i64
// CHECK: %[[DEV:.+]] = llvm.call @loom_cuda_mgpu_resident(
// CHECK-NOT: llvm.call @loom_cuda_mgpu_resident(
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @{{decode_kernel_[0-9]+}}::@decode_kernel {{.*}}, %[[DEV]] : !llvm.ptr, %[[DEV]] : !llvm.ptr,
// CHECK: %[[W:.+]] = llvm.ptrtoint %[[DEV]] : !llvm.ptr to i64
// CHECK: %[[WP:.+]] = llvm.inttoptr %[[W]] : i64 to !llvm.ptr<1>
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @loom_qmatmul_kernels::@loom_qmm_q8_0_n64_k64_f32_gemv1 {{.*}} args(%[[WP]] : !llvm.ptr<1>,
// CHECK-NOT: llvm.call @loom_cuda_mgpu_resident(
// CHECK: gpu.binary @loom_qmatmul_kernels {{.*}}.target sm_90
// CHECK-SAME: .entry loom_qmm_q8_0_n64_k64_f32_gemv1
func.func @decode(%ids: tensor<1x1xi64> {loom.name = "ids"}) -> tensor<1x1x64xf32> {
  %t = loom.weight "token_embd" : !loom.qtensor<64x64, #loom.quant<q8_0>>
  %e = loom.embedding %t, %ids : !loom.qtensor<64x64, #loom.quant<q8_0>>, tensor<1x1xi64> -> tensor<1x1x64xf32>
  %y = loom.qmatmul %e, %t : tensor<1x1x64xf32>, !loom.qtensor<64x64, #loom.quant<q8_0>> -> tensor<1x1x64xf32>
  return %y : tensor<1x1x64xf32>
}

// -----

// Prefill: 2 x 12 ids (M = 24), the head's tiled kernel on the same blocks.
// LAUNCH-LABEL: func.func @prefill(
// LAUNCH-SAME: %[[T:arg[0-9]+]]: memref<64x68xi8>)
// LAUNCH: gpu.launch_func @{{prefill_kernel_[0-9]+}}::@prefill_kernel {{.*}}, %[[T]] : memref<64x68xi8>,
// LAUNCH: memref.extract_aligned_pointer_as_index %[[T]] : memref<64x68xi8>
// LAUNCH: gpu.launch_func @loom_qmatmul_kernels::@loom_qmm_q8_0_n64_k64_f32_tiled blocks in (%c1{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c256{{.*}}, %c1{{.*}}, %c1{{.*}}) args({{.*}}, %c24_i32 : i32)
// CHECK-LABEL: llvm.func internal @prefill(
// CHECK-SAME: loom_gpu_resident_bytes = 4352 : i64
// CHECK: llvm.call @loom_cuda_mgpu_resident(
// CHECK-NOT: llvm.call @loom_cuda_mgpu_resident(
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @loom_qmatmul_kernels::@loom_qmm_q8_0_n64_k64_f32_tiled
func.func @prefill(%ids: tensor<2x12xi64> {loom.name = "ids"}) -> tensor<2x12x64xf32> {
  %t = loom.weight "token_embd" : !loom.qtensor<64x64, #loom.quant<q8_0>>
  %e = loom.embedding %t, %ids : !loom.qtensor<64x64, #loom.quant<q8_0>>, tensor<2x12xi64> -> tensor<2x12x64xf32>
  %y = loom.qmatmul %e, %t : tensor<2x12x64xf32>, !loom.qtensor<64x64, #loom.quant<q8_0>> -> tensor<2x12x64xf32>
  return %y : tensor<2x12x64xf32>
}
