// RUN: loom-opt %s --split-input-file --verify-diagnostics

// Mesh lookup, mesh axes and group shapes of the collectives, point-to-point
// transfers and loom.shard. These checks run in verifySymbolUses, so every
// case declares its mesh in the enclosing module.

//===----------------------------------------------------------------------===//
// loom.shard
//===----------------------------------------------------------------------===//

// A sharding names a declared mesh.
func.func @shard_unknown_mesh(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{refers to unknown mesh @nope; declare it with loom.mesh}}
  %0 = loom.shard %x to <@nope, [{}, {tp}]> : tensor<8x64xf32>
  return
}

// -----

// The symbol must be a loom.mesh, not any symbol.
func.func @shard_not_a_mesh(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{refers to unknown mesh @shard_not_a_mesh}}
  %0 = loom.shard %x to <@shard_not_a_mesh, [{}, {}]> : tensor<8x64xf32>
  return
}

// -----

// A sharding has one entry per dimension.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @shard_rank(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{sharding has 1 dimensions but the value has rank 2 ('tensor<8x64xf32>')}}
  %0 = loom.shard %x to <@mesh, [{tp}]> : tensor<8x64xf32>
  return
}

// -----

// A sharding uses axes of its mesh.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @shard_unknown_axis(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{unknown mesh axis 'pp' in sharding on mesh @mesh (its axes are dp, tp)}}
  %0 = loom.shard %x to <@mesh, [{pp}, {}]> : tensor<8x64xf32>
  return
}

// -----

// Partial axes are mesh axes too.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @shard_unknown_partial_axis(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{unknown mesh axis 'ep' in sharding on mesh @mesh}}
  %0 = loom.shard %x to <@mesh, [{}, {tp}], partial = {ep}> : tensor<8x64xf32>
  return
}

// -----

// A split dimension divides evenly over the product of its axes.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @shard_divisible(%x: tensor<8x12xf32>) {
  // expected-error @+1 {{dimension 1 of size 12 does not divide over 8 devices (axes dp,tp); pad it to a multiple of 8}}
  %0 = loom.shard %x to <@mesh, [{}, {dp, tp}]> : tensor<8x12xf32>
  return
}

// -----

// A dynamic dimension is not checked; a static one still is.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @shard_divisible_dynamic(%x: tensor<?x6xf32>) {
  // expected-error @+1 {{dimension 1 of size 6 does not divide over 4 devices (axes tp)}}
  %0 = loom.shard %x to <@mesh, [{dp}, {tp}]> : tensor<?x6xf32>
  return
}

// -----

// A shard is the annotated value itself.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @shard_type(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "loom.shard"(%x) <{sharding = #loom.sharding<@mesh, [{}, {}]>}> : (tensor<8x64xf32>) -> tensor<8x64xf16>
  return
}

//===----------------------------------------------------------------------===//
// Mesh and axes of the collectives
//===----------------------------------------------------------------------===//

// -----

// A collective names a declared mesh.
func.func @all_reduce_unknown_mesh(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{refers to unknown mesh @mesh; declare it with loom.mesh}}
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<8x64xf32>
  return
}

// -----

// A group spans at least one axis.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_reduce_no_axes(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{needs at least one mesh axis}}
  %0 = loom.all_reduce %x on @mesh axes = [] : tensor<8x64xf32>
  return
}

// -----

// A group is made of axes of the mesh.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_reduce_unknown_axis(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{unknown mesh axis 'pp' (mesh @mesh has axes dp, tp)}}
  %0 = loom.all_reduce %x on @mesh axes = ["pp"] : tensor<8x64xf32>
  return
}

// -----

// A group names each axis once.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_reduce_axis_twice(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{mesh axis 'tp' is listed twice}}
  %0 = loom.all_reduce %x on @mesh axes = ["tp", "dp", "tp"] : tensor<8x64xf32>
  return
}

// -----

