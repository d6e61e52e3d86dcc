// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-plan-sharding | FileCheck %s
// RUN: loom-opt %s --verify-roundtrip --split-input-file --loom-plan-sharding --loom-insert-explicit-reshards --loom-partition | FileCheck %s --check-prefix=LOCAL

// A tied LM head (the embedding table read again by the head's matmul), as
// the GGUF importer writes a llama decode step. A weight read by several ops
// is planned once per use: on tp=2 the head takes its vocabulary slice
// (Megatron's vocab-parallel head; the logits are gathered at the return)
// while the embedding gathers its rows from the whole table. The two are
// separate weights of one tensor (the manifest gives each its own slice).
// CHECK-LABEL: func.func @decode
// CHECK-DAG: %[[EMB:.+]] = loom.weight "token_embd.weight" from <"t.gguf", offset = 0> : !loom.qtensor<8192x64, #loom.quant<q8_0>>
// CHECK-DAG: %[[HEAD:.+]] = loom.weight "token_embd.weight" from <"t.gguf", offset = 0> {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>} : !loom.qtensor<8192x64, #loom.quant<q8_0>>
// CHECK: loom.embedding %[[EMB]], %arg0
// CHECK: loom.qmatmul %{{.+}}, %[[HEAD]] {loom.sharding = #loom.sharding<@mesh, [{}, {}, {tp}]>}
// CHECK: %[[LOGITS:.+]] = loom.reshape {{.*}} {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>}
// CHECK: loom.shard %[[LOGITS]] to <@mesh, [{}, {}]>
// LOCAL-LABEL: func.func @decode
// LOCAL-DAG: loom.weight "token_embd.weight" from <"t.gguf", offset = 0> : !loom.qtensor<8192x64, #loom.quant<q8_0>>
// LOCAL-DAG: loom.weight "token_embd.weight" from <"t.gguf", offset = 0> {loom.split = #loom.split<[{tp}, {}], shape = [8192, 68]>} : !loom.qtensor<4096x64, #loom.quant<q8_0>>
// LOCAL: loom.qmatmul {{.*}} -> tensor<1x1x4096xf32>
// LOCAL: loom.all_gather {{.*}} gather_dim = 1 : tensor<1x4096xf32> -> tensor<1x8192xf32>
module {
  loom.mesh @mesh = <tp = 2>
  func.func @decode(%ids: tensor<1x1xi64>) -> tensor<1x8192xf32> {
    %t = loom.weight "token_embd.weight" from <"t.gguf", offset = 0> : !loom.qtensor<8192x64, #loom.quant<q8_0>>
    %e = loom.embedding %t, %ids : !loom.qtensor<8192x64, #loom.quant<q8_0>>, tensor<1x1xi64> -> tensor<1x1x64xf32>
    %s = loom.weight "output_norm.weight" from <"t.gguf", offset = 0> : tensor<64xf32>
    %n = loom.rms_norm %e scale(%s : tensor<64xf32>) epsilon = 1.0E-5 : tensor<1x1x64xf32> -> tensor<1x1x64xf32>
    %l = loom.qmatmul %n, %t : tensor<1x1x64xf32>, !loom.qtensor<8192x64, #loom.quant<q8_0>> -> tensor<1x1x8192xf32>
    %r = loom.reshape %l : tensor<1x1x8192xf32> -> tensor<1x8192xf32>
    return %r : tensor<1x8192xf32>
  }
}

// -----

// The same with a float table: the head reads its own mapped slice (before,
// a local_slice of the whole table, copied on every call).
// CHECK-LABEL: func.func @decode_f32
// CHECK-DAG: %[[EMB:.+]] = loom.weight "token_embd.weight" from <"t.gguf", offset = 0> : tensor<8192x64xf32>
// CHECK-DAG: %[[HEAD:.+]] = loom.weight "token_embd.weight" from <"t.gguf", offset = 0> {loom.sharding = #loom.sharding<@mesh, [{tp}, {}]>} : tensor<8192x64xf32>
// CHECK: loom.embedding %[[EMB]], %arg0
// CHECK: loom.matmul %{{.+}}, %[[HEAD]] transpose_b {loom.sharding = #loom.sharding<@mesh, [{}, {}, {tp}]>}
// LOCAL-LABEL: func.func @decode_f32
// LOCAL-NOT: loom.local_slice
// LOCAL: loom.matmul {{.*}} -> tensor<1x1x4096xf32>
module {
  loom.mesh @mesh = <tp = 2>
  func.func @decode_f32(%ids: tensor<1x1xi64>) -> tensor<1x8192xf32> {
    %t = loom.weight "token_embd.weight" from <"t.gguf", offset = 0> : tensor<8192x64xf32>
    %e = loom.embedding %t, %ids : tensor<8192x64xf32>, tensor<1x1xi64> -> tensor<1x1x64xf32>
    %l = loom.matmul %e, %t transpose_b : tensor<1x1x64xf32>, tensor<8192x64xf32> -> tensor<1x1x8192xf32>
    %r = loom.reshape %l : tensor<1x1x8192xf32> -> tensor<1x8192xf32>
    return %r : tensor<1x8192xf32>
  }
}

// -----

// A vocabulary so small that gathering the logits costs more than the half
// of the head it saves: both uses keep the whole table, and they are one
// weight again (the program as imported).
// CHECK-LABEL: func.func @small_vocab
// CHECK: %[[T:.+]] = loom.weight "token_embd.weight"
// CHECK-NOT: loom.weight
// CHECK: loom.embedding %[[T]], %arg0
// CHECK: loom.qmatmul %{{.+}}, %[[T]] :
// CHECK-NOT: loom.shard
module {
  loom.mesh @mesh = <tp = 2>
  func.func @small_vocab(%ids: tensor<1x1xi64>) -> tensor<1x64xf32> {
    %t = loom.weight "token_embd.weight" from <"t.gguf", offset = 0> : !loom.qtensor<64x64, #loom.quant<q8_0>>
    %e = loom.embedding %t, %ids : !loom.qtensor<64x64, #loom.quant<q8_0>>, tensor<1x1xi64> -> tensor<1x1x64xf32>
    %l = loom.qmatmul %e, %t : tensor<1x1x64xf32>, !loom.qtensor<64x64, #loom.quant<q8_0>> -> tensor<1x1x64xf32>
    %r = loom.reshape %l : tensor<1x1x64xf32> -> tensor<1x64xf32>
    return %r : tensor<1x64xf32>
  }
}
