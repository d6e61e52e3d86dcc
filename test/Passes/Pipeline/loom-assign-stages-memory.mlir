// RUN: loom-opt %s --verify-roundtrip --loom-assign-stages | FileCheck %s --check-prefix=FREE
// RUN: loom-opt %s --verify-roundtrip --loom-assign-stages="memory-limit=0.0035" | FileCheck %s --check-prefix=LIMIT

// Balance under memory: layers 0-2 are compute-heavy with small weights,
// layers 3-5 add a 512 KiB weight each (about as slow, 32x the memory).
// Without a limit the stages are 3/3 (the second needs 4.00 MiB); with
// 3.58 MiB per device the balance moves layer 3 into stage 0 (4/2: 2.55 and
// 3.50 MiB), slower but fitting.
// FREE: "layers.2.w" {loom.stage = #loom.stage<0>}
// FREE: "layers.3.b" {loom.stage = #loom.stage<1>}
// LIMIT: "layers.3.b" {loom.stage = #loom.stage<0>}
// LIMIT: "layers.4.b" {loom.stage = #loom.stage<1>}
loom.mesh @mesh = <pp = 2>
func.func @f(%x: tensor<2048x64xf32>) -> tensor<2048x64xf32> {
  %w0 = loom.weight "layers.0.w" : tensor<64x64xf32>
  %m0 = loom.matmul %x, %w0 : tensor<2048x64xf32>, tensor<64x64xf32> -> tensor<2048x64xf32>
  %w1 = loom.weight "layers.1.w" : tensor<64x64xf32>
  %m1 = loom.matmul %m0, %w1 : tensor<2048x64xf32>, tensor<64x64xf32> -> tensor<2048x64xf32>
  %w2 = loom.weight "layers.2.w" : tensor<64x64xf32>
  %m2 = loom.matmul %m1, %w2 : tensor<2048x64xf32>, tensor<64x64xf32> -> tensor<2048x64xf32>
  %w3 = loom.weight "layers.3.b" : tensor<2048x64xf32>
  %m3 = loom.add %m2, %w3 : tensor<2048x64xf32>, tensor<2048x64xf32> -> tensor<2048x64xf32>
  %w4 = loom.weight "layers.4.b" : tensor<2048x64xf32>
  %m4 = loom.add %m3, %w4 : tensor<2048x64xf32>, tensor<2048x64xf32> -> tensor<2048x64xf32>
  %w5 = loom.weight "layers.5.b" : tensor<2048x64xf32>
  %m5 = loom.add %m4, %w5 : tensor<2048x64xf32>, tensor<2048x64xf32> -> tensor<2048x64xf32>
  return %m5 : tensor<2048x64xf32>
}
