// Run-time sizes (docs/GPU.md "Run-time sizes"): dynamic dimensions of the
// inputs become run-time sizes on the device (views of the workspace with
// the host buffer's sizes, copies of run-time sizes, grids computed from
// them; the block size stays 256) and the memory plan is taken at the bound
// max-dim (loomc --gpu-max-tokens). PTX for sm_90, no toolkit needed.
// RUN: loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90 max-dim=128" -mlir-print-ir-after=loom-gpu-host-program 2>&1 >/dev/null | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90 max-dim=128" | FileCheck %s --check-prefix=PTX
// The forward entry of an imported 2-layer llama-like GGUF model (tokens
// 1x?, positions ?, logits 1x?x96): embedding with its device id check,
// RMS norms, rotary, causal GQA attention, SwiGLU and the 15 products
// (rank 3, 1 x ? x K times a weight: each one cuBLAS call on a collapsed
// ? x K view, GEMMS below), all with run-time sizes; the plan at 64 tokens. The
// attention is fused (docs/GPU.md "Fused attention": no 4 x 64 x 64 scores
// and their softmax; 135168 workspace bytes against 177152 unfused).
// RUN: loom-opt %S/Inputs/llama-forward.mlir --loom-lower-gpu-pipeline="format=isa chips=sm_90 max-dim=64" | FileCheck %s --check-prefix=LLAMA
// RUN: loom-opt %S/Inputs/llama-forward.mlir --loom-lower-gpu-pipeline="format=isa chips=sm_90 max-dim=64 fused-attention=false" | FileCheck %s --check-prefix=UNFUSED
// RUN: loom-opt %S/Inputs/llama-forward.mlir --loom-lower-gpu-pipeline="format=isa chips=sm_90 max-dim=64" | grep -c "llvm.call @loom_cuda_mgpu_gemm(" | FileCheck %s --check-prefix=GEMMS
// GEMMS: 15
// UNFUSED: loom_gpu_workspace_bytes = 177152 : i64
// LLAMA-LABEL: llvm.func internal @forward(
// LLAMA-SAME: loom_gpu_max_dim = 64 : i64, loom_gpu_peak_bytes = 455936 : i64, loom_gpu_resident_bytes = 320768 : i64, loom_gpu_upload_bytes = 1024 : i64, loom_gpu_workspace_bytes = 135168 : i64
// LLAMA-NOT: llvm.call @mgpuMemAlloc(
// LLAMA: llvm.call @loom_cuda_mgpu_workspace(
// LLAMA: gpu.launch_func
// LLAMA: llvm.call @mgpuStreamSynchronize(
// LLAMA: llvm.call @loom_rt_index_error(
// Without a bound, refused at the first buffer of a run-time size.
// RUN: not loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90" 2>&1 | FileCheck %s --check-prefix=NOBOUND

// Elementwise + softmax over a run-time number of rows. The plan at 128
// rows: the input (8192 bytes), SiLU's and softmax's outputs (8192 each),
// the row max and sum (512 each); in the workspace softmax's output takes
// the input's place (dead after SiLU) and the sum the max's: 16896 bytes.
// CHECK-LABEL: func.func @ew(
// CHECK-SAME: loom_gpu_max_dim = 128 : i64, loom_gpu_peak_bytes = 16896 : i64, loom_gpu_resident_bytes = 0 : i64, loom_gpu_upload_bytes = 8192 : i64, loom_gpu_workspace_bytes = 16896 : i64
// CHECK: call @loom_cuda_mgpu_workspace(
// CHECK: %[[N:.+]] = memref.dim %arg1, %{{.*}} : memref<?x16xf32>
// CHECK: %[[N64:.+]] = arith.index_cast %[[N]] : index to i64
// CHECK: llvm.insertvalue %[[N64]], %{{.*}}[3, 0]
// CHECK: %[[X:.+]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x16xf32>
// CHECK: gpu.memcpy async [%{{.*}}] %[[X]], %arg1 : memref<?x16xf32>, memref<?x16xf32>
// CHECK: builtin.unrealized_conversion_cast %{{.*}} to memref<?x16xf32>
// CHECK: %[[ELEMS:.+]] = arith.muli %{{.*}}, %c16 : index
// CHECK: %[[GRID:.+]] = affine.apply #{{.*}}()[%[[ELEMS]]]
// CHECK: gpu.launch_func async [%{{.*}}] @ew_kernel::@ew_kernel blocks in (%[[GRID]], %c1, %c1) threads in (%c256, %c1, %c1)
// CHECK: builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// The result copied back into a host buffer of its run-time size.
// CHECK: %[[R:.+]] = memref.dim %{{.*}}, %{{.*}} : memref<?x16xf32>
// CHECK: %[[HOST:.+]] = memref.alloc(%[[R]]) {alignment = 64 : i64} : memref<?x16xf32>
// CHECK: gpu.memcpy async [%{{.*}}] %[[HOST]], %{{.*}} : memref<?x16xf32>, memref<?x16xf32>
// CHECK: gpu.wait [%{{.*}}]
// CHECK: return %[[HOST]]
// PTX-LABEL: llvm.func internal @ew(
// PTX: llvm.call @loom_cuda_mgpu_workspace(
// PTX: gpu.binary @ew_kernel {{.*}}.target sm_90
// NOBOUND: error: buffer of type 'memref<?x16xf32>' has a run-time size and no bound was given: give the largest size of the dynamic dimensions (loomc --gpu-max-tokens N, loom-lower-gpu-pipeline max-dim=N)
func.func @ew(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = loom.silu %x : tensor<?x16xf32>
  %1 = loom.softmax %0 axis = -1 : tensor<?x16xf32>
  return %1 : tensor<?x16xf32>
}

