// Bad --stages ranges and a stage that cannot fit: one error each, with
// the numbers, and nothing written.
// RUN: not loom-opt %s --loom-assign-stages="stages=0-2,3-6" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not loom-opt %s --loom-assign-stages="stages=0-3,3-5" 2>&1 | FileCheck %s --check-prefix=OVERLAP
// RUN: not loom-opt %s --loom-assign-stages="stages=0-1,3-5" 2>&1 | FileCheck %s --check-prefix=GAP
// RUN: not loom-opt %s --loom-assign-stages="stages=0-2,3-4" 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: not loom-opt %s --loom-assign-stages="stages=0-5" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not loom-opt %s --loom-assign-stages="stages=0-2,3-5 memory-limit=0.00001" 2>&1 | FileCheck %s --check-prefix=PINFIT
// RUN: not loom-opt %s --loom-assign-stages="memory-limit=0.00001" 2>&1 | FileCheck %s --check-prefix=NOFIT
// RUN: not loom-opt %s --loom-assign-stages="microbatches=0" 2>&1 | FileCheck %s --check-prefix=MICRO
// MISSING: error: --stages '0-2,3-6': range 1 (3-6) names layer 6, which the model does not have (its layers are 0-5)
// OVERLAP: error: --stages '0-3,3-5': ranges 0 and 1 overlap at layer 3; every layer is in one stage
// GAP: error: --stages '0-1,3-5': layer 2 is in no range (a gap before 3-5); the ranges must cover layers 0-5
// SHORT: error: --stages '0-2,3-4': layers 5-5 are in no range; the last range must end at layer 5
// COUNT: error: --stages '0-5': gives 1 layer ranges but the mesh has 2 stages ('pp=2'); give one range per stage
// PINFIT: error: pipeline stage 0 (layers 0-2) needs 0.06 MiB per device (weights 0.05 MiB, KV cache 0.00 MiB, activations 0.01 MiB), a device holds 0.01 MiB; move layers to other stages (--stages), split more (tp), or raise --memory-limit
// NOFIT: error: no split of 6 layers into 2 pipeline stages fits a device: the best one's stage 0 (layers 0-3) needs 0.07 MiB per device (weights 0.06 MiB, KV cache 0.00 MiB, activations 0.01 MiB), a device holds 0.01 MiB; use more stages (a larger 'pp'), split more (tp), or raise --memory-limit
// MICRO: error: --microbatches 0: give at least 1
// CHECK-NOT: Stack dump
module {
  loom.mesh @mesh = <pp = 2>
  func.func @f(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
    %m0 = loom.matmul %x, %w0 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h0 = loom.add %x, %m0 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
    %m1 = loom.matmul %h0, %w1 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h1 = loom.add %h0, %m1 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %w2 = loom.weight "layers.2.w" : tensor<64x64xf32>
    %m2 = loom.matmul %h1, %w2 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h2 = loom.add %h1, %m2 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %w3 = loom.weight "layers.3.w" : tensor<64x64xf32>
    %m3 = loom.matmul %h2, %w3 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h3 = loom.add %h2, %m3 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %w4 = loom.weight "layers.4.w" : tensor<64x64xf32>
    %m4 = loom.matmul %h3, %w4 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h4 = loom.add %h3, %m4 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %w5 = loom.weight "layers.5.w" : tensor<64x64xf32>
    %m5 = loom.matmul %h4, %w5 : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    %h5 = loom.add %h4, %m5 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %wh = loom.weight "head" : tensor<64x64xf32>
    %y = loom.matmul %h5, %wh : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>
    return %y : tensor<8x64xf32>
  }
}
