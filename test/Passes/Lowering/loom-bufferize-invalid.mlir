// RUN: loom-opt %s --loom-bufferize --verify-diagnostics

// An entry whose recorded signature (loom-record-entry-points) does not fit
// it: which argument is state (writable in place) cannot be known, so the
// pass fails rather than guess.
module attributes {loom.entry_points = [{name = "f", type = (!llvm.ptr) -> tensor<4xf32>, arg_attrs = [{}], res_attrs = [{}]}], loom.meshes = []} {
  // expected-error @+1 {{'func.func' op has 2 arguments but its recorded signature (loom.entry_points) 1; run loom-record-entry-points after loom-prepare-entry-points}}
  func.func @f(%ctx: !llvm.ptr, %x: tensor<4xf32>) -> tensor<4xf32> attributes {loom.entry} {
    return %x : tensor<4xf32>
  }
}
