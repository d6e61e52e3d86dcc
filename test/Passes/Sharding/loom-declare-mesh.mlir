// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-declare-mesh="mesh=dp=2,tp=4" | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-declare-mesh | FileCheck %s --check-prefix=NONE
// RUN: echo '{"device": "h100", "axes": [{"name": "dp", "size": 2}, {"name": "tp", "size": 4}]}' > %t.json
// RUN: not loom-opt %s --split-input-file --loom-declare-mesh="mesh-json=%t.json" 2> %t.err | FileCheck %s --check-prefix=JSON
// RUN: FileCheck %s --check-prefix=JSONERR < %t.err
// RUN: not loom-opt %s --split-input-file --loom-declare-mesh="mesh=tp=2 name=grid" 2> %t.err | FileCheck %s --check-prefix=NAME

// A module without a mesh gets the one given, as @mesh (or @<name>); from a
// JSON mesh spec, its axes. Without an option nothing is declared.
// CHECK: loom.mesh @mesh = <dp = 2, tp = 4>
// CHECK-LABEL: func.func @no_mesh
// NONE-NOT: loom.mesh
// NONE-LABEL: func.func @no_mesh
// JSON: loom.mesh @mesh = <dp = 2, tp = 4>
// JSON-LABEL: func.func @no_mesh
// NAME: loom.mesh @grid = <tp = 2>
// NAME-LABEL: func.func @no_mesh
func.func @no_mesh(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  return %x : tensor<8x16xf32>
}

// -----

// A module that already declares the mesh asked for keeps its declaration
// (no second one).
// CHECK: loom.mesh @mesh = <dp = 2, tp = 4>
// CHECK-NOT: loom.mesh
// CHECK-LABEL: func.func @same_mesh
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @same_mesh(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  return %x : tensor<8x16xf32>
}

// -----

// The module's mesh under another name is the one the shard phase uses:
// matching, it is kept and no @mesh is added.
// CHECK: loom.mesh @grid = <dp = 2, tp = 4>
// CHECK-NOT: loom.mesh
// CHECK-LABEL: func.func @other_name
loom.mesh @grid = <dp = 2, tp = 4>
func.func @other_name(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  return %x : tensor<8x16xf32>
}

// -----

// A declaration that differs from the mesh asked for is refused, naming both.
// JSONERR: error: the JSON mesh spec's axis 'tp' has size 4 but the program's mesh says 8
// expected-error @+1 {{the program declares mesh dp=2,tp=8 but --mesh says dp=2,tp=4; drop --mesh or the program's loom.mesh}}
loom.mesh @mesh = <dp = 2, tp = 8>
func.func @conflict(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  return %x : tensor<8x16xf32>
}
