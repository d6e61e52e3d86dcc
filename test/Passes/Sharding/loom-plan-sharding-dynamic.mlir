// RUN: loom-opt %s --split-input-file --loom-plan-sharding | FileCheck %s --enable-var-scope
// RUN: loom-opt %s --split-input-file --loom-plan-sharding --loom-insert-explicit-reshards --loom-partition | FileCheck %s --check-prefix=PART --enable-var-scope

// torch MHA with a run-time sequence S and batch B on dp=2 (as PyTorch
// exports nn.MultiheadAttention, seq-first): the batch is split over dp
// through the reshapes with run-time sizes ([S, B, 64] -> [S, 4B, 16] ->
// [4B, S, 16] -> [B, 4, S, 16]), whose rules come from the sizes; the
// attention runs on half the batch; the sequence is never split (it need
// not divide); only the returned value is gathered.
// CHECK-LABEL: func.func @mha
// CHECK: %[[X:.*]] = loom.shard %arg0 to <@mesh, [{}, {dp}, {}]>
// CHECK: loom.matmul %[[X]]{{.*}}[{}, {dp}, {}]
// CHECK: loom.reshape {{.*}}sizes{{.*}}[{}, {dp}, {}]
// CHECK: loom.reshape {{.*}}sizes{{.*}}[{dp}, {}, {}, {}]
// CHECK: loom.attention {{.*}}[{dp}, {}, {}, {}]
// CHECK-NOT: loom.shard {{.*}}[{dp}, {}, {}]>
// CHECK: loom.shard {{.*}} to <@mesh, [{}, {}, {}]>
// CHECK-NEXT: loom.reshape
// CHECK-NEXT: return
// On a shard, tensor.dim of a split dim gives the global size (local x 2)
// and a reshape's run-time size of a split dim is halved; the batch is cut
// by a local_slice (which checks at run time that it divides) and gathered
// once at the end.
// PART-LABEL: func.func @mha
// PART: %[[X:.*]] = loom.local_slice %arg0 on @mesh split = {{\[\[}}], ["dp"], []]
// PART: %[[B:.*]] = tensor.dim %arg0, %c1
// PART: %[[BH:.*]] = arith.muli %[[B]], %c4
// PART: %[[LBH:.*]] = arith.divui %[[BH]], %c2
// PART: loom.reshape %{{.*}} sizes(%{{.*}}, %[[LBH]])
// PART: %[[N:.*]] = tensor.dim %[[T:.*]], %c0
// PART: %[[GN:.*]] = arith.muli %[[N]], %c2
// PART: loom.attention
// PART: loom.all_gather %{{.*}} on @mesh axes = ["dp"] gather_dim = 1
loom.mesh @mesh = <dp = 2>
func.func @mha(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %w = loom.weight "w" : tensor<64x64xf32>
  %p = loom.matmul %x, %w : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
  %s = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %b = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %bh = arith.muli %b, %c4 : index
  %h = loom.reshape %p sizes(%s, %bh) : tensor<?x?x64xf32> -> tensor<?x?x16xf32>
  %t = loom.transpose %h permutation = [1, 0, 2] : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  %n = tensor.dim %t, %c0 : tensor<?x?x16xf32>
  %bb = arith.divui %n, %c4 : index
  %q = loom.reshape %t sizes(%bb, %s) : tensor<?x?x16xf32> -> tensor<?x4x?x16xf32>
  %o = loom.attention %q, %q, %q scale = 2.500000e-01 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  %r = loom.reshape %o sizes(%n, %s) : tensor<?x4x?x16xf32> -> tensor<?x?x16xf32>
  %u = loom.transpose %r permutation = [1, 0, 2] : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  %y = loom.reshape %u sizes(%s, %b) : tensor<?x?x16xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Without an attention, conv or pool the batch is dim 0 of the arguments:
// an MLP on [B, S, 64] splits B over dp, never S.
// CHECK-LABEL: func.func @mlp
// CHECK: loom.shard %arg0 to <@mesh, [{dp}, {}, {}]>
// CHECK-NOT: [{}, {dp}, {}]
// CHECK: return
loom.mesh @mesh = <dp = 2>
func.func @mlp(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %w1 = loom.weight "w1" : tensor<64x256xf32>
  %w2 = loom.weight "w2" : tensor<256x64xf32>
  %h = loom.matmul %x, %w1 : tensor<?x?x64xf32>, tensor<64x256xf32> -> tensor<?x?x256xf32>
  %g = loom.gelu %h : tensor<?x?x256xf32>
  %y = loom.matmul %g, %w2 : tensor<?x?x256xf32>, tensor<256x64xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Only 'dp' splits a run-time dim: on tp=2 the same MLP splits its static
// hidden dim (Megatron), never the batch.
// CHECK-LABEL: func.func @mlp_tp
// CHECK-NOT: [{tp}, {}, {}]
// CHECK: loom.matmul {{.*}}[{}, {}, {tp}]
// CHECK: return
loom.mesh @mesh = <tp = 2>
func.func @mlp_tp(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %w1 = loom.weight "w1" : tensor<64x256xf32>
  %w2 = loom.weight "w2" : tensor<256x64xf32>
  %h = loom.matmul %x, %w1 : tensor<?x?x64xf32>, tensor<64x256xf32> -> tensor<?x?x256xf32>
  %g = loom.gelu %h : tensor<?x?x256xf32>
  %y = loom.matmul %g, %w2 : tensor<?x?x256xf32>, tensor<256x64xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Without an op that names the batch, dim 0 is the batch only when the
// arguments and the results agree on it: [S, B, 8] -> [B, 8] has no
// run-time batch for dp to split (S need not divide), so nothing run-time
// is split.
// CHECK-LABEL: func.func @no_batch
// CHECK-NOT: {dp}
// CHECK: return
loom.mesh @mesh = <dp = 2>
func.func @no_batch(%x: tensor<?x?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = tensor.dim %x, %c0 : tensor<?x?x8xf32>
  %b = tensor.dim %x, %c1 : tensor<?x?x8xf32>
  %t = loom.transpose %x permutation = [1, 0, 2] : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  %y = loom.reduce sum %t axes = [1] : tensor<?x?x8xf32> -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