// -----

// A product with a run-time M through cuBLAS: m read from the buffer.
// CHECK-LABEL: func.func @mm(
// CHECK-SAME: loom_gpu_max_dim = 128 : i64, loom_gpu_peak_bytes = 26624 : i64, loom_gpu_resident_bytes = 2048 : i64, loom_gpu_upload_bytes = 8192 : i64, loom_gpu_workspace_bytes = 24576 : i64
// CHECK: builtin.unrealized_conversion_cast %{{.*}} to memref<?x32xf32>
// CHECK: %[[M:.+]] = memref.dim %{{.*}}, %{{.*}} : memref<?x16xf32>
// CHECK: %[[M64:.+]] = arith.index_cast %[[M]] : index to i64
// CHECK: call @loom_cuda_mgpu_gemm(%{{.*}}, %c0_i32, %c0_i32, %c0_i32, %[[M64]], %c32_i64, %c16_i64,
// NOBOUND: error: buffer of type 'memref<?x16xf32>' has a run-time size and no bound was given
func.func @mm(%x: tensor<?x16xf32>) -> tensor<?x32xf32> {
  %w = loom.weight "w" : tensor<16x32xf32>
  %0 = loom.matmul %x, %w : tensor<?x16xf32>, tensor<16x32xf32> -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

// A q4_1 qmatmul with a run-time M (1 x ? rows): both the GEMV for one row
// (a decode step) and the tiled kernel are launched, the one not chosen
// with 0 rows (it returns at once); the tiled grid's y from its rows (at
// least one block). The plan at 128 rows: x (32768), y (49152), the
// resident blocks (3840).
// CHECK-LABEL: func.func @qmm(
// CHECK-SAME: loom_gpu_max_dim = 128 : i64, loom_gpu_peak_bytes = 85760 : i64, loom_gpu_resident_bytes = 3840 : i64, loom_gpu_upload_bytes = 32768 : i64, loom_gpu_workspace_bytes = 81920 : i64
// CHECK: builtin.unrealized_conversion_cast %{{.*}} to memref<1x?x96xf32>
// CHECK: %[[ROWS:.+]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NOT: arith.muli
// CHECK: %[[ONE:.+]] = arith.cmpi eq, %[[ROWS]], %c1{{.*}} : index
// CHECK: %[[GR:.+]] = arith.select %[[ONE]], %c1{{.*}}, %c0{{.*}} : index
// CHECK: %[[TR:.+]] = arith.select %[[ONE]], %c0{{.*}}, %[[ROWS]] : index
// CHECK: %[[G32:.+]] = arith.index_cast %[[GR]] : index to i32
// CHECK: gpu.launch_func async [%{{.*}}] @loom_qmatmul_kernels::@loom_qmm_q4_1_n96_k64_f32_gemv1 blocks in (%c12, %c1{{.*}}, %c1{{.*}}) threads in (%c128, {{.*}} args({{.*}}, %[[G32]] : i32)
// CHECK: %[[CD:.+]] = arith.ceildivui %[[TR]], %c64 : index
// CHECK: %[[GY:.+]] = arith.maxui %[[CD]], %c1{{.*}} : index
// CHECK: %[[T32:.+]] = arith.index_cast %[[TR]] : index to i32
// CHECK: gpu.launch_func async [%{{.*}}] @loom_qmatmul_kernels::@loom_qmm_q4_1_n96_k64_f32_tiled blocks in (%c2, %[[GY]], %{{.*}}) threads in (%c256, {{.*}} args({{.*}}, %[[T32]] : i32)
// PTX-LABEL: llvm.func internal @qmm(
// PTX: gpu.binary @loom_qmatmul_kernels
// PTX-SAME: .entry loom_qmm_q4_1_n96_k64_f32_gemv1
// PTX-SAME: .entry loom_qmm_q4_1_n96_k64_f32_tiled
func.func @qmm(%x: tensor<1x?x64xf32>) -> tensor<1x?x96xf32> {
  %w1 = loom.weight "w1" : !loom.qtensor<96x64, #loom.quant<q4_1>>
  %h = loom.qmatmul %x, %w1 : tensor<1x?x64xf32>, !loom.qtensor<96x64, #loom.quant<q4_1>> -> tensor<1x?x96xf32>
  return %h : tensor<1x?x96xf32>
}
