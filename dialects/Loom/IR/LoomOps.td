//===- LoomOps.td - operations of the loom dialect ---------*- tablegen -*-===//
//
// Ops are grouped as: structure (mesh, weight, constant), compute, quantized
// compute, sharding annotations, collectives and point-to-point transfers.
// Elementwise families are instances of one TableGen class each.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMOPS_TD

include "dialects/Loom/IR/LoomBase.td"
include "dialects/Loom/IR/LoomEnums.td"
include "dialects/Loom/IR/LoomAttrs.td"
include "dialects/Loom/IR/LoomTypes.td"
include "dialects/Loom/IR/LoomInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Loom_MeshOp : Loom_Op<"mesh", [Symbol]> {
  let summary = "declares a named device mesh";
  let description = [{
    Declares the mesh that shardings and collectives refer to by symbol.

    ```mlir
    loom.mesh @mesh = <dp = 2, tp = 4>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Loom_MeshAttr:$mesh);
  let assemblyFormat = "$sym_name `=` $mesh attr-dict";
}

def Loom_WeightOp : Loom_Op<"weight", [Pure]> {
  let summary = "a reference to a weight in external storage";
  let description = [{
    Names a tensor whose bytes live outside the IR (a GGUF, safetensors or
    ONNX external-data file); `from` gives the file and byte offset when the
    importer knows them. The result is a plain tensor or, for block-quantized
    storage, a `!loom.qtensor`. The IR never holds the bytes.

    ```mlir
    %w = loom.weight "blk.0.attn_q.weight"
           from <"smollm2.gguf", offset = 736> : !loom.qtensor<576x576, #loom.quant<q4_1>>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<Loom_ExternAttr>:$source);
  let results = (outs Loom_AnyTensor:$result);
  let assemblyFormat = "$name (`from` $source^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Loom_ConstantOp : Loom_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a small constant tensor";
  let description = [{
    Small constants only (shapes, scalars, masks, tables up to 64 KiB):
    weights are `loom.weight`, never inline.

    ```mlir
    %c = loom.constant dense<1.0> : tensor<4xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Binary ops broadcast their operands with numpy rules.
class Loom_BinaryOp<string mnemonic, Type operandType = Loom_Tensor,
                    list<Trait> traits = []>
    : Loom_Op<mnemonic, !listconcat([Pure], traits)> {
  let summary = "elementwise `" # mnemonic # "` with numpy broadcasting";
  let description = [{
    Elementwise on operands of the same element type, broadcast with numpy
    rules; the result has the broadcast shape.

    ```mlir
    %0 = loom.}] # mnemonic # [{ %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_AddOp : Loom_BinaryOp<"add", Loom_Tensor, [Commutative]>;
def Loom_SubOp : Loom_BinaryOp<"sub">;
def Loom_MulOp : Loom_BinaryOp<"mul", Loom_Tensor, [Commutative]>;
def Loom_DivOp : Loom_BinaryOp<"div">;
def Loom_PowOp : Loom_BinaryOp<"pow", Loom_FloatTensor>;
def Loom_MaxOp : Loom_BinaryOp<"max", Loom_Tensor, [Commutative]>;
def Loom_MinOp : Loom_BinaryOp<"min", Loom_Tensor, [Commutative]>;
def Loom_AndOp : Loom_BinaryOp<"and", Loom_BoolTensor, [Commutative]>;
def Loom_OrOp : Loom_BinaryOp<"or", Loom_BoolTensor, [Commutative]>;

class Loom_UnaryOp<string mnemonic, Type type = Loom_FloatTensor,
                   list<Trait> traits = []>
    : Loom_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType,
                                     Elementwise], traits)> {
  let summary = "elementwise `" # mnemonic # "`";
  let description = [{
    ```mlir
    %0 = loom.}] # mnemonic # [{ %x : tensor<2x4xf32>
    ```
  }];
  let arguments = (ins type:$input);
  let results = (outs type:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Loom_NegOp : Loom_UnaryOp<"neg", Loom_Tensor>;
def Loom_AbsOp : Loom_UnaryOp<"abs", Loom_Tensor>;
def Loom_ExpOp : Loom_UnaryOp<"exp">;
def Loom_LogOp : Loom_UnaryOp<"log">;
def Loom_SqrtOp : Loom_UnaryOp<"sqrt">;
def Loom_RsqrtOp : Loom_UnaryOp<"rsqrt">;
def Loom_ReciprocalOp : Loom_UnaryOp<"reciprocal">;
def Loom_SinOp : Loom_UnaryOp<"sin">;
def Loom_CosOp : Loom_UnaryOp<"cos">;
def Loom_TanhOp : Loom_UnaryOp<"tanh">;
def Loom_SigmoidOp : Loom_UnaryOp<"sigmoid">;
def Loom_SiluOp : Loom_UnaryOp<"silu">;
def Loom_ReluOp : Loom_UnaryOp<"relu">;
def Loom_ErfOp : Loom_UnaryOp<"erf">;
def Loom_NotOp : Loom_UnaryOp<"not", Loom_BoolTensor>;

def Loom_GeluOp : Loom_Op<"gelu", [Pure, SameOperandsAndResultType,
                                   Elementwise]> {
  let summary = "elementwise GELU, exact (erf) or tanh-approximated";
  let description = [{
    ```mlir
    %0 = loom.gelu %x : tensor<2x4xf32>
    %1 = loom.gelu %x approximate = tanh : tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input,
      DefaultValuedAttr<Loom_GeluApproximationAttr,
                        "::loom::GeluApproximation::none">:$approximate);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$input (`approximate` `=` $approximate^)? attr-dict `:` type($input)";
}

def Loom_CompareOp : Loom_Op<"compare", [Pure]> {
  let summary = "elementwise comparison with numpy broadcasting";
  let description = [{
    ```mlir
    %0 = loom.compare lt, %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Loom_CompareKindAttr:$predicate, Loom_Tensor:$lhs,
                       Loom_Tensor:$rhs);
  let results = (outs Loom_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_SelectOp : Loom_Op<"select", [Pure]> {
  let summary = "elementwise choice (ONNX Where) with numpy broadcasting";
  let description = [{
    ```mlir
    %0 = loom.select %c, %a, %b : tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Loom_BoolTensor:$condition, Loom_Tensor:$true_value,
                       Loom_Tensor:$false_value);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:` type($condition)
    `,` type($true_value) `,` type($false_value) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_CastOp : Loom_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "elementwise conversion of the element type";
  let description = [{
    ```mlir
    %0 = loom.cast %x : tensor<4xf32> -> tensor<4xf16>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Contractions, normalisations, reductions
//===----------------------------------------------------------------------===//

def Loom_MatmulOp : Loom_Op<"matmul", [Pure]> {
  let summary = "batched matrix multiplication";
  let description = [{
    `result[..., m, n] = sum_k lhs[..., m, k] * rhs[..., k, n]`, with either
    operand optionally transposed in its last two dimensions. Batch dimensions
    broadcast with numpy rules; a rank-2 operand is shared by every batch.

    ```mlir
    %0 = loom.matmul %x, %w : tensor<?x16x64xf32>, tensor<64x32xf32> -> tensor<?x16x32xf32>
    %1 = loom.matmul %x, %w transpose_b : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$lhs, Loom_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_SoftmaxOp : Loom_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let description = [{
    ```mlir
    %0 = loom.softmax %x axis = -1 : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_AxisAttr:$axis);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Loom_ReduceOp : Loom_Op<"reduce", [Pure]> {
  let summary = "reduction over a set of axes";
  let description = [{
    ```mlir
    %0 = loom.reduce mean %x axes = [1] keep_dims : tensor<2x8xf32> -> tensor<2x1xf32>
    %1 = loom.reduce sum %x axes = [0, 1] : tensor<2x8xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Loom_ReduceKindAttr:$kind, Loom_Tensor:$input,
                       DenseI64ArrayAttr:$axes, UnitAttr:$keep_dims);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $kind $input `axes` `=` $axes (`keep_dims` $keep_dims^)? attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_RmsNormOp : Loom_Op<"rms_norm", [Pure]> {
  let summary = "RMS normalisation over the innermost dimension";
  let description = [{
    `y = x / sqrt(mean(x^2, -1) + epsilon) * scale`; `scale` has the shape of
    the innermost dimension and may be absent.

    ```mlir
    %0 = loom.rms_norm %x scale(%w : tensor<576xf32>) epsilon = 1.0e-05 : tensor<?x576xf32> -> tensor<?x576xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input,
                       Optional<Loom_FloatTensor>:$scale, F32Attr:$epsilon);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `:` type($scale) `)`)? `epsilon` `=` $epsilon
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_LayerNormOp : Loom_Op<"layer_norm", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "layer normalisation over the dimensions from `axis` on";
  let description = [{
    `y = (x - mean) / sqrt(var + epsilon) * scale + bias`, the statistics
    taken over dimensions `axis..rank-1` (ONNX LayerNormalization). `scale`
    and `bias` have the shape of those dimensions and may be absent.

    ```mlir
    %0 = loom.layer_norm %x scale(%g : tensor<384xf32>) bias(%b : tensor<384xf32>) axis = -1 epsilon = 9.99999996E-13 : tensor<?x384xf32> -> tensor<?x384xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input,
                       Optional<Loom_FloatTensor>:$scale,
                       Optional<Loom_FloatTensor>:$bias,
                       Loom_AxisAttr:$axis, F32Attr:$epsilon);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `:` type($scale) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? `axis` `=` $axis
    `epsilon` `=` $epsilon attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (channels first: [N, C, spatial...])
//===----------------------------------------------------------------------===//

def Loom_ConvOp : Loom_Op<"conv", [Pure]> {
  let summary = "N-D grouped convolution, channels first (ONNX Conv)";
  let description = [{
    `input` `[N, C, D1..Dk]`, `weight` `[M, C/groups, K1..Kk]`, optional
    `bias` `[M]`; result `[N, M, O1..Ok]` with
    `O = floor((D + pad_begin + pad_end - dilation*(K-1) - 1) / stride) + 1`.
    Input channel block g (of C/groups) feeds output channel block g (of
    M/groups); depthwise is groups = C. Padding is explicit (zeros;
    ONNX's auto_pad is resolved at import).

    ```mlir
    %0 = loom.conv %x, %w bias(%b : tensor<16xf32>) strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<?x16x32x32xf32>
    ```

    **Constraints:** the input and weight have the same rank k + 2 >= 3;
    `strides`, `dilations` have k positive entries, `pads` 2k non-negative
    ones (all begins, then all ends); `groups` >= 1 divides C and M; the
    channel and spatial sizes are static.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$weight,
                       Optional<Loom_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$pads,
                       I64Attr:$groups);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)?
    `strides` `=` $strides `dilations` `=` $dilations `pads` `=` $pads
    `groups` `=` $groups attr-dict `:` type($input) `,` type($weight) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Loom_ConvTransposeOp : Loom_Op<"conv_transpose", [Pure]> {
  let summary = "N-D grouped transposed convolution (ONNX ConvTranspose)";
  let description = [{
    The gradient of `loom.conv` with respect to its input: `input`
    `[N, C, D1..Dk]`, `weight` `[C, M/groups, K1..Kk]`, optional `bias`
    `[M]`; result `[N, M, O1..Ok]` with
    `O = stride*(D-1) + output_padding + dilation*(K-1) + 1 - pad_begin - pad_end`.
    (ONNX's output_shape and auto_pad are resolved to pads at import.)

    ```mlir
    %0 = loom.conv_transpose %x, %w strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] output_padding = [1, 1] groups = 1 : tensor<1x8x4x4xf32>, tensor<8x4x3x3xf32> -> tensor<1x4x10x10xf32>
    ```

    **Constraints:** as `loom.conv`, with the weight `[C, M/groups, K...]`;
    `output_padding` has k entries, each smaller than its stride or
    dilation.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$weight,
                       Optional<Loom_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$output_padding, I64Attr:$groups);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)?
    `strides` `=` $strides `dilations` `=` $dilations `pads` `=` $pads
    `output_padding` `=` $output_padding `groups` `=` $groups attr-dict `:`
    type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_PoolOp : Loom_Op<"pool", [Pure]> {
  let summary = "N-D max or average pooling, channels first";
  let description = [{
    Each window of `kernel` (dilated, strided) over the spatial dimensions of
    `input` `[N, C, D1..Dk]`: its maximum (`max`; pads are -inf) or its
    mean (`avg`: the sum over the window divided by the number of input
    elements in it, or, with `count_include_pad`, also the explicit pads in
    it). The output size is
    `floor((D + pads - dilation*(K-1) - 1) / stride) + 1`, or with
    `ceil_mode` the ceiling, less one when the last window would start
    past the input and its begin pad (ONNX, PyTorch).

    ```mlir
    %0 = loom.pool max %x kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<?x16x32x32xf32> -> tensor<?x16x16x16xf32>
    %1 = loom.pool avg %x kernel = [3] strides = [1] dilations = [1] pads = [1, 1] ceil_mode count_include_pad : tensor<1x4x8xf32> -> tensor<1x4x8xf32>
    ```

    **Constraints:** rank k + 2 >= 3; `kernel`, `strides`, `dilations` have
    k positive entries, `pads` 2k non-negative ones, each pad smaller than
    its dilated kernel; the channel and spatial sizes are static.
  }];
  let arguments = (ins Loom_PoolKindAttr:$kind, Loom_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$pads,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $input `kernel` `=` $kernel `strides` `=` $strides
    `dilations` `=` $dilations `pads` `=` $pads (`ceil_mode` $ceil_mode^)?
    (`count_include_pad` $count_include_pad^)? attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Transformer blocks
//===----------------------------------------------------------------------===//

def Loom_RotaryTableOp : Loom_Op<"rotary_table", [Pure,
    AllTypesMatch<["cos", "sin"]>]> {
  let summary = "cos and sin tables of a rotary embedding for given positions";
  let description = [{
    For positions p (any shape P) returns cos and sin of `p * theta^(-2i/dim)`
    for i in [0, dim/2): two tensors of shape P x dim/2.

    ```mlir
    %cos, %sin = loom.rotary_table %pos theta = 1.0e+04 dim = 64 : tensor<?xi64> -> tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Loom_IndexTensor:$positions, F32Attr:$theta,
                       I64Attr:$dim);
  let results = (outs Loom_FloatTensor:$cos, Loom_FloatTensor:$sin);
  let assemblyFormat = [{
    $positions `theta` `=` $theta `dim` `=` $dim attr-dict `:`
    type($positions) `->` type($cos)
  }];
  let hasVerifier = 1;
}

def Loom_RotaryOp : Loom_Op<"rotary", [Pure,
    AllTypesMatch<["cos", "sin"]>]> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates pairs of the first `2 * R` features of each head of `input`
    (`[batch, heads, seq, head_dim]`) by the angles whose cos and sin are
    given (`[seq, R]` or `[batch, seq, R]`). `half` pairs feature i with
    i + R (Hugging Face); `interleaved` pairs 2i with 2i+1 (GGUF/llama.cpp).

    ```mlir
    %0 = loom.rotary %q, %cos, %sin style = half : tensor<1x9x?x64xf32>, tensor<?x32xf32> -> tensor<1x9x?x64xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$cos,
                       Loom_FloatTensor:$sin, Loom_RotaryStyleAttr:$style);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin `style` `=` $style attr-dict `:` type($input) `,`
    type($cos) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_AttentionOp : Loom_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention, grouped-query, with KV cache";
  let description = [{
    `softmax(q k^T * scale + mask) v` with `query` `[B, Hq, S, D]`, `key`
    `[B, Hkv, T, D]` and `value` `[B, Hkv, T, Dv]`; Hq must be a multiple of Hkv
    (grouped-query attention: query head h reads KV head h / (Hq/Hkv)).
    `causal` masks key positions after the query position (aligned to the
    end when a cache is present). `mask` is additive (float) or boolean
    (true keeps), broadcastable to `[B, Hq, S, P+T]`. With `past_key` and
    `past_value` (`[B, Hkv, P, D]`) the op attends over the concatenation and
    also returns it (`present_key`, `present_value`: `[B, Hkv, P+T, D]`).
    `scale` defaults to 1/sqrt(D).

    Cache form (`cache(%ck, %cv at %positions ...)`): `cache_key`
    `[B, Hkv, C, D]` and `cache_value` `[B, Hkv, C, Dv]` hold C positions (the
    context length), `cache_positions` `[S]` (i64) the positions of the S new
    query/key rows, contiguous from `p0 = positions[0]`. The op writes `key`
    and `value` into the caches at rows `[p0, p0 + S)`, attends over rows
    `[0, p0 + S)` of the updated caches (causal: query row i sees rows
    `<= p0 + i`) and returns the updated caches as `present` (the caches'
    types). It needs `p0 + S <= C`. Lowered, the write is a
    `tensor.insert_slice` into the cache operand: when the caches are entry
    arguments marked `loom.state`, bufferization writes the caller's buffers
    in place and the updated caches are not returned (docs/DIALECT.md).

    ```mlir
    %o = loom.attention %q, %k, %v causal : tensor<1x9x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32> -> tensor<1x9x?x64xf32>
    %o2, %pk, %pv = loom.attention %q, %k, %v past(%ck, %cv : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>) causal : tensor<1x9x1x64xf32>, tensor<1x3x1x64xf32>, tensor<1x3x1x64xf32> -> tensor<1x9x1x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>
    %o3, %uk, %uv = loom.attention %q, %k, %v cache(%ck, %cv at %pos : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>, tensor<?xi64>) causal : tensor<1x9x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32> -> tensor<1x9x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$query, Loom_FloatTensor:$key,
                       Loom_FloatTensor:$value,
                       Optional<Loom_Tensor>:$mask,
                       Optional<Loom_FloatTensor>:$past_key,
                       Optional<Loom_FloatTensor>:$past_value,
                       Optional<Loom_FloatTensor>:$cache_key,
                       Optional<Loom_FloatTensor>:$cache_value,
                       Optional<Loom_IndexTensor>:$cache_positions,
                       UnitAttr:$causal, OptionalAttr<F32Attr>:$scale);
  let results = (outs Loom_FloatTensor:$output,
                      Variadic<Loom_FloatTensor>:$present);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`past` `(` $past_key^ `,` $past_value `:` type($past_key) `,`
       type($past_value) `)`)?
    (`cache` `(` $cache_key^ `,` $cache_value `at` $cache_positions `:`
       type($cache_key) `,` type($cache_value) `,` type($cache_positions)
       `)`)?
    (`causal` $causal^)? (`scale` `=` $scale^)? attr-dict `:` type($query) `,`
    type($key) `,` type($value) `->` type(results)
  }];
  let hasVerifier = 1;
}

def Loom_EmbeddingOp : Loom_Op<"embedding", [Pure]> {
  let summary = "rows of an embedding table for token ids";
  let description = [{
    `result[..., :] = table[ids[...], :]`; the table may be quantized.

    ```mlir
    %0 = loom.embedding %table, %ids : tensor<49152x576xf32>, tensor<1x?xi64> -> tensor<1x?x576xf32>
    ```
  }];
  let arguments = (ins Loom_AnyTensor:$table, Loom_IndexTensor:$ids);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` type($table) `,` type($ids) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Loom_GatherOp : Loom_Op<"gather", [Pure]> {
  let summary = "gather slices along one axis (ONNX Gather)";
  let description = [{
    The result shape is `input[:axis] + indices + input[axis+1:]`.

    ```mlir
    %0 = loom.gather %x, %i axis = 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, Loom_IndexTensor:$indices,
                       Loom_AxisAttr:$axis);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $indices `axis` `=` $axis attr-dict `:` type($input) `,`
    type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_ReshapeOp : Loom_Op<"reshape", [Pure]> {
  let summary = "reinterpret the shape, keeping the row-major element order";
  let description = [{
    `sizes`, when given, are the run-time sizes of the result's dynamic
    dimensions, in order (an ONNX shape computed from run-time dims,
    `[S*B, E] -> [S, B, E]`); without them the lowering infers each dynamic
    size from the element count, and refuses a reshape where that is
    ambiguous (two dynamic sizes changed in one group).

    ```mlir
    %0 = loom.reshape %x : tensor<?x576xf32> -> tensor<?x9x64xf32>
    %1 = loom.reshape %y sizes(%s, %b) : tensor<?x64xf32> -> tensor<?x?x64xf32>
    ```

    **Constraints:** no sizes, or one per dynamic result dimension.
  }];
  let arguments = (ins Loom_Tensor:$input, Variadic<Index>:$sizes);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input (`sizes` `(` $sizes^ `)`)? attr-dict `:` type($input) `->`
    type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input), [{
      build($_builder, $_state, result, input, ::mlir::ValueRange{});
    }]>
  ];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Loom_TransposeOp : Loom_Op<"transpose", [Pure]> {
  let summary = "permute the dimensions";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`.

    ```mlir
    %0 = loom.transpose %x permutation = [0, 2, 1, 3] : tensor<1x?x9x64xf32> -> tensor<1x9x?x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `permutation` `=` $permutation attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Loom_ConcatOp : Loom_Op<"concat", [Pure]> {
  let summary = "concatenate along one axis";
  let description = [{
    ```mlir
    %0 = loom.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Loom_Tensor>:$inputs, Loom_AxisAttr:$axis);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_SliceOp : Loom_Op<"slice", [Pure]> {
  let summary = "strided slice with static bounds";
  let description = [{
    Per dimension `[start, limit)` with a positive step; `limit` may be
    larger than a dynamic dimension's size, and is clamped at run time.

    ```mlir
    %0 = loom.slice %x starts = [0, 32] limits = [4, 64] steps = [1, 1] : tensor<4x64xf32> -> tensor<4x32xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$steps);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `starts` `=` $starts `limits` `=` $limits `steps` `=` $steps
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Loom_BroadcastOp : Loom_Op<"broadcast", [Pure]> {
  let summary = "broadcast to a shape with numpy rules (ONNX Expand)";
  let description = [{
    `sizes`, when given, are the run-time sizes of the result's dynamic
    dimensions, in order (ConstantOfShape or Expand to a shape computed
    from run-time dims); without them a dynamic result dimension takes the
    input's size there, which must then be dynamic too.

    ```mlir
    %0 = loom.broadcast %x : tensor<1x4xf32> -> tensor<8x4xf32>
    %1 = loom.broadcast %c sizes(%s, %s) : tensor<f32> -> tensor<?x?xf32>
    ```

    **Constraints:** no sizes, or one per dynamic result dimension.
  }];
  let arguments = (ins Loom_Tensor:$input, Variadic<Index>:$sizes);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input (`sizes` `(` $sizes^ `)`)? attr-dict `:` type($input) `->`
    type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input), [{
      build($_builder, $_state, result, input, ::mlir::ValueRange{});
    }]>
  ];
  let hasVerifier = 1;
}

def Loom_IotaOp : Loom_Op<"iota", [Pure]> {
  let summary = "0, 1, 2, ... along a 1-D result (ONNX Range)";
  let description = [{
    `result[i] = i`, integer or float; `size` gives the length when the
    result is dynamic (a range up to a run-time sequence length).

    ```mlir
    %0 = loom.iota size(%s) : tensor<?xi64>
    %1 = loom.iota : tensor<8xf32>
    ```

    **Constraints:** rank 1; `size` exactly when the length is dynamic.
  }];
  let arguments = (ins Optional<Index>:$size);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "(`size` `(` $size^ `)`)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Quantized compute
//===----------------------------------------------------------------------===//

def Loom_QMatmulOp : Loom_Op<"qmatmul", [Pure]> {
  let summary = "matmul with a block-quantized weight";
  let description = [{
    `result[..., n] = sum_k input[..., k] * dequant(weight)[n, k]`: the weight
    is `[N, K]` (as `nn.Linear` and GGUF store it) with blocks along K, as
    described by its `#loom.quant` (block size, bits, scale and min layout).

    ```mlir
    %0 = loom.qmatmul %x, %w : tensor<?x576xf32>, !loom.qtensor<1536x576, #loom.quant<q4_0>> -> tensor<?x1536xf32>
    %1 = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<int8x3>} : tensor<?x576xf32>, !loom.qtensor<1536x576, #loom.quant<q4_0>> -> tensor<?x1536xf32>
    ```

    `quant_activations` (set by `loom-quantize`) fixes the activations of
    the generated kernel; without it the lowering picks them from the
    module's `loom.target`.
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_QTensorType:$weight,
                       OptionalAttr<Loom_QuantActivationsAttr>:$quant_activations);
  let results = (outs Loom_FloatTensor:$result);
  // custom<QMatmulAttrDict>: attr-dict that reads the string spelling of
  // quant_activations older IR carries (LoomOps.cpp).
  let assemblyFormat = [{
    $input `,` $weight `` custom<QMatmulAttrDict>(attr-dict) `:` type($input) `,`
    qualified(type($weight)) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::loom::QuantAttr getQuant() {
      return ::llvm::cast<QTensorType>(getWeight().getType()).getQuant();
    }
    /// The base name of this op's GPU kernel family (`loom.gpu_kernel`, set
    /// by loom-gpu-build-qmatmul-kernels), or null.
    ::mlir::StringAttr getGpuKernelAttr() {
      return (*this)->getAttrOfType<::mlir::StringAttr>(
          LoomDialect::kGpuKernelAttrName);
    }
    void setGpuKernel(::mlir::StringAttr base) {
      (*this)->setAttr(LoomDialect::kGpuKernelAttrName, base);
    }
  }];
}

def Loom_QuantizeOp : Loom_Op<"quantize", [Pure]> {
  let summary = "quantize a float tensor block-wise";
  let description = [{
    ```mlir
    %q = loom.quantize %w : tensor<64x128xf32> -> !loom.qtensor<64x128, #loom.quant<int4, block = 32, mode = symmetric, scale = f16>>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input);
  let results = (outs Loom_QTensorType:$result);
  let assemblyFormat =
      "$input attr-dict `:` type($input) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def Loom_DequantizeOp : Loom_Op<"dequantize", [Pure]> {
  let summary = "expand a block-quantized tensor to floats";
  let description = [{
    ```mlir
    %w = loom.dequantize %q : !loom.qtensor<64x128, #loom.quant<q8_0>> -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Loom_QTensorType:$input);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` qualified(type($input)) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Sharding
//===----------------------------------------------------------------------===//

def Loom_ShardOp : Loom_Op<"shard", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "annotate a value with a sharding";
  let description = [{
    The result is the input, required to be laid out as `sharding` from here
    on. The sharding phase honours every annotation as given.

    ```mlir
    %0 = loom.shard %x to <@mesh, [{}, {tp} ]> : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, Loom_ShardingAttr:$sharding);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input `to` $sharding attr-dict `:` type($input)";
}

def Loom_AxesPerDimAttr : TypedArrayAttrBase<StrArrayAttr,
    "one list of mesh axes per dimension">;

def Loom_LocalSliceOp : Loom_Op<"local_slice", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "keep this device's block of a replicated value";
  let description = [{
    The input is replicated over the axes named in `split`; the result is
    this device's block of it: dimension `d` is cut into as many blocks as
    the product of the sizes of `split[d]`'s axes, and the device keeps the
    block whose index is the row-major linearisation of its coordinates over
    those axes in the order listed (major to minor), as `#loom.sharding`
    orders the axes of a dimension. No communication. The partitioner emits
    it where a value becomes sharded (sharded arguments and weights, a
    reshard that newly splits a dimension).

    ```mlir
    %0 = loom.local_slice %x on @mesh split = [["tp"], []] : tensor<8x64xf32> -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       Loom_AxesPerDimAttr:$split);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `split` `=` $split attr-dict `:` type($input) `->`
    type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Collectives and point to point
//===----------------------------------------------------------------------===//

class Loom_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Loom_Op<mnemonic, !listconcat([
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<Loom_CollectiveOpInterface>], traits)>;

def Loom_AllReduceOp : Loom_CollectiveOp<"all_reduce",
    [SameOperandsAndResultType]> {
  let summary = "reduce over a group and give every member the result";
  let description = [{
    ```mlir
    %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<8x64xf32>
    %1 = loom.all_reduce %x on @mesh axes = ["dp", "tp"] reduction = max : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes,
                       DefaultValuedAttr<Loom_ReductionAttr,
                                         "::loom::Reduction::sum">:$reduction);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes (`reduction` `=` $reduction^)?
    attr-dict `:` type($input)
  }];
}

def Loom_AllGatherOp : Loom_CollectiveOp<"all_gather"> {
  let summary = "concatenate the members' tensors along a dimension";
  let description = [{
    The result dimension `gather_dim` is the group size times the input's;
    members are placed in group order.

    ```mlir
    %0 = loom.all_gather %x on @mesh axes = ["tp"] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, Loom_AxisAttr:$gather_dim);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `gather_dim` `=` $gather_dim
    attr-dict `:` type($input) `->` type($result)
  }];
}

def Loom_ReduceScatterOp : Loom_CollectiveOp<"reduce_scatter"> {
  let summary = "reduce over a group and keep this member's slice";
  let description = [{
    The input dimension `scatter_dim` is the group size times the result's.

    ```mlir
    %0 = loom.reduce_scatter %x on @mesh axes = ["tp"] scatter_dim = 0 : tensor<64x64xf32> -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, Loom_AxisAttr:$scatter_dim,
                       DefaultValuedAttr<Loom_ReductionAttr,
                                         "::loom::Reduction::sum">:$reduction);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `scatter_dim` `=` $scatter_dim
    (`reduction` `=` $reduction^)? attr-dict `:` type($input) `->`
    type($result)
  }];
}

def Loom_AllToAllOp : Loom_CollectiveOp<"all_to_all"> {
  let summary = "split along one dimension, exchange, concatenate along another";
  let description = [{
    Member i sends its j-th slice along `split_dim` to member j, and
    concatenates what it receives along `concat_dim` in group order.

    ```mlir
    %0 = loom.all_to_all %x on @mesh axes = ["ep"] split_dim = 0 concat_dim = 1 : tensor<8x16xf32> -> tensor<2x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, Loom_AxisAttr:$split_dim,
                       Loom_AxisAttr:$concat_dim);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $mesh_axes `split_dim` `=` $split_dim
    `concat_dim` `=` $concat_dim attr-dict `:` type($input) `->` type($result)
  }];
}

def Loom_SendOp : Loom_CollectiveOp<"send"> {
  let summary = "send a tensor to one member of a group";
  let description = [{
    The peer is given by its index in the group (`peer`) or relative to this
    device's index, wrapping around (`shift`); exactly one is given.
    `channel` pairs a send with its `loom.recv`.

    ```mlir
    loom.send %x to @mesh axes = ["pp"] peer = 1 channel = 0 : tensor<4x64xf32>
    loom.send %x to @mesh axes = ["tp"] shift = 1 channel = 2 : tensor<4x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$mesh_axes, OptionalAttr<I64Attr>:$peer,
                       OptionalAttr<I64Attr>:$shift, I64Attr:$channel);
  let assemblyFormat = [{
    $input `to` $mesh `axes` `=` $mesh_axes (`peer` `=` $peer^)?
    (`shift` `=` $shift^)? `channel` `=` $channel attr-dict `:` type($input)
  }];
}

def Loom_RecvOp : Loom_CollectiveOp<"recv"> {
  let summary = "receive a tensor from one member of a group";
  let description = [{
    The peer is given as for `loom.send` (`shift = -1` receives from the
    previous member of a ring).

    ```mlir
    %0 = loom.recv from @mesh axes = ["pp"] peer = 0 channel = 0 : tensor<4x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$mesh_axes,
                       OptionalAttr<I64Attr>:$peer,
                       OptionalAttr<I64Attr>:$shift, I64Attr:$channel);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    `from` $mesh `axes` `=` $mesh_axes (`peer` `=` $peer^)?
    (`shift` `=` $shift^)? `channel` `=` $channel attr-dict `:` type($result)
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMOPS_TD
