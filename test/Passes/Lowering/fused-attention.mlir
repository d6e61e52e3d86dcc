// loom-convert-loom-to-linalg{fused-attention} (the GPU lowering's choice,
// docs/GPU.md "Fused attention"): an f32 attention becomes two loop nests
// in a loom_cpu.kernel instead of products around a softmax: per (batch,
// head, work item) an online softmax over keys [t0, t1) with Dv
// accumulators on the stack, then per output element the combination of
// the row's chunks. A one-row call splits its keys into chunks of 64.
// RUN: loom-opt %s --loom-convert-loom-to-linalg="gemm=false fused-attention=true" | FileCheck %s
// RUN: loom-opt %s --loom-convert-loom-to-linalg="gemm=false" | FileCheck %s --check-prefix=UNFUSED

// CHECK-LABEL: func.func @causal_gqa(
// CHECK-NOT: linalg.generic
// CHECK: loom_cpu.kernel
// CHECK: %[[STEP:.*]] = arith.cmpi eq, %{{.*}}, %c1
// CHECK: %[[CEIL:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK: %[[CHUNKS:.*]] = arith.select %[[STEP]], %[[CEIL]], %c1
// CHECK: %[[SUM:.*]] = arith.addi %{{.*}}, %[[CHUNKS]]
// CHECK: %[[WORK:.*]] = arith.subi %[[SUM]], %c1
// CHECK: memref.alloc(%[[WORK]]) : memref<1x4x?x10xf32>
// CHECK: scf.parallel
// CHECK: memref.alloca() : memref<8xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}} = %cst{{.*}}, {{.*}} = %cst{{.*}}) -> (f32, f32)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.exp
// CHECK: scf.parallel
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: return
// UNFUSED-LABEL: func.func @causal_gqa(
// UNFUSED: linalg.generic
// UNFUSED-NOT: loom_cpu.kernel
func.func @causal_gqa(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                      %v: tensor<1x2x?x8xf32>) -> tensor<1x4x?x8xf32> {
  %o = loom.attention %q, %k, %v causal : tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// f16 (--gpu-dtype=f16's attention): fused too, every load of q, k and v
// widened into the f32 dot product and accumulators, the output narrowed
// once when stored.
// CHECK-LABEL: func.func @f16(
// CHECK: loom_cpu.kernel
// CHECK: memref.alloca() : memref<8xf32>
// CHECK: %[[QL:.*]] = memref.load {{.*}} : memref<1x2x4x8xf16>
// CHECK: arith.extf %[[QL]] : f16 to f32
// CHECK: %[[KL:.*]] = memref.load {{.*}} : memref<1x2x4x8xf16>
// CHECK: arith.extf %[[KL]] : f16 to f32
// CHECK: %[[VL:.*]] = memref.load {{.*}} : memref<1x2x4x8xf16>
// CHECK: arith.extf %[[VL]] : f16 to f32
// CHECK: arith.divf {{.*}} : f32
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @f16(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x4x8xf16>,
               %v: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %o = loom.attention %q, %k, %v : tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16> -> tensor<1x2x4x8xf16>
  return %o : tensor<1x2x4x8xf16>
}
