// Without the runtime's GEMM (the GPU lowering, --no-gemm), x [..., M, K]
// times a rank-2 weight is one rank-2 product on a collapsed view of x,
// its result expanded back: no copies (tensor.collapse_shape /
// expand_shape), and a rank-2 contraction for cuBLAS on the GPU.
// RUN: loom-opt %s --loom-convert-loom-to-linalg="gemm=false" | FileCheck %s

// CHECK-LABEL: func.func @linear(
// CHECK: %[[X:.+]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<1x?x64xf32> into tensor<?x64xf32>
// CHECK: %[[Y:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[X]], %arg1 : tensor<?x64xf32>, tensor<32x64xf32>)
// CHECK: tensor.expand_shape %[[Y]] {{\[\[}}0, 1], [2]] output_shape [1, %{{.+}}, 32] : tensor<?x32xf32> into tensor<1x?x32xf32>
func.func @linear(%x: tensor<1x?x64xf32>, %w: tensor<32x64xf32>) -> tensor<1x?x32xf32> {
  %y = loom.matmul %x, %w transpose_b : tensor<1x?x64xf32>, tensor<32x64xf32> -> tensor<1x?x32xf32>
  return %y : tensor<1x?x32xf32>
}

// The result type knows a size that x does not: expanded by x's sizes,
// then cast.
// CHECK-LABEL: func.func @refined(
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<?x16x64xf32> into tensor<?x64xf32>
// CHECK: %[[E:.+]] = tensor.expand_shape {{.*}} : tensor<?x32xf32> into tensor<?x16x32xf32>
// CHECK: tensor.cast %[[E]] : tensor<?x16x32xf32> to tensor<2x16x32xf32>
func.func @refined(%x: tensor<?x16x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x16x32xf32> {
  %y = loom.matmul %x, %w transpose_b : tensor<?x16x64xf32>, tensor<32x64xf32> -> tensor<2x16x32xf32>
  return %y : tensor<2x16x32xf32>
}
