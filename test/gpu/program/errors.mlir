// What the GPU lower phase refuses, by name and place.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-lower-gpu-pipeline="format=isa chips=sm_90"

// A dynamic batch: buffer sizes (and the memory plan) must be known.
// expected-error @+1 {{buffer of type 'memref<?x16xf32>' has a dynamic shape or a strided layout: the GPU lowering needs static shapes}}
func.func @dynamic(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = loom.softmax %x axis = -1 : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}
