// RUN: loom-opt %s --verify-roundtrip --loom-lower-pipeline | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --verify-roundtrip --loom-lower-pipeline="gemm=false qmatmul=dequant" | FileCheck %s --check-prefix=NOGEMM

// The lower phase as one registered pipeline: a loom program becomes the
// LLVM dialect with loom_entry_<name> wrappers and checked allocations; the
// entry points' loom-level signatures and the mesh stay on the module for
// the bundle writer.
// CHECK: module attributes {loom.entry_points = [{arg_attrs = [{}, {}, {loom.weight = #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 0>>}], name = "f", res_attrs = [{loom.name = "y"}], type = (!llvm.ptr, tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>}], loom.meshes = [#loom.mesh<tp = 2>]}
// CHECK-NOT: loom.mesh @
// CHECK-DAG: llvm.func @loom_entry_f(%{{.*}}: !llvm.ptr)
// CHECK-DAG: llvm.func @loom_rt_malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.call @loom_rt_malloc
// NOGEMM: llvm.func @loom_entry_f
loom.mesh @m = <tp = 2>
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32> {loom.name = "y"}) {
  %w = loom.weight "w" from <"w.bin", offset = 0> : tensor<8x8xf32>
  %0 = loom.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = loom.exp %0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
