// loom-gpu-map-parallel-loops alone: each outermost scf.parallel of host
// code is collapsed to one dimension and tiled by block-size, the tiles
// mapped to block_x, a tile's elements to thread_x, inner parallel loops
// run sequentially in a thread.
// RUN: loom-opt %s --split-input-file --loom-gpu-map-parallel-loops=block-size=128 | FileCheck %s
// RUN: not loom-opt %s --split-input-file --loom-gpu-map-parallel-loops=block-size=2048 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: loom-gpu-map-parallel-loops: block-size 2048 is not in 1..1024

// CHECK-LABEL: func.func @add(
// CHECK: %[[N:.*]] = arith.muli %{{.*}}, %c64{{.*}} : index
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[STEP:.*]] = arith.muli %{{.*}}, %[[C128]] : index
// CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[N]]) step (%[[STEP]])
// CHECK: scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%[[STEP]])
// CHECK: memref.load
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
func.func @add(%a: memref<16x64xf32>, %b: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<16x64xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %b[%i, %j] : memref<16x64xf32>
    scf.reduce
  }
  return
}

// -----

// An inner parallel loop (a reduction's row) runs sequentially in a thread.
// CHECK-LABEL: func.func @nested(
// CHECK: processor = sequential
// CHECK: processor = thread_x
// CHECK: processor = block_x
func.func @nested(%a: memref<16x64xf32>, %b: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c64) step (%c1) {
      %x = memref.load %a[%i, %j] : memref<16x64xf32>
      memref.store %x, %b[%i, %j] : memref<16x64xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}
