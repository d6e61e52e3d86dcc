// RUN: loom-opt %s --verify-roundtrip --loom-partition-pipeline | FileCheck %s --enable-var-scope

// The partition phase as one registered pipeline: a column split then a
// row split (plan form) become local slices and one all-reduce.
// CHECK-LABEL: func.func @mlp
// CHECK: loom.matmul {{.*}} -> tensor<4x8xf32>
// CHECK: loom.gelu {{.*}} : tensor<4x8xf32>
// CHECK: %[[P:.+]] = loom.matmul {{.*}} -> tensor<4x8xf32>
// CHECK: %[[R:.+]] = loom.all_reduce %[[P]] on @m axes = ["tp"]
// CHECK: return %[[R]]
loom.mesh @m = <tp = 2>
func.func @mlp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = loom.weight "w1" {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<8x16xf32>
  %w2 = loom.weight "w2" {loom.sharding = #loom.sharding<@m, [{tp}, {}]>} : tensor<16x8xf32>
  %h = loom.matmul %x, %w1 {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %g = loom.gelu %h {loom.sharding = #loom.sharding<@m, [{}, {tp}]>} : tensor<4x16xf32>
  %y = loom.matmul %g, %w2 {loom.sharding = #loom.sharding<@m, [{}, {}], partial = {tp}>} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
