// The llama op families through the GPU lower phase, each to kernels (PTX
// for sm_90, no toolkit needed): what each becomes on the host side.
// RUN: loom-opt %s --split-input-file --loom-lower-gpu-pipeline="format=isa chips=sm_90" | FileCheck %s

// Softmax: max, exp-sum and the division, each a kernel over rows.
// CHECK-LABEL: llvm.func internal @softmax(
// CHECK-COUNT-6: gpu.launch_func
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @softmax_kernel {{.*}}.target sm_90
func.func @softmax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = loom.softmax %x axis = -1 : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// RMS norm with its weight (an uploaded argument).
// CHECK-LABEL: llvm.func internal @rms_norm(
// CHECK: llvm.call @mgpuMemcpy(
// CHECK-COUNT-3: gpu.launch_func
// CHECK-NOT: gpu.launch_func
func.func @rms_norm(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %w = loom.weight "w" : tensor<16xf32>
  %0 = loom.rms_norm %x scale(%w : tensor<16xf32>) epsilon = 1.0e-5 : tensor<4x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Rotary: the table (cos and sin, one kernel with two results) and the
// rotation; sin/cos are polynomials (no libdevice call left in the PTX).
// CHECK-LABEL: llvm.func internal @rotary(
// CHECK-COUNT-2: gpu.launch_func
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: __nv_
func.func @rotary(%pos: tensor<5xi64>, %q: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %cos, %sin = loom.rotary_table %pos theta = 1.0e4 dim = 8 : tensor<5xi64> -> tensor<5x4xf32>
  %0 = loom.rotary %q, %cos, %sin style = half : tensor<1x2x5x8xf32>, tensor<5x4xf32> -> tensor<1x2x5x8xf32>
  return %0 : tensor<1x2x5x8xf32>
}

// -----

// An elementwise chain in f16 (SwiGLU's silu * up) is one kernel.
// CHECK-LABEL: llvm.func internal @swiglu(
// CHECK-COUNT-1: gpu.launch_func
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @swiglu_kernel {{.*}}.target sm_90
func.func @swiglu(%a: tensor<4x32xf16>, %b: tensor<4x32xf16>) -> tensor<4x32xf16> {
  %0 = loom.silu %a : tensor<4x32xf16>
  %1 = loom.mul %0, %b : tensor<4x32xf16>, tensor<4x32xf16> -> tensor<4x32xf16>
  return %1 : tensor<4x32xf16>
}

// -----

// Grouped-query causal attention: its batched products are not cuBLAS
// calls yet (loom_cuda_gemm is not batched), so they are generated kernels
// like the rest: correct, not fast.
// CHECK-LABEL: llvm.func internal @attention(
// CHECK-NOT: loom_cuda_mgpu_gemm
// CHECK: gpu.launch_func
func.func @attention(%q: tensor<1x9x4x8xf32>, %k: tensor<1x3x4x8xf32>, %v: tensor<1x3x4x8xf32>) -> tensor<1x9x4x8xf32> {
  %0 = loom.attention %q, %k, %v causal : tensor<1x9x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32> -> tensor<1x9x4x8xf32>
  return %0 : tensor<1x9x4x8xf32>
}
