// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-prepare-entry-points --loom-record-entry-points --verify-diagnostics | FileCheck %s

// Each entry point's signature (context, inputs with their names and
// state, weights with their storage, results) and the mesh are recorded on
// the module; private functions are not entry points.
// CHECK: module attributes {loom.entry_points = [{arg_attrs = [{}, {loom.name = "x"}, {loom.weight = #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 16>>}], name = "f", res_attrs = [{}], type = (!llvm.ptr, tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>}], loom.meshes = [#loom.mesh<dp = 2>]}
loom.mesh @m = <dp = 2>
func.func @f(%x: tensor<4x8xf32> {loom.name = "x"}) -> tensor<4x8xf32> {
  %w = loom.weight "w" from <"w.bin", offset = 16> : tensor<8x8xf32>
  %0 = loom.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = call @g(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
func.func private @g(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// The attribute is checked when read back.
// expected-error @+1 {{'loom.entry_points' is an array attribute of the module written by loom-record-entry-points}}
module attributes {loom.entry_points = [{name = "f"}]} {
}
