// What the GPU lower phase refuses, by name and place.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-lower-gpu-pipeline="format=isa chips=sm_90"

// A dynamic batch without a bound (max-dim): the memory plan needs one
// (with it, a run-time size: dynamic.mlir).
// expected-error @+1 {{buffer of type 'memref<?x16xf32>' has a run-time size and no bound was given: give the largest size of the dynamic dimensions (loomc --gpu-max-tokens N, loom-lower-gpu-pipeline max-dim=N)}}
func.func @dynamic(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = loom.softmax %x axis = -1 : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// A gather along a dimension of run-time size: the device check needs the
// dimension at compile time (run-time indices are fine: dynamic.mlir).
func.func @gather_dynamic(%x: tensor<?x4xf32>, %i: tensor<2xi64>) -> tensor<2x4xf32> {
  // expected-error @+1 {{the dimension the indices select along needs a static size on the GPU}}
  %0 = loom.gather %x, %i axis = 0 : tensor<?x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Indices into an empty dimension: every index is out of range (and the
// clamped index 0 would still read outside it).
func.func @gather_empty(%x: tensor<0x4xf32>, %i: tensor<2xi64>) -> tensor<2x4xf32> {
  // expected-error @+1 {{indices select along an empty dimension (size 0): every index is out of range}}
  %0 = loom.gather %x, %i axis = 0 : tensor<0x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
