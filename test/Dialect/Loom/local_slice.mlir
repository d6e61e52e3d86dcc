// RUN: loom-opt %s --verify-roundtrip --split-input-file --verify-diagnostics | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --split-input-file --verify-diagnostics --mlir-print-op-generic | loom-opt --split-input-file | FileCheck %s --enable-var-scope

// loom.local_slice round-trips (custom and generic form), and every rule of
// its verifier fails with its message.

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

// -----

func.func @unknown_mesh(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{refers to unknown mesh @nope; declare it with loom.mesh}}
  %0 = loom.local_slice %x on @nope split = [["tp"], []] : tensor<8x64xf32> -> tensor<4x64xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2, tp = 4>
func.func @unknown_axis(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{unknown mesh axis 'pp' in dimension 0 (mesh @mesh has axes dp, tp)}}
  %0 = loom.local_slice %x on @mesh split = [["pp"], []] : tensor<8x64xf32> -> tensor<4x64xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2, tp = 4>
func.func @axis_twice(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{mesh axis 'tp' is used twice (again in dimension 1); each axis splits one dimension}}
  %0 = loom.local_slice %x on @mesh split = [["tp"], ["tp"]] : tensor<8x64xf32> -> tensor<2x16xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2, tp = 4>
func.func @rank_mismatch(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{split has 1 entries but the input has rank 2; give one list of axes per dimension}}
  %0 = loom.local_slice %x on @mesh split = [["tp"]] : tensor<8x64xf32> -> tensor<2x64xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2, tp = 4>
func.func @not_divisible(%x: tensor<6x64xf32>) {
  // expected-error @+1 {{dimension 0 of size 6 does not divide over 8 devices (axes dp,tp)}}
  %0 = loom.local_slice %x on @mesh split = [["dp", "tp"], []] : tensor<6x64xf32> -> tensor<1x64xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2, tp = 4>
func.func @wrong_result(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{result has shape 4x64 but 2x64 is expected (dimension 0)}}
  %0 = loom.local_slice %x on @mesh split = [["tp"], []] : tensor<8x64xf32> -> tensor<4x64xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2, tp = 4>
func.func @dynamic_result(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{result has shape 2x64 but ?x64 is expected (dimension 0)}}
  %0 = loom.local_slice %x on @mesh split = [["tp"], []] : tensor<?x64xf32> -> tensor<2x64xf32>
  return
}

// -----

loom.mesh @mesh = <dp = 2, tp = 4>
func.func @element_type(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'; insert a loom.cast}}
  %0 = loom.local_slice %x on @mesh split = [["tp"], []] : tensor<8x64xf32> -> tensor<2x64xf16>
  return
}

// -----

loom.mesh @mesh = <dp = 2, tp = 4>
func.func @split_not_strings(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{attribute 'split' failed to satisfy constraint: one list of mesh axes per dimension}}
  %0 = loom.local_slice %x on @mesh split = [[1], []] : tensor<8x64xf32> -> tensor<2x64xf32>
  return
}
