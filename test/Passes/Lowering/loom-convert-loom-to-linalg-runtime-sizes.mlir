// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-convert-loom-to-linalg | FileCheck %s --enable-var-scope

// torch MHA's [S*B, E] -> [S, B, E] with S and B given at run time: the
// input viewed as a vector, copied into a result of the given sizes at the
// row-major index (the types alone would put all of S*B in the first
// dimension; an expand_shape with S and B in one group crashes MLIR 22's
// expand-strided-metadata).
// CHECK-LABEL: func.func @merged
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x64xf32>, %[[S:[^:]+]]: index, %[[B:[^:]+]]: index
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1]] : tensor<?x64xf32> into tensor<?xf32>
// CHECK: tensor.empty(%[[S]], %[[B]]) : tensor<?x?x64xf32>
// CHECK: linalg.generic
// CHECK: tensor.extract %[[FLAT]]
func.func @merged(%x: tensor<?x64xf32>, %s: index, %b: index) -> tensor<?x?x64xf32> {
  %0 = loom.reshape %x sizes(%s, %b) : tensor<?x64xf32> -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

// Without sizes, two dynamic dims in the same place are not assumed equal:
// [?, ?, 64] -> [?, 64] collapses the first two (the second dynamic size is
// the element count over 64), never passes the first one through.
// CHECK-LABEL: func.func @infer
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<?x?x64xf32> into tensor<?x64xf32>
// CHECK-NOT: tensor.expand_shape
func.func @infer(%x: tensor<?x?x64xf32>) -> tensor<?x64xf32> {
  %0 = loom.reshape %x : tensor<?x?x64xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// A broadcast of a scalar to a run-time [S, S] (ConstantOfShape of a
// dynamic sequence length) takes its sizes from the operands.
// CHECK-LABEL: func.func @splat
// CHECK-SAME: %[[N:[^:]+]]: index
// CHECK: tensor.empty(%[[N]], %[[N]]) : tensor<?x?xf32>
// CHECK: linalg.generic
func.func @splat(%c: tensor<f32>, %n: index) -> tensor<?x?xf32> {
  %0 = loom.broadcast %c sizes(%n, %n) : tensor<f32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// loom.iota of a run-time length: a generic writing its index.
// CHECK-LABEL: func.func @iota
// CHECK-SAME: %[[N:[^:]+]]: index
// CHECK: tensor.empty(%[[N]]) : tensor<?xi64>
// CHECK: linalg.index 0
// CHECK: arith.index_cast
func.func @iota(%n: index) -> tensor<?xi64> {
  %0 = loom.iota size(%n) : tensor<?xi64>
  return %0 : tensor<?xi64>
}
