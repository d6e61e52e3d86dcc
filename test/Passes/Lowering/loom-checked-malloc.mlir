// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-checked-malloc --verify-diagnostics | FileCheck %s

// Every call of malloc goes to loom_rt_malloc (the declaration is renamed).
// CHECK-LABEL: llvm.func @loom_rt_malloc(i64) -> !llvm.ptr
// CHECK-LABEL: llvm.func @f
// CHECK: llvm.call @loom_rt_malloc(%{{.*}}) : (i64) -> !llvm.ptr
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @f(%n: i64) -> !llvm.ptr {
  %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
  llvm.return %p : !llvm.ptr
}

// -----

// Both names declared: refused rather than merged.
// expected-error @+1 {{both malloc and loom_rt_malloc are declared}}
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @loom_rt_malloc(i64) -> !llvm.ptr
