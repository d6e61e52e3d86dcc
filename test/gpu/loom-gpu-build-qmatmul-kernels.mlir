// loom-gpu-build-qmatmul-kernels alone (loomc --target=cuda-kernels): each
// loom.qmatmul names its kernel family in loom.gpu_kernel
// ("loom_qmm_<format>[_b<block>_<mode>_<scale>]_n<N>_k<K>_<act>", the
// names the runtime and bundles use), and the kernels of every family are
// appended once as gpu.module @loom_qmatmul_kernels. Running it twice
// rebuilds the module instead of adding a second one.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-gpu-build-qmatmul-kernels | FileCheck %s
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-gpu-build-qmatmul-kernels --loom-gpu-build-qmatmul-kernels | FileCheck %s --check-prefix=TWICE

// CHECK-LABEL: func.func @formats(
// CHECK: loom.qmatmul {{.*}} {loom.gpu_kernel = "loom_qmm_q4_1_n32_k64_f32"}
// CHECK: loom.qmatmul {{.*}} {loom.gpu_kernel = "loom_qmm_int8_b64_min_bf16_n32_k128_f16"}
// CHECK: loom.qmatmul {{.*}} {loom.gpu_kernel = "loom_qmm_int4_b32_zp_f32_n32_k64_f32"}
// CHECK: loom.qmatmul {{.*}} {loom.gpu_kernel = "loom_qmm_int4_b128_sym_f16_n32_k128_f32"}
// CHECK: gpu.module @loom_qmatmul_kernels
// CHECK-DAG: gpu.func @loom_qmm_q4_1_n32_k64_f32_gemv1(
// CHECK-DAG: gpu.func @loom_qmm_q4_1_n32_k64_f32_tiled(
// CHECK-DAG: gpu.func @loom_qmm_int8_b64_min_bf16_n32_k128_f16_gemv8(
// CHECK-DAG: gpu.func @loom_qmm_int4_b32_zp_f32_n32_k64_f32_gemv1(
// CHECK-DAG: gpu.func @loom_qmm_int4_b128_sym_f16_n32_k128_f32_tiled(
// TWICE-COUNT-1: gpu.module @loom_qmatmul_kernels
// TWICE-NOT: gpu.module
func.func @formats(%x: tensor<1x64xf32>, %h: tensor<2x128xf16>, %z: tensor<1x128xf32>,
                   %w1: !loom.qtensor<32x64, #loom.quant<q4_1>>,
                   %w2: !loom.qtensor<32x128, #loom.quant<int8, block = 64, mode = min, scale = bf16>>,
                   %w3: !loom.qtensor<32x64, #loom.quant<int4, block = 32, mode = zero_point, scale = f32>>,
                   %w4: !loom.qtensor<32x128, #loom.quant<int4, block = 128, mode = symmetric, scale = f16>>)
    -> (tensor<1x32xf32>, tensor<2x32xf16>, tensor<1x32xf32>, tensor<1x32xf32>) {
  %0 = loom.qmatmul %x, %w1 : tensor<1x64xf32>, !loom.qtensor<32x64, #loom.quant<q4_1>> -> tensor<1x32xf32>
  %1 = loom.qmatmul %h, %w2 : tensor<2x128xf16>, !loom.qtensor<32x128, #loom.quant<int8, block = 64, mode = min, scale = bf16>> -> tensor<2x32xf16>
  %2 = loom.qmatmul %x, %w3 : tensor<1x64xf32>, !loom.qtensor<32x64, #loom.quant<int4, block = 32, mode = zero_point, scale = f32>> -> tensor<1x32xf32>
  %3 = loom.qmatmul %z, %w4 : tensor<1x128xf32>, !loom.qtensor<32x128, #loom.quant<int4, block = 128, mode = symmetric, scale = f16>> -> tensor<1x32xf32>
  return %0, %1, %2, %3 : tensor<1x32xf32>, tensor<2x32xf16>, tensor<1x32xf32>, tensor<1x32xf32>
}

// -----

// A qmatmul the kernels do not cover is refused at the op, saying why.
func.func @bf16(%x: tensor<1x64xbf16>, %w: !loom.qtensor<32x64, #loom.quant<q8_0>>) -> tensor<1x32xbf16> {
  // expected-error @below {{no GPU kernel for this qmatmul: bf16 activations are not generated: use f32 or f16}}
  %0 = loom.qmatmul %x, %w : tensor<1x64xbf16>, !loom.qtensor<32x64, #loom.quant<q8_0>> -> tensor<1x32xbf16>
  return %0 : tensor<1x32xbf16>
}
