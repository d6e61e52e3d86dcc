// RUN: loom-opt %s --verify-roundtrip --loom-prepare-entry-points --loom-convert-loom-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-linalg-to-loops --convert-scf-to-cf --convert-to-llvm --reconcile-unrealized-casts --loom-pack-entry-points | FileCheck %s

// The launcher calls loom_entry_main(void **args): args[0] results,
// args[1] context, args[2] the input's descriptor. Only the wrapper is
// exported: a function named `main` must not clash with the launcher's.
// CHECK: llvm.func internal @main(
// CHECK: llvm.func internal @_mlir_ciface_main(
// CHECK: llvm.func @loom_entry_main(%[[ARGV:.+]]: !llvm.ptr)
// CHECK: llvm.getelementptr %[[ARGV]][0]
// CHECK: llvm.getelementptr %[[ARGV]][1]
// CHECK: llvm.getelementptr %[[ARGV]][2]
// CHECK: llvm.call @_mlir_ciface_main(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = loom.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
