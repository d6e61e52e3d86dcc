// loom-gpu-export-upload-constants alone: after loom-pack-entry-points made
// every function internal, loom_gpu_upload_constants is external again (the
// executor finds it with dlsym) and the private globals it reads become
// hidden external ones (one copy, whose host address the entries share).
// RUN: loom-opt %s --split-input-file --loom-gpu-export-upload-constants | FileCheck %s

// CHECK-LABEL: module
// CHECK: llvm.mlir.global external hidden constant @__constant_w(
// CHECK: llvm.mlir.global private constant @__constant_other(
// CHECK: llvm.func @loom_gpu_upload_constants()
// CHECK-NOT: internal
// CHECK: llvm.func internal @other()
llvm.mlir.global private constant @__constant_w(dense<1.0> : tensor<4xf32>) {addr_space = 0 : i32} : !llvm.array<4 x f32>
llvm.mlir.global private constant @__constant_other(dense<2.0> : tensor<4xf32>) {addr_space = 0 : i32} : !llvm.array<4 x f32>
llvm.func internal @loom_gpu_upload_constants() {
  %0 = llvm.mlir.addressof @__constant_w : !llvm.ptr
  llvm.return
}
llvm.func internal @other() {
  %0 = llvm.mlir.addressof @__constant_other : !llvm.ptr
  llvm.return
}

// -----

// Without the function (a program with no constants) nothing changes.
// CHECK-LABEL: module
// CHECK: llvm.mlir.global private constant @__constant_x(
// CHECK: llvm.func internal @f()
llvm.mlir.global private constant @__constant_x(dense<1.0> : tensor<4xf32>) {addr_space = 0 : i32} : !llvm.array<4 x f32>
llvm.func internal @f() {
  %0 = llvm.mlir.addressof @__constant_x : !llvm.ptr
  llvm.return
}