// An all-reduce keeps the type of its input.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_reduce_type(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "loom.all_reduce"(%x) <{mesh = @mesh, mesh_axes = ["tp"]}> : (tensor<8x64xf32>) -> tensor<8x16xf32>
  return
}

// -----

// Axes are names, not indices.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_reduce_int_axes(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{attribute 'mesh_axes' failed to satisfy constraint: string array attribute}}
  %0 = "loom.all_reduce"(%x) <{mesh = @mesh, mesh_axes = [1]}> : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return
}

// -----

// Collective reductions are sum, prod, max and min.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_reduce_bad_reduction(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{enum values for attribute 'reduction' [sum, prod, max, min]}}
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] reduction = mean : tensor<8x64xf32>
  return
}

// -----

// Every collective resolves its mesh: all_gather.
func.func @all_gather_unknown_mesh(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{refers to unknown mesh @mesh}}
  %0 = loom.all_gather %x on @mesh axes = ["tp"] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  return
}

// -----

// ... and checks its axes: reduce_scatter.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @reduce_scatter_no_axes(%x: tensor<64x64xf32>) {
  // expected-error @+1 {{needs at least one mesh axis}}
  %0 = loom.reduce_scatter %x on @mesh axes = [] scatter_dim = 0 : tensor<64x64xf32> -> tensor<64x64xf32>
  return
}

// -----

// all_to_all.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all_unknown_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{unknown mesh axis 'ep' (mesh @mesh has axes dp, tp)}}
  %0 = loom.all_to_all %x on @mesh axes = ["ep"] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  return
}

// -----

// send.
func.func @send_unknown_mesh(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{refers to unknown mesh @pp}}
  loom.send %x to @pp axes = ["pp"] peer = 1 channel = 0 : tensor<8x16xf32>
  return
}

// -----

// recv.
loom.mesh @pp = <pp = 2>
func.func @recv_axis_twice() {
  // expected-error @+1 {{mesh axis 'pp' is listed twice}}
  %0 = loom.recv from @pp axes = ["pp", "pp"] peer = 0 channel = 0 : tensor<8x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.all_gather
//===----------------------------------------------------------------------===//

// -----

// gather_dim lies in [-rank, rank).
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_gather_dim(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{gather_dim 2 is out of range for rank 2 (valid: -2 to 1)}}
  %0 = loom.all_gather %x on @mesh axes = ["tp"] gather_dim = 2 : tensor<8x16xf32> -> tensor<8x64xf32>
  return
}

// -----

// all_gather keeps the element type.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_gather_element_types(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = loom.all_gather %x on @mesh axes = ["tp"] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x64xf16>
  return
}

// -----

// The gathered dimension grows by the group size (here 2 x 4).
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_gather_result(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result has shape 8x64 but 8x128 is expected (dimension 1: 64 vs 128)}}
  %0 = loom.all_gather %x on @mesh axes = ["dp", "tp"] gather_dim = -1 : tensor<8x16xf32> -> tensor<8x64xf32>
  return
}

// -----

// Other dimensions stay as they are.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_gather_other_dims(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result has shape 4x64 but 8x64 is expected (dimension 0: 4 vs 8)}}
  %0 = loom.all_gather %x on @mesh axes = ["tp"] gather_dim = 1 : tensor<8x16xf32> -> tensor<4x64xf32>
  return
}

// -----

// The gathered size fits in 64 bits.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_gather_overflow(%x: tensor<4611686018427387904xf32>) {
  // expected-error @+1 {{gathered size 4611686018427387904 x 4 does not fit in 64 bits}}
  %0 = loom.all_gather %x on @mesh axes = ["tp"] gather_dim = 0 : tensor<4611686018427387904xf32> -> tensor<?xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.reduce_scatter
//===----------------------------------------------------------------------===//

// -----

// scatter_dim lies in [-rank, rank).
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @reduce_scatter_dim(%x: tensor<64x64xf32>) {
  // expected-error @+1 {{scatter_dim -3 is out of range for rank 2}}
  %0 = loom.reduce_scatter %x on @mesh axes = ["tp"] scatter_dim = -3 : tensor<64x64xf32> -> tensor<16x64xf32>
  return
}

