// RUN: loom-gpu-kernels %s --emit=mlir | FileCheck %s

// Every loom.qmatmul names its kernel family in loom.gpu_kernel, and the
// families (GEMV for batch 1..8, tiled above) land in one gpu.module.
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @mlp
// CHECK: loom.qmatmul {{.*}} {loom.gpu_kernel = "loom_qmm_q4_0_n96_k64_f32"}
// CHECK: loom.qmatmul {{.*}} {loom.gpu_kernel = "loom_qmm_int4_b128_sym_f16_n64_k256_f16"}
// CHECK: loom.qmatmul {{.*}} {loom.gpu_kernel = "loom_qmm_q8_0_n96_k64_f32"}
// CHECK: gpu.module @loom_qmatmul_kernels
// CHECK: gpu.func @loom_qmm_q4_0_n96_k64_f32_gemv1(%{{.*}}: !llvm.ptr<1> {llvm.noalias, llvm.readonly}, %{{.*}}: !llvm.ptr<1> {llvm.noalias, llvm.readonly}, %{{.*}}: !llvm.ptr<1> {llvm.noalias}, %{{.*}}: i32) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.shuffle xor
// CHECK: gpu.func @loom_qmm_q4_0_n96_k64_f32_gemv8(
// CHECK: gpu.func @loom_qmm_q4_0_n96_k64_f32_tiled({{.*}}) workgroup(%{{.*}} : memref<32x68xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32x68xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: gpu.barrier
// f16 activations, 4-bit codes: f16x2 products (docs/GPU.md, "packed").
// CHECK: gpu.func @loom_qmm_int4_b128_sym_f16_n64_k256_f16_gemv1(
// CHECK: llvm.intr.fma({{.*}}) : (vector<2xf16>, vector<2xf16>, vector<2xf16>) -> vector<2xf16>
// CHECK: gpu.func @loom_qmm_int4_b128_sym_f16_n64_k256_f16_tiled(
// CHECK: gpu.func @loom_qmm_q8_0_n96_k64_f32_gemv1(
// CHECK-NOT: gpu.func @loom_qmm_q4_0_n96_k64_f32_gemv1(
func.func @mlp(%x: tensor<1x64xf32>, %w1: !loom.qtensor<96x64, #loom.quant<q4_0>>,
               %h: tensor<4x256xf16>, %w2: !loom.qtensor<64x256, #loom.quant<int4, block = 128, mode = symmetric, scale = f16>>,
               %w3: !loom.qtensor<96x64, #loom.quant<q8_0>>)
    -> (tensor<1x96xf32>, tensor<4x64xf16>, tensor<1x96xf32>, tensor<1x96xf32>) {
  %0 = loom.qmatmul %x, %w1 : tensor<1x64xf32>, !loom.qtensor<96x64, #loom.quant<q4_0>> -> tensor<1x96xf32>
  %1 = loom.qmatmul %h, %w2 : tensor<4x256xf16>, !loom.qtensor<64x256, #loom.quant<int4, block = 128, mode = symmetric, scale = f16>> -> tensor<4x64xf16>
  %2 = loom.qmatmul %x, %w3 : tensor<1x64xf32>, !loom.qtensor<96x64, #loom.quant<q8_0>> -> tensor<1x96xf32>
  // A second use of the same shape and format shares the kernels.
  %3 = loom.qmatmul %x, %w1 : tensor<1x64xf32>, !loom.qtensor<96x64, #loom.quant<q4_0>> -> tensor<1x96xf32>
  return %0, %1, %2, %3 : tensor<1x96xf32>, tensor<4x64xf16>, tensor<1x96xf32>, tensor<1x96xf32>
}
