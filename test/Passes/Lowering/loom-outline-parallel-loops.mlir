// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-outline-parallel-loops | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-outline-parallel-loops --convert-scf-to-cf --convert-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// A 2-D elementwise loop: the outer dimension is split over the threads
// (the closure carries both memrefs and the bounds), the inner one stays a
// loop inside the outlined body. The grain is estimated at run time.
// CHECK-LABEL: func.func private @add_par0(
// CHECK-SAME: %[[CL:.+]]: !llvm.ptr, %[[B:.+]]: i64, %[[E:.+]]: i64)
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<?x64xf32>
// CHECK: scf.for %[[L:.+]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[J:.+]] = %{{.*}} to %{{.*}} step
// CHECK: memref.load
// CHECK: arith.addf
// CHECK: memref.store
// CHECK-LABEL: func.func @add(
// CHECK-NOT: scf.parallel
// CHECK: %[[CLOSURE:.+]] = llvm.alloca
// CHECK: llvm.store
// CHECK: %[[FN:.+]] = constant @add_par0 : (!llvm.ptr, i64, i64) -> ()
// CHECK: call @loom_rt_parallel_for(%{{.*}}, %{{.*}}, %{{.*}}, %[[FN]], %[[CLOSURE]])
// LLVM-LABEL: llvm.func @add(
// LLVM: llvm.mlir.addressof @add_par0
// LLVM: llvm.call @loom_rt_parallel_for
func.func @add(%a: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %a, %c0 : memref<?x64xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c64) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<?x64xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %out[%i, %j] : memref<?x64xf32>
    scf.reduce
  }
  return
}

// -----

// A body with an inner (reduction) loop: every parallel dimension is
// linearised (heads x rows of attention scores), delinearised in the body;
// an explicit loom.parallel_grain is passed as it is.
// CHECK-LABEL: func.func private @scores_par0(
// CHECK: scf.for %[[L:.+]] = %{{.*}} to %{{.*}} step
// CHECK: arith.remui %[[L]]
// CHECK: arith.divui %[[L]]
// CHECK: scf.for
// CHECK: arith.mulf
// CHECK-LABEL: func.func @scores(
// CHECK: %[[G:.+]] = arith.constant 3 : i64
// CHECK: call @loom_rt_parallel_for(%{{.*}}, %{{.*}}, %[[G]],
func.func @scores(%q: memref<8x16x32xf32>, %k: memref<8x32x16xf32>, %s: memref<8x16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%h, %i) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) {
    scf.for %j = %c0 to %c16 step %c1 {
      scf.for %d = %c0 to %c32 step %c1 {
        %a = memref.load %q[%h, %i, %d] : memref<8x16x32xf32>
        %b = memref.load %k[%h, %d, %j] : memref<8x32x16xf32>
        %acc = memref.load %s[%h, %i, %j] : memref<8x16x16xf32>
        %p = arith.mulf %a, %b : f32
        %r = arith.addf %acc, %p : f32
        memref.store %r, %s[%h, %i, %j] : memref<8x16x16xf32>
      }
    }
    scf.reduce
  } {loom.parallel_grain = 3 : i64}
  return
}

// -----

// Loops that stay on one thread: one with a reduction result, one inside
// another loop, one whose body calls the runtime (a collective must never
// run on a pool thread). Nothing is outlined and nothing is declared.
// CHECK-LABEL: func.func @serial(
// CHECK-NOT: loom_rt_parallel_for
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: call @loom_rt_barrier
func.func private @loom_rt_barrier(!llvm.ptr, i64)
func.func @serial(%a: memref<64xf32>, %ctx: !llvm.ptr) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.parallel (%i) = (%c0) to (%c64) step (%c1) init (%zero) -> f32 {
    %x = memref.load %a[%i] : memref<64xf32>
    scf.reduce(%x : f32) {
    ^bb0(%l: f32, %r: f32):
      %s = arith.addf %l, %r : f32
      scf.reduce.return %s : f32
    }
  }
  scf.for %t = %c0 to %c64 step %c1 {
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      memref.store %sum, %a[%i] : memref<64xf32>
      scf.reduce
    }
  }
  %m = arith.constant 1 : i64
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    func.call @loom_rt_barrier(%ctx, %m) : (!llvm.ptr, i64) -> ()
    scf.reduce
  }
  return %sum : f32
}

// -----

// A constant from above (canonicalization hoists them, vector splats of the
// quantized kernels included) is made again inside the body: it does not
// travel in the closure, and a vector type does not keep the loop serial.
// CHECK-LABEL: func.func private @splat_par0(
// CHECK: arith.constant dense<2.000000e+00> : vector<16xf32>
// CHECK: vector.store
// CHECK-LABEL: func.func @splat(
// CHECK: llvm.alloca %{{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>, i64)>
// CHECK: call @loom_rt_parallel_for
func.func @splat(%out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %two = arith.constant dense<2.0> : vector<16xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c16) {
    vector.store %two, %out[%i] : memref<?xf32>, vector<16xf32>
    scf.reduce
  } {loom.parallel_grain = 4 : i64}
  return
}
