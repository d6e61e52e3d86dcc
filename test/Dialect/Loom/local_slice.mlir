// RUN: loom-opt %s --split-input-file | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --split-input-file --mlir-print-op-generic | loom-opt --split-input-file | FileCheck %s --enable-var-scope

// loom.local_slice round-trips (custom and generic form).

loom.mesh @mesh = <dp = 2, tp = 4>
// CHECK-LABEL: func.func @local_slice
func.func @local_slice(%x: tensor<8x64xf32>, %y: tensor<?x64xf32>) -> (tensor<4x16xf32>, tensor<1x64xf32>, tensor<?x16xf32>, tensor<8x64xf32>) {
  // CHECK: loom.local_slice %{{.*}} on @mesh split = {{\[}}["dp"], ["tp"]] : tensor<8x64xf32> -> tensor<4x16xf32>
  %0 = loom.local_slice %x on @mesh split = [["dp"], ["tp"]] : tensor<8x64xf32> -> tensor<4x16xf32>
  // CHECK: loom.local_slice %{{.*}} on @mesh split = {{\[}}["tp", "dp"], []] : tensor<8x64xf32> -> tensor<1x64xf32>
  %1 = loom.local_slice %x on @mesh split = [["tp", "dp"], []] : tensor<8x64xf32> -> tensor<1x64xf32>
  // CHECK: loom.local_slice %{{.*}} on @mesh split = {{\[}}["dp"], ["tp"]] : tensor<?x64xf32> -> tensor<?x16xf32>
  %2 = loom.local_slice %y on @mesh split = [["dp"], ["tp"]] : tensor<?x64xf32> -> tensor<?x16xf32>
  // CHECK: loom.local_slice %{{.*}} on @mesh split = {{\[}}[], []] : tensor<8x64xf32> -> tensor<8x64xf32>
  %3 = loom.local_slice %x on @mesh split = [[], []] : tensor<8x64xf32> -> tensor<8x64xf32>
  return %0, %1, %2, %3 : tensor<4x16xf32>, tensor<1x64xf32>, tensor<?x16xf32>, tensor<8x64xf32>
}
