// RUN: loom-opt %s --verify-roundtrip --loom-assign-stages="stages=0-1,2-5" | FileCheck %s --check-prefix=RANGES
// RUN: loom-opt %s --verify-roundtrip --loom-assign-stages | FileCheck %s --check-prefix=BALANCED

// Pinned layer ranges are taken as given (balanced would be 3/3).
// RANGES-LABEL: func.func @ranges
// RANGES: "layers.1.w" {loom.stage = #loom.stage<0>}
// RANGES: "layers.2.w" {loom.stage = #loom.stage<1>}
// BALANCED-LABEL: func.func @ranges
// BALANCED: "layers.2.w" {loom.stage = #loom.stage<0>}
// BALANCED: "layers.3.w" {loom.stage = #loom.stage<1>}
loom.mesh @mesh = <pp = 2>
func.func @ranges(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
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
