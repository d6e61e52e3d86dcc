// The forward entry of a 2-layer llama-like GGUF model (f32, tied
// embeddings; test/python/llama/llama_models.py gguf --type f32 --layers 2,
// imported by loomc --compile-to=import, its decode entry and tokenizer
// dropped): tokens 1x?, positions ?, logits 1x?x96 (test/gpu/program/dynamic.mlir).
module attributes {llm.model = {architecture = "llama", context_length = 128 : i64, head_dim = 16 : i64, hidden_size = 64 : i64, intermediate_size = 128 : i64, norm_eps = 9.9999997473787516E-6 : f64, num_heads = 4 : i64, num_kv_heads = 2 : i64, num_layers = 2 : i64, rope_dim = 16 : i64, rope_style = "interleaved", rope_theta = 1.000000e+04 : f64, source = "gguf", tied_embeddings = true, vocab_size = 96 : i64}} {
  func.func @forward(%arg0: tensor<1x?xi64> {loom.batch_dim = 0 : i64, loom.name = "tokens"}, %arg1: tensor<?xi64> {loom.name = "positions"}) -> (tensor<1x?x96xf32> {loom.batch_dim = 0 : i64, loom.name = "logits"}) {
    %0 = loom.weight "token_embd.weight" from <"tiny.gguf", offset = 3616> : tensor<96x64xf32>
    %1 = loom.embedding %0, %arg0 : tensor<96x64xf32>, tensor<1x?xi64> -> tensor<1x?x64xf32>
    %cos, %sin = loom.rotary_table %arg1 theta = 1.000000e+04 dim = 16 : tensor<?xi64> -> tensor<?x8xf32>
    %2 = loom.weight "blk.0.attn_norm.weight" from <"tiny.gguf", offset = 28192> : tensor<64xf32>
    %3 = loom.rms_norm %1 scale(%2 : tensor<64xf32>) epsilon = 9.99999974E-6 : tensor<1x?x64xf32> -> tensor<1x?x64xf32>
    %4 = loom.weight "blk.0.attn_q.weight" from <"tiny.gguf", offset = 28448> : tensor<64x64xf32>
    %5 = loom.weight "blk.0.attn_k.weight" from <"tiny.gguf", offset = 44832> : tensor<32x64xf32>
    %6 = loom.weight "blk.0.attn_v.weight" from <"tiny.gguf", offset = 53024> : tensor<32x64xf32>
    %7 = loom.matmul %3, %4 transpose_b : tensor<1x?x64xf32>, tensor<64x64xf32> -> tensor<1x?x64xf32>
    %8 = loom.matmul %3, %5 transpose_b : tensor<1x?x64xf32>, tensor<32x64xf32> -> tensor<1x?x32xf32>
    %9 = loom.matmul %3, %6 transpose_b : tensor<1x?x64xf32>, tensor<32x64xf32> -> tensor<1x?x32xf32>
    %10 = loom.reshape %7 : tensor<1x?x64xf32> -> tensor<1x?x4x16xf32>
    %11 = loom.transpose %10 permutation = [0, 2, 1, 3] : tensor<1x?x4x16xf32> -> tensor<1x4x?x16xf32>
    %12 = loom.reshape %8 : tensor<1x?x32xf32> -> tensor<1x?x2x16xf32>
    %13 = loom.transpose %12 permutation = [0, 2, 1, 3] : tensor<1x?x2x16xf32> -> tensor<1x2x?x16xf32>
    %14 = loom.reshape %9 : tensor<1x?x32xf32> -> tensor<1x?x2x16xf32>
    %15 = loom.transpose %14 permutation = [0, 2, 1, 3] : tensor<1x?x2x16xf32> -> tensor<1x2x?x16xf32>
    %16 = loom.rotary %11, %cos, %sin style = interleaved : tensor<1x4x?x16xf32>, tensor<?x8xf32> -> tensor<1x4x?x16xf32>
    %17 = loom.rotary %13, %cos, %sin style = interleaved : tensor<1x2x?x16xf32>, tensor<?x8xf32> -> tensor<1x2x?x16xf32>
    %output = loom.attention %16, %17, %15 causal : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32> -> tensor<1x4x?x16xf32>
    %18 = loom.transpose %output permutation = [0, 2, 1, 3] : tensor<1x4x?x16xf32> -> tensor<1x?x4x16xf32>
    %19 = loom.reshape %18 : tensor<1x?x4x16xf32> -> tensor<1x?x64xf32>
    %20 = loom.weight "blk.0.attn_output.weight" from <"tiny.gguf", offset = 61216> : tensor<64x64xf32>
    %21 = loom.matmul %19, %20 transpose_b : tensor<1x?x64xf32>, tensor<64x64xf32> -> tensor<1x?x64xf32>
    %22 = loom.add %1, %21 : tensor<1x?x64xf32>, tensor<1x?x64xf32> -> tensor<1x?x64xf32>
    %23 = loom.weight "blk.0.ffn_norm.weight" from <"tiny.gguf", offset = 77600> : tensor<64xf32>
    %24 = loom.rms_norm %22 scale(%23 : tensor<64xf32>) epsilon = 9.99999974E-6 : tensor<1x?x64xf32> -> tensor<1x?x64xf32>
    %25 = loom.weight "blk.0.ffn_gate.weight" from <"tiny.gguf", offset = 77856> : tensor<128x64xf32>
    %26 = loom.matmul %24, %25 transpose_b : tensor<1x?x64xf32>, tensor<128x64xf32> -> tensor<1x?x128xf32>
    %27 = loom.weight "blk.0.ffn_up.weight" from <"tiny.gguf", offset = 110624> : tensor<128x64xf32>
    %28 = loom.matmul %24, %27 transpose_b : tensor<1x?x64xf32>, tensor<128x64xf32> -> tensor<1x?x128xf32>
    %29 = loom.silu %26 : tensor<1x?x128xf32>
    %30 = loom.mul %29, %28 : tensor<1x?x128xf32>, tensor<1x?x128xf32> -> tensor<1x?x128xf32>
    %31 = loom.weight "blk.0.ffn_down.weight" from <"tiny.gguf", offset = 143392> : tensor<64x128xf32>
    %32 = loom.matmul %30, %31 transpose_b : tensor<1x?x128xf32>, tensor<64x128xf32> -> tensor<1x?x64xf32>
    %33 = loom.add %22, %32 : tensor<1x?x64xf32>, tensor<1x?x64xf32> -> tensor<1x?x64xf32>
    %34 = loom.weight "blk.1.attn_norm.weight" from <"tiny.gguf", offset = 176160> : tensor<64xf32>
    %35 = loom.rms_norm %33 scale(%34 : tensor<64xf32>) epsilon = 9.99999974E-6 : tensor<1x?x64xf32> -> tensor<1x?x64xf32>
    %36 = loom.weight "blk.1.attn_q.weight" from <"tiny.gguf", offset = 176416> : tensor<64x64xf32>
    %37 = loom.weight "blk.1.attn_k.weight" from <"tiny.gguf", offset = 192800> : tensor<32x64xf32>
    %38 = loom.weight "blk.1.attn_v.weight" from <"tiny.gguf", offset = 200992> : tensor<32x64xf32>
    %39 = loom.matmul %35, %36 transpose_b : tensor<1x?x64xf32>, tensor<64x64xf32> -> tensor<1x?x64xf32>
    %40 = loom.matmul %35, %37 transpose_b : tensor<1x?x64xf32>, tensor<32x64xf32> -> tensor<1x?x32xf32>
    %41 = loom.matmul %35, %38 transpose_b : tensor<1x?x64xf32>, tensor<32x64xf32> -> tensor<1x?x32xf32>
    %42 = loom.reshape %39 : tensor<1x?x64xf32> -> tensor<1x?x4x16xf32>
    %43 = loom.transpose %42 permutation = [0, 2, 1, 3] : tensor<1x?x4x16xf32> -> tensor<1x4x?x16xf32>
    %44 = loom.reshape %40 : tensor<1x?x32xf32> -> tensor<1x?x2x16xf32>
    %45 = loom.transpose %44 permutation = [0, 2, 1, 3] : tensor<1x?x2x16xf32> -> tensor<1x2x?x16xf32>
    %46 = loom.reshape %41 : tensor<1x?x32xf32> -> tensor<1x?x2x16xf32>
    %47 = loom.transpose %46 permutation = [0, 2, 1, 3] : tensor<1x?x2x16xf32> -> tensor<1x2x?x16xf32>
    %48 = loom.rotary %43, %cos, %sin style = interleaved : tensor<1x4x?x16xf32>, tensor<?x8xf32> -> tensor<1x4x?x16xf32>
    %49 = loom.rotary %45, %cos, %sin style = interleaved : tensor<1x2x?x16xf32>, tensor<?x8xf32> -> tensor<1x2x?x16xf32>
    %output_0 = loom.attention %48, %49, %47 causal : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32> -> tensor<1x4x?x16xf32>
    %50 = loom.transpose %output_0 permutation = [0, 2, 1, 3] : tensor<1x4x?x16xf32> -> tensor<1x?x4x16xf32>
    %51 = loom.reshape %50 : tensor<1x?x4x16xf32> -> tensor<1x?x64xf32>
    %52 = loom.weight "blk.1.attn_output.weight" from <"tiny.gguf", offset = 209184> : tensor<64x64xf32>
    %53 = loom.matmul %51, %52 transpose_b : tensor<1x?x64xf32>, tensor<64x64xf32> -> tensor<1x?x64xf32>
    %54 = loom.add %33, %53 : tensor<1x?x64xf32>, tensor<1x?x64xf32> -> tensor<1x?x64xf32>
    %55 = loom.weight "blk.1.ffn_norm.weight" from <"tiny.gguf", offset = 225568> : tensor<64xf32>
    %56 = loom.rms_norm %54 scale(%55 : tensor<64xf32>) epsilon = 9.99999974E-6 : tensor<1x?x64xf32> -> tensor<1x?x64xf32>
    %57 = loom.weight "blk.1.ffn_gate.weight" from <"tiny.gguf", offset = 225824> : tensor<128x64xf32>
    %58 = loom.matmul %56, %57 transpose_b : tensor<1x?x64xf32>, tensor<128x64xf32> -> tensor<1x?x128xf32>
    %59 = loom.weight "blk.1.ffn_up.weight" from <"tiny.gguf", offset = 258592> : tensor<128x64xf32>
    %60 = loom.matmul %56, %59 transpose_b : tensor<1x?x64xf32>, tensor<128x64xf32> -> tensor<1x?x128xf32>
    %61 = loom.silu %58 : tensor<1x?x128xf32>
    %62 = loom.mul %61, %60 : tensor<1x?x128xf32>, tensor<1x?x128xf32> -> tensor<1x?x128xf32>
    %63 = loom.weight "blk.1.ffn_down.weight" from <"tiny.gguf", offset = 291360> : tensor<64x128xf32>
    %64 = loom.matmul %62, %63 transpose_b : tensor<1x?x128xf32>, tensor<64x128xf32> -> tensor<1x?x64xf32>
    %65 = loom.add %54, %64 : tensor<1x?x64xf32>, tensor<1x?x64xf32> -> tensor<1x?x64xf32>
    %66 = loom.weight "output_norm.weight" from <"tiny.gguf", offset = 324128> : tensor<64xf32>
    %67 = loom.rms_norm %65 scale(%66 : tensor<64xf32>) epsilon = 9.99999974E-6 : tensor<1x?x64xf32> -> tensor<1x?x64xf32>
    %68 = loom.matmul %67, %0 transpose_b : tensor<1x?x64xf32>, tensor<96x64xf32> -> tensor<1x?x96xf32>
    return %68 : tensor<1x?x96xf32>
  }
}
