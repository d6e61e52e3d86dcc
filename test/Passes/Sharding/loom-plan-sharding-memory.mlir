// RUN: loom-opt %s --verify-diagnostics --loom-plan-sharding="memory-limit=0.02"

// A model that does not fit: the need, the capacity and the smallest mesh.
loom.mesh @mesh = <tp = 2>
// expected-error @+1 {{needs 32.02 MiB per device with the most memory-saving plan, a device holds 20.48 MiB; the smallest mesh that fits has 4 devices (--mesh tp=4)}}
func.func @big(%x: tensor<1x4096xf32>) -> tensor<1x4096xf32> {
  %w = loom.weight "w" : tensor<4096x4096xf32>
  %y = loom.matmul %x, %w : tensor<1x4096xf32>, tensor<4096x4096xf32> -> tensor<1x4096xf32>
  return %y : tensor<1x4096xf32>
}