// -----

// reduce_scatter keeps the element type.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @reduce_scatter_element_types(%x: tensor<64x64xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'bf16'}}
  %0 = loom.reduce_scatter %x on @mesh axes = ["tp"] scatter_dim = 0 : tensor<64x64xf32> -> tensor<16x64xbf16>
  return
}

// -----

// The scattered dimension divides over the group.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @reduce_scatter_divisible(%x: tensor<6x64xf32>) {
  // expected-error @+1 {{scatter dimension 0 of size 6 does not divide over the 4 devices of the group}}
  %0 = loom.reduce_scatter %x on @mesh axes = ["tp"] scatter_dim = 0 : tensor<6x64xf32> -> tensor<1x64xf32>
  return
}

// -----

// The scattered dimension shrinks by the group size (here 2).
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @reduce_scatter_result(%x: tensor<64x64xf32>) {
  // expected-error @+1 {{result has shape 64x64 but 64x32 is expected (dimension 1: 64 vs 32)}}
  %0 = loom.reduce_scatter %x on @mesh axes = ["dp"] scatter_dim = 1 : tensor<64x64xf32> -> tensor<64x64xf32>
  return
}

// -----

// A dynamic scattered dimension stays dynamic; the others are still checked.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @reduce_scatter_dynamic(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{result has shape ?x32 but ?x64 is expected}}
  %0 = loom.reduce_scatter %x on @mesh axes = ["tp"] scatter_dim = 0 : tensor<?x64xf32> -> tensor<?x32xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.all_to_all
//===----------------------------------------------------------------------===//

// -----

// split_dim lies in [-rank, rank).
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all_split_dim(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{split_dim 2 is out of range for rank 2}}
  %0 = loom.all_to_all %x on @mesh axes = ["tp"] split_dim = 2 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
  return
}

// -----

// concat_dim lies in [-rank, rank).
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all_concat_dim(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{concat_dim -3 is out of range for rank 2}}
  %0 = loom.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = -3 : tensor<8x16xf32> -> tensor<2x64xf32>
  return
}

// -----

// all_to_all keeps the element type.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all_element_types(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{element types differ: 'f32' and 'i32'}}
  %0 = loom.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xi32>
  return
}

// -----

// The split dimension divides over the group.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all_divisible(%x: tensor<6x16xf32>) {
  // expected-error @+1 {{split dimension 0 of size 6 does not divide over the 4 devices of the group}}
  %0 = loom.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<6x16xf32> -> tensor<1x64xf32>
  return
}

// -----

// Split shrinks one dimension and concat grows the other.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all_result(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result has shape 8x16 but 2x64 is expected (dimension 0: 8 vs 2)}}
  %0 = loom.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// With split_dim == concat_dim the size comes back unchanged.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all_same_dim(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result has shape 2x16 but 8x16 is expected}}
  %0 = loom.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  return
}

// -----

// The concatenated size fits in 64 bits.
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @all_to_all_overflow(%x: tensor<8x4611686018427387904xf32>) {
  // expected-error @+1 {{concatenated size 4611686018427387904 x 4 does not fit in 64 bits}}
  %0 = loom.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : tensor<8x4611686018427387904xf32> -> tensor<2x?xf32>
  return
}

// -----

// A mesh whose device count overflows is rejected where it is declared, so a
// group size never wraps around to 0 (this used to divide by zero).
// expected-error @+1 {{mesh has too many devices}}
loom.mesh @huge = <a = 4611686018427387904, b = 4>
func.func @reduce_scatter_huge_mesh(%x: tensor<8x8xf32>) {
  %0 = loom.reduce_scatter %x on @huge axes = ["a", "b"] scatter_dim = 0 : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// loom.send, loom.recv
//===----------------------------------------------------------------------===//

// -----

// The peer is given one way or the other.
loom.mesh @pp = <pp = 2, tp = 2>
func.func @send_no_peer(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{give exactly one of 'peer' (an index in the group) or 'shift' (relative)}}
  loom.send %x to @pp axes = ["pp"] channel = 0 : tensor<8x16xf32>
  return
}

