// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-loop-repeated-layers | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --split-input-file --loom-loop-repeated-layers --convert-scf-to-cf --convert-to-llvm --reconcile-unrealized-casts --loom-pack-entry-points | FileCheck %s --enable-var-scope --check-prefix=PACK

// Three layers: the residual stream is carried, the context and %pos are
// the same in every call, each layer's weight (arguments 3, 5, 7) and
// cache (4, 6, 8) are read from the launcher's array at args[k + 1]; they
// leave the signature, which gains the array, and loom.arg_slots maps the
// rest (results pointer at args[0], so argument k is args[k + 1]).
// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%[[CTX:[^:]+]]: !llvm.ptr, %[[X:[^:]+]]: memref<4x8xf32>, %[[POS:[^:]+]]: memref<?xi64>, %[[ARGV:[^:]+]]: !llvm.ptr)
// CHECK-SAME: loom.arg_slots = array<i64: 1, 2, 3, -1>
// CHECK: %[[R:.+]] = scf.for %[[I:.+]] = %c0 to %c3 step %c1 iter_args(%[[H:.+]] = %[[X]])
// CHECK: %[[II:.+]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[WS:.+]] = arith.addi %{{.+}}, %c4_i64
// CHECK: %[[WA:.+]] = llvm.getelementptr %[[ARGV]][%[[WS]]]
// CHECK: %[[WD:.+]] = llvm.load %[[WA]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[WF:.+]] = llvm.load %[[WD]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[W:.+]] = builtin.unrealized_conversion_cast %[[WF]] : {{.*}} to memref<8x8xf32>
// CHECK: %[[CF:.+]] = llvm.load %{{.+}} : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)>
// CHECK: %[[C:.+]] = builtin.unrealized_conversion_cast %[[CF]] : {{.*}} to memref<2x?x8xf32>
// CHECK: %[[N:.+]] = func.call @loom_layer_0(%[[CTX]], %[[H]], %[[W]], %[[C]], %[[POS]])
// CHECK: scf.yield %[[N]]
// CHECK: return %[[R]]
// The wrapper passes the array itself for the last argument.
// PACK: llvm.func @loom_entry_decode(%[[ARGV:.+]]: !llvm.ptr)
// PACK: llvm.getelementptr %[[ARGV]][0]
// PACK: llvm.getelementptr %[[ARGV]][1]
// PACK: llvm.getelementptr %[[ARGV]][2]
// PACK: llvm.getelementptr %[[ARGV]][3]
// PACK-NOT: llvm.getelementptr
// PACK: llvm.call @_mlir_ciface_decode({{.*}}, %[[ARGV]])
func.func private @loom_layer_0(%ctx: !llvm.ptr, %h: memref<4x8xf32>, %w: memref<8x8xf32>, %c: memref<2x?x8xf32>, %pos: memref<?xi64>) -> memref<4x8xf32> attributes {loom.layer}
func.func @decode(%ctx: !llvm.ptr, %x: memref<4x8xf32>, %pos: memref<?xi64>,
                  %w0: memref<8x8xf32>, %c0: memref<2x?x8xf32>,
                  %w1: memref<8x8xf32>, %c1: memref<2x?x8xf32>,
                  %w2: memref<8x8xf32>, %c2: memref<2x?x8xf32>) -> memref<4x8xf32>
    attributes {loom.entry, llvm.emit_c_interface} {
  %0 = call @loom_layer_0(%ctx, %x, %w0, %c0, %pos) : (!llvm.ptr, memref<4x8xf32>, memref<8x8xf32>, memref<2x?x8xf32>, memref<?xi64>) -> memref<4x8xf32>
  %1 = call @loom_layer_0(%ctx, %0, %w1, %c1, %pos) : (!llvm.ptr, memref<4x8xf32>, memref<8x8xf32>, memref<2x?x8xf32>, memref<?xi64>) -> memref<4x8xf32>
  %2 = call @loom_layer_0(%ctx, %1, %w2, %c2, %pos) : (!llvm.ptr, memref<4x8xf32>, memref<8x8xf32>, memref<2x?x8xf32>, memref<?xi64>) -> memref<4x8xf32>
  return %2 : memref<4x8xf32>
}

// -----

// Weights whose positions are not affine in the layer index (1, 2, 4):
// the calls stay as they are and the signature does not change.
// CHECK-LABEL: func.func @irregular
// CHECK-NOT: loom.arg_slots
// CHECK-NOT: scf.for
// CHECK-COUNT-3: call @loom_layer_0
func.func private @loom_layer_0(%ctx: !llvm.ptr, %h: memref<4x8xf32>, %w: memref<8x8xf32>) -> memref<4x8xf32> attributes {loom.layer}
func.func @irregular(%ctx: !llvm.ptr, %w0: memref<8x8xf32>, %w1: memref<8x8xf32>, %x: memref<4x8xf32>, %w2: memref<8x8xf32>) -> memref<4x8xf32>
    attributes {loom.entry, llvm.emit_c_interface} {
  %0 = call @loom_layer_0(%ctx, %x, %w0) : (!llvm.ptr, memref<4x8xf32>, memref<8x8xf32>) -> memref<4x8xf32>
  %1 = call @loom_layer_0(%ctx, %0, %w1) : (!llvm.ptr, memref<4x8xf32>, memref<8x8xf32>) -> memref<4x8xf32>
  %2 = call @loom_layer_0(%ctx, %1, %w2) : (!llvm.ptr, memref<4x8xf32>, memref<8x8xf32>) -> memref<4x8xf32>
  return %2 : memref<4x8xf32>
}

// -----

// A middle layer's result used after the run (not only by the next call):
// no loop.
// CHECK-LABEL: func.func @escaping
// CHECK-NOT: scf.for
// CHECK-COUNT-2: call @loom_layer_0
func.func private @loom_layer_0(%ctx: !llvm.ptr, %h: memref<4x8xf32>, %w: memref<8x8xf32>) -> memref<4x8xf32> attributes {loom.layer}
func.func @escaping(%ctx: !llvm.ptr, %x: memref<4x8xf32>, %w0: memref<8x8xf32>, %w1: memref<8x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>)
    attributes {loom.entry, llvm.emit_c_interface} {
  %0 = call @loom_layer_0(%ctx, %x, %w0) : (!llvm.ptr, memref<4x8xf32>, memref<8x8xf32>) -> memref<4x8xf32>
  %1 = call @loom_layer_0(%ctx, %0, %w1) : (!llvm.ptr, memref<4x8xf32>, memref<8x8xf32>) -> memref<4x8xf32>
  return %0, %1 : memref<4x8xf32>, memref<4x8xf32>
}
