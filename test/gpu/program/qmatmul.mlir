// Quantized matmuls in the whole-program GPU lowering (PTX for sm_90, no
// toolkit needed): the weight stays in its GGUF blocks (a device-resident
// argument of its storage bytes, never dequantized), the product is one
// launch of a generated kernel: `<base>_gemv<M>` for M <= 8 (128 threads,
// ceil(N / 8) blocks), `<base>_tiled` above (256 threads, 64x64 outputs per
// block), the kernels in one gpu.module.
// RUN: loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90" | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points=interleave=false --loom-gpu-qmatmuls | FileCheck %s --check-prefix=TENSORS
// RUN: loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90" -mlir-print-ir-after=loom-gpu-qmatmul-launches 2>&1 >/dev/null | FileCheck %s --check-prefix=LAUNCH

// Decode-shaped: one row through a q4_1 matmul, then a q8_0 one (SmolLM2's
// two formats); both weights resident (96 * 2 * 20 + 32 * 3 * 34 bytes).
// TENSORS-LABEL: func.func @decode(
// TENSORS-SAME: tensor<96x40xi8> {loom.weight = #loom.weight<name = "w1"
// TENSORS-SAME: tensor<32x102xi8> {loom.weight = #loom.weight<name = "w2"
// TENSORS: loom_cpu.kernel ins(%{{.*}}, %{{.*}} : tensor<96x40xi8>, tensor<1x64xf32>) outs(%{{.*}} : tensor<1x96xf32>)
// TENSORS: func.call @loom_gpu_qmatmul_0(
// TENSORS: loom_cpu.kernel ins(%{{.*}}, %{{.*}} : tensor<32x102xi8>, tensor<1x96xf32>) outs(%{{.*}} : tensor<1x32xf32>)
// TENSORS: func.func private @loom_gpu_qmatmul_0(memref<96x40xi8>, memref<1x64xf32>, memref<1x96xf32>) attributes {loom_gpu_qmatmul = {act = "f32", block = 32 : i64, format = "q4_1", k = 64 : i64, m = 1 : i64, mode = "min", n = 96 : i64, scale = "f16"}}
// TENSORS: func.func private @loom_gpu_qmatmul_1({{.*}}format = "q8_0", k = 96 : i64, m = 1 : i64{{.*}}n = 32 : i64
// LAUNCH-LABEL: func.func @decode(
// LAUNCH: memref.extract_aligned_pointer_as_index %arg2 : memref<96x40xi8>
// LAUNCH: gpu.launch_func  @loom_qmatmul_kernels::@loom_qmm_q4_1_n96_k64_f32_gemv1 blocks in (%c12, %c1{{.*}}, %c1{{.*}}) threads in (%c128, %c1{{.*}}, %c1{{.*}})  args(%{{.*}} : !llvm.ptr<1>, %{{.*}} : !llvm.ptr<1>, %{{.*}} : !llvm.ptr<1>, %c1_i32 : i32)
// LAUNCH: gpu.launch_func  @loom_qmatmul_kernels::@loom_qmm_q8_0_n32_k96_f32_gemv1 blocks in (%c4, %c1{{.*}}, %c1{{.*}}) threads in (%c128{{.*}}, %c1{{.*}}, %c1{{.*}})
// LAUNCH-NOT: func.func private @loom_gpu_qmatmul
// LAUNCH: gpu.module @loom_qmatmul_kernels
// The plan: 7104 resident bytes, the input (256), h (384) and y (128).
// CHECK-LABEL: llvm.func internal @decode(
// CHECK-SAME: loom_gpu_peak_bytes = 7872 : i64, loom_gpu_resident_bytes = 7104 : i64, loom_gpu_upload_bytes = 256 : i64
// CHECK-COUNT-2: llvm.call @loom_cuda_mgpu_resident(
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @loom_qmatmul_kernels::@loom_qmm_q4_1_n96_k64_f32_gemv1 blocks in (%[[G1:.*]], %[[ONE:.*]], %[[ONE]]) threads in (%[[T1:.*]], %[[ONE]], %[[ONE]])
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @loom_qmatmul_kernels::@loom_qmm_q8_0_n32_k96_f32_gemv1
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @loom_qmatmul_kernels {{.*}}.target sm_90
// CHECK-SAME: .entry loom_qmm_q4_1_n96_k64_f32_gemv1
func.func @decode(%x: tensor<1x64xf32>) -> tensor<1x32xf32> {
  %w1 = loom.weight "w1" : !loom.qtensor<96x64, #loom.quant<q4_1>>
  %w2 = loom.weight "w2" : !loom.qtensor<32x96, #loom.quant<q8_0>>
  %h = loom.qmatmul %x, %w1 : tensor<1x64xf32>, !loom.qtensor<96x64, #loom.quant<q4_1>> -> tensor<1x96xf32>
  %y = loom.qmatmul %h, %w2 : tensor<1x96xf32>, !loom.qtensor<32x96, #loom.quant<q8_0>> -> tensor<1x32xf32>
  return %y : tensor<1x32xf32>
}

// -----

// Prefill-shaped: 2 x 40 rows (M = 80) of a rank-3 input, the tiled kernel:
// grid (ceil(96 / 64), ceil(80 / 64)) = (2, 2), 256 threads.
// LAUNCH-LABEL: func.func @prefill(
// LAUNCH: gpu.launch_func  @loom_qmatmul_kernels::@loom_qmm_q4_1_n96_k64_f32_tiled blocks in (%c2, %c2{{.*}}, %c1{{.*}}) threads in (%c256, %c1{{.*}}, %c1{{.*}})  args({{.*}}, %c80_i32 : i32)
// CHECK-LABEL: llvm.func internal @prefill(
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @loom_qmatmul_kernels::@loom_qmm_q4_1_n96_k64_f32_tiled
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @loom_qmatmul_kernels
func.func @prefill(%x: tensor<2x40x64xf32>) -> tensor<2x40x96xf32> {
  %w1 = loom.weight "w1" : !loom.qtensor<96x64, #loom.quant<q4_1>>
  %h = loom.qmatmul %x, %w1 : tensor<2x40x64xf32>, !loom.qtensor<96x64, #loom.quant<q4_1>> -> tensor<2x40x96xf32>
  return %h : tensor<2x40x96xf32>
}