// -----

// ... not both.
loom.mesh @pp = <pp = 2, tp = 2>
func.func @send_peer_and_shift(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{give exactly one of 'peer' (an index in the group) or 'shift' (relative)}}
  loom.send %x to @pp axes = ["pp"] peer = 1 shift = 1 channel = 0 : tensor<8x16xf32>
  return
}

// -----

// A peer is an index in the group of the named axes (here 2 devices).
loom.mesh @pp = <pp = 2, tp = 2>
func.func @send_peer_range(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{peer 2 is outside the group of 2 devices}}
  loom.send %x to @pp axes = ["pp"] peer = 2 channel = 0 : tensor<8x16xf32>
  return
}

// -----

// Peers are non-negative group indices (the group of pp x tp has 4).
loom.mesh @pp = <pp = 2, tp = 2>
func.func @send_peer_negative(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{peer -1 is outside the group of 4 devices}}
  loom.send %x to @pp axes = ["pp", "tp"] peer = -1 channel = 0 : tensor<8x16xf32>
  return
}

// -----

// recv names its peer by exactly one of peer and shift.
loom.mesh @pp = <pp = 2, tp = 2>
func.func @recv_no_peer() {
  // expected-error @+1 {{give exactly one of 'peer' (an index in the group) or 'shift' (relative)}}
  %0 = loom.recv from @pp axes = ["pp"] channel = 0 : tensor<8x16xf32>
  return
}

// -----

// ... not both.
loom.mesh @pp = <pp = 2, tp = 2>
func.func @recv_peer_and_shift() {
  // expected-error @+1 {{give exactly one of 'peer' (an index in the group) or 'shift' (relative)}}
  %0 = loom.recv from @pp axes = ["pp"] peer = 0 shift = -1 channel = 0 : tensor<8x16xf32>
  return
}

// -----

// A recv peer is an index in the group.
loom.mesh @pp = <pp = 2, tp = 2>
func.func @recv_peer_range() {
  // expected-error @+1 {{peer 9223372036854775807 is outside the group of 2 devices}}
  %0 = loom.recv from @pp axes = ["tp"] peer = 9223372036854775807 channel = 0 : tensor<8x16xf32>
  return
}

// -----

// recv names a declared mesh.
loom.mesh @pp = <pp = 2, tp = 2>
func.func @recv_unknown_mesh() {
  // expected-error @+1 {{refers to unknown mesh @mesh}}
  %0 = loom.recv from @mesh axes = ["pp"] peer = 0 channel = 0 : tensor<8x16xf32>
  return
}

// -----

// A received value is a tensor of a compute element type.
loom.mesh @pp = <pp = 2, tp = 2>
func.func @recv_memref() {
  // expected-error @+1 {{result #0 must be ranked tensor of floating-point or signless integer or 1-bit signless integer values}}
  %0 = "loom.recv"() <{mesh = @pp, mesh_axes = ["pp"], peer = 0 : i64, channel = 0 : i64}> : () -> memref<8xf32>
  return
}

// -----

// A send needs its channel.
loom.mesh @pp = <pp = 2, tp = 2>
func.func @send_no_channel(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{requires attribute 'channel'}}
  "loom.send"(%x) <{mesh = @pp, mesh_axes = ["pp"], peer = 0 : i64}> : (tensor<8x16xf32>) -> ()
  return
}

// -----

// A mesh in a nested module is not visible from outside it.
module {
  module @inner {
    loom.mesh @mesh = <tp = 2>
  }
  func.func @nested(%x: tensor<8x64xf32>) {
    // expected-error @+1 {{refers to unknown mesh @mesh}}
    %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<8x64xf32>
    return
  }
}
