// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points | FileCheck %s --enable-var-scope

// The context comes first, weights last (one argument per distinct name),
// and the entry is marked for the C interface.
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[CTX:.+]]: !llvm.ptr, %[[X:.+]]: tensor<4x8xf32>,
// CHECK-SAME: %[[W:.+]]: tensor<8x8xf32> {loom.weight = #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 16>>})
// CHECK-SAME: attributes {llvm.emit_c_interface, loom.entry}
// CHECK-NOT: loom.weight "
// CHECK: loom.matmul %[[X]], %[[W]]
// CHECK: loom.matmul %{{.*}}, %[[W]]
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 16> : tensor<8x8xf32>
  %0 = loom.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %w2 = loom.weight "w" from <"w.bin", offset = 16> : tensor<8x8xf32>
  %1 = loom.matmul %0, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Private functions are not entry points and keep their signature.
// CHECK-LABEL: func.func private @helper(%{{.*}}: tensor<4xf32>)
// CHECK-NOT: loom.entry
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
