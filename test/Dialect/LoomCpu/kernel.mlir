// RUN: loom-opt %s --verify-roundtrip | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s

// loom_cpu.kernel (passes/Lowering/KernelCall.td) prints and parses in its
// custom form: the inputs, the destinations, the body on their memrefs.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[R:.+]] = loom_cpu.kernel ins(%{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<16x8xf32>) outs(%[[E]] : tensor<4x16xf32>) {
// CHECK-NEXT: ^bb0(%{{.+}}: memref<4x8xf32>, %{{.+}}: memref<16x8xf32>, %[[C:[^:]+]]: memref<4x16xf32>):
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[C]] : memref<4x16xf32>)
// CHECK-NEXT: } -> tensor<4x16xf32>
// CHECK: return %[[R]]
func.func @gemm(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %r = loom_cpu.kernel ins(%a, %b : tensor<4x8xf32>, tensor<16x8xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%ma: memref<4x8xf32>, %mb: memref<16x8xf32>, %mc: memref<4x16xf32>):
    %z = arith.constant 0.0 : f32
    linalg.fill ins(%z : f32) outs(%mc : memref<4x16xf32>)
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
