// loom-gpu-qmatmuls alone, after loom-prepare-entry-points: the qmatmul
// becomes a loom_cpu.kernel over (weight bytes, x, y) calling a private
// declaration that carries the kernel spec in the quant vocabulary's names
// (format, mode; loom/Support/QuantFormat.h), and the weight argument takes
// its storage type (96 rows of 2 q4_1 blocks of 20 bytes). The refusals are
// qmatmul-errors.mlir's; the whole pipeline is qmatmul.mlir's.
// RUN: loom-opt %s --loom-gpu-qmatmuls | FileCheck %s

// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<1x64xf32>, %[[W:[a-z0-9]+]]: tensor<96x40xi8> {loom.weight = #loom.weight<name = "w1">}
// CHECK: %[[Y:.*]] = tensor.empty() : tensor<1x96xf32>
// CHECK: loom_cpu.kernel ins(%[[W]], %[[X]] : tensor<96x40xi8>, tensor<1x64xf32>) outs(%[[Y]] : tensor<1x96xf32>)
// CHECK: func.call @loom_gpu_qmatmul_0(
// CHECK-NOT: loom.qmatmul
// CHECK: func.func private @loom_gpu_qmatmul_0(memref<96x40xi8>, memref<1x64xf32>, memref<1x96xf32>) attributes {loom_gpu_qmatmul = {act = "f32", block = 32 : i64, format = "q4_1", k = 64 : i64, m = 1 : i64, mode = "min", n = 96 : i64, scale = "f16"}}
func.func @decode(%ctx: !llvm.ptr, %x: tensor<1x64xf32>, %w: !loom.qtensor<96x64, #loom.quant<q4_1>> {loom.weight = #loom.weight<name = "w1">}) -> tensor<1x96xf32> attributes {llvm.emit_c_interface, loom.entry} {
  %0 = loom.qmatmul %x, %w : tensor<1x64xf32>, !loom.qtensor<96x64, #loom.quant<q4_1>> -> tensor<1x96xf32>
  return %0 : tensor<1x96xf32>
}
