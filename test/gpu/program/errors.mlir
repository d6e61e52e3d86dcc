// What the GPU lower phase refuses, by name and place.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-lower-gpu-pipeline="format=isa chips=sm_90"

// A dynamic batch without a bound (max-dim): the memory plan needs one
// (with it, a run-time size: dynamic.mlir).
// expected-error @+1 {{buffer of type 'memref<?x16xf32>' has a run-time size and no bound was given: give the largest size of the dynamic dimensions (loomc --gpu-max-tokens N, loom-lower-gpu-pipeline max-dim=N)}}
func.func @dynamic(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = loom.softmax %x axis = -1 : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}
