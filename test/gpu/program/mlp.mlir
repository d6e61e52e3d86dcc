// The demo MLP (examples/mlp, mlp-plain.mlir with a batch of 8) through the
// GPU lower phase. Prefix HOST, after loom-gpu-host-program, the input is
// copied per call into its place in the entry's workspace (every buffer of
// a call at a compile-time offset, allocated once) and the weights are
// device-resident
// (loom_cuda_mgpu_resident: uploaded on the first call only), both products are cuBLAS calls on the program's
// stream (transposed weights, m = 8), the bias + GELU chain is one kernel,
// the layer norm a few, everything on one token chain, and the memory plan
// is on the function (8192 bytes of input uploaded per call, 2102272 bytes of
// weights resident, a workspace of 40960 bytes). Prefix FULL, the whole pipeline to PTX for sm_80 and host code on the
// mgpu* functions with the entry wrapper of the CPU bundle.
// RUN: loom-opt %s --loom-prepare-entry-points=interleave=false --loom-record-entry-points --loom-convert-loom-to-linalg=gemm=false --cse --canonicalize --loom-gpu-fuse-elementwise --loom-approximate-math --canonicalize --loom-bufferize --buffer-deallocation-pipeline --convert-bufferization-to-memref --canonicalize --loom-gpu-matmuls-to-cublas --convert-linalg-to-parallel-loops --loom-gpu-map-parallel-loops --convert-parallel-loops-to-gpu --canonicalize --gpu-kernel-outlining --loom-gpu-host-program | FileCheck %s --check-prefix=HOST
// RUN: loom-opt %s --loom-lower-gpu-pipeline="format=isa chips=sm_80" | FileCheck %s --check-prefix=FULL
// A product that is not handed to cuBLAS is a generated kernel.
// RUN: loom-opt %s --loom-lower-gpu-pipeline="format=isa chips=sm_80 cublas=false" | FileCheck %s --check-prefix=NOBLAS

// HOST-LABEL: func.func @mlp(
// HOST-SAME: %[[X:[a-z0-9]+]]: memref<8x256xf32>, %[[W1:[a-z0-9]+]]: memref<1024x256xf32>
// HOST-SAME: loom_gpu_peak_bytes = 2143232 : i64, loom_gpu_resident_bytes = 2102272 : i64, loom_gpu_upload_bytes = 8192 : i64, loom_gpu_workspace_bytes = 40960 : i64
// HOST: %[[T0:.+]] = gpu.wait async
// HOST: call @loom_cuda_mgpu_workspace(
// HOST: %[[DX:[a-z0-9_]+]] = builtin.unrealized_conversion_cast %{{.+}} to memref<8x256xf32>
// HOST: %[[T1:.+]] = gpu.memcpy async [%[[T0]]] %[[DX]], %[[X]]
// HOST: %[[P1:.+]] = memref.extract_aligned_pointer_as_index %[[W1]]
// HOST: call @loom_cuda_mgpu_resident(%{{.+}}, %c1048576_i64) : (!llvm.ptr, i64) -> !llvm.ptr
// HOST: builtin.unrealized_conversion_cast %{{.+}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<1024x256xf32>
// HOST-COUNT-3: call @loom_cuda_mgpu_resident(
// HOST: %[[H:[a-z0-9_]+]] = builtin.unrealized_conversion_cast %{{.+}} to memref<8x1024xf32>
// HOST: %[[S:.+]] = builtin.unrealized_conversion_cast %[[T1]] : !gpu.async.token to !llvm.ptr
// HOST: call @loom_cuda_mgpu_gemm(%[[S]], %c0_i32, %c0_i32, %c1_i32, %c8_i64, %c1024_i64{{(_[0-9]+)?}}, %c256_i64,
// HOST: gpu.launch_func async [%[[T1]]] @mlp_kernel::@mlp_kernel
// HOST: call @loom_cuda_mgpu_gemm(%{{.+}}, %c0_i32, %c0_i32, %c1_i32, %c8_i64, %c256_i64{{(_[0-9]+)?}}, %c1024_i64{{(_[0-9]+)?}},
// HOST-COUNT-5: gpu.launch_func async
// HOST: %[[OUT:.+]] = memref.alloc() {alignment = 64 : i64} : memref<8x256xf32>
// HOST: gpu.memcpy async [%{{.+}}] %[[OUT]], %{{.+}} : memref<8x256xf32>, memref<8x256xf32>
// HOST-NOT: gpu.dealloc
// HOST: gpu.wait [%{{.+}}]
// HOST-NEXT: return %[[OUT]] : memref<8x256xf32>
// HOST-NOT: linalg.
// HOST: func.func private @loom_cuda_mgpu_gemm(!llvm.ptr, i32, i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)

// FULL: llvm.func internal @mlp(
// FULL: llvm.call @mgpuStreamCreate()
// FULL: llvm.call @loom_cuda_mgpu_workspace(
// FULL: llvm.call @mgpuMemcpy(
// FULL: llvm.call @loom_cuda_mgpu_resident(
// FULL: llvm.call @loom_cuda_mgpu_gemm(
// FULL: gpu.launch_func <%{{.+}} : !llvm.ptr> @mlp_kernel::@mlp_kernel blocks in
// FULL: llvm.call @mgpuStreamSynchronize(
// FULL: llvm.call @mgpuStreamDestroy(
// FULL: gpu.binary @mlp_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, {{.*}}assembly = "
// FULL-SAME: .target sm_80
// FULL-SAME: .maxntid 256, 1, 1
// FULL: llvm.func @loom_entry_mlp(

// NOBLAS-NOT: loom_cuda_mgpu_gemm
// NOBLAS-COUNT-8: gpu.launch_func <

func.func @mlp(%x: tensor<8x256xf32> {loom.name = "x"}) -> (tensor<8x256xf32> {loom.name = "y"}) {
  %w1 = loom.weight "fc1.weight" from <"fc1.bin", offset = 0> : tensor<1024x256xf32>
  %b1 = loom.weight "fc1.bias" from <"fc1_bias.bin", offset = 0> : tensor<1024xf32>
  %w2 = loom.weight "fc2.weight" from <"fc2.bin", offset = 0> : tensor<256x1024xf32>
  %b2 = loom.weight "fc2.bias" from <"fc2_bias.bin", offset = 0> : tensor<256xf32>
  %0 = loom.matmul %x, %w1 transpose_b : tensor<8x256xf32>, tensor<1024x256xf32> -> tensor<8x1024xf32>
  %1 = loom.add %0, %b1 : tensor<8x1024xf32>, tensor<1024xf32> -> tensor<8x1024xf32>
  %2 = loom.gelu %1 : tensor<8x1024xf32>
  %3 = loom.matmul %2, %w2 transpose_b : tensor<8x1024xf32>, tensor<256x1024xf32> -> tensor<8x256xf32>
  %4 = loom.add %3, %b2 : tensor<8x256xf32>, tensor<256xf32> -> tensor<8x256xf32>
  %5 = loom.layer_norm %4 axis = -1 epsilon = 1.0e-5 : tensor<8x256xf32> -> tensor<8x256xf32>
  return %5 : tensor<8x256xf32>
}
