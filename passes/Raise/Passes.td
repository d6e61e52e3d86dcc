//===- Passes.td - the raise phase's passes ----------------*- tablegen -*-===//
//
// Each pass rewrites one family of primitive patterns, as ONNX exporters
// write them, into the high-level op the planner reasons about.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_RAISE_PASSES_TD
#define LOOM_PASSES_RAISE_PASSES_TD

include "mlir/Pass/PassBase.td"

def RaiseSoftmaxPass : Pass<"loom-raise-softmax", "mlir::func::FuncOp"> {
  let summary = "exp(x - max x) / sum(exp(...)) -> loom.softmax";
  let description = [{
    Matches `div(exp(x'), reduce sum(exp(x')) keep_dims)` over one axis,
    where `x'` is `x` or `x - reduce max(x)` over the same axis.
  }];
}

def RaiseGeluPass : Pass<"loom-raise-gelu", "mlir::func::FuncOp"> {
  let summary = "erf / tanh GELU formulas -> loom.gelu";
  let description = [{
    `0.5 * x * (1 + erf(x / sqrt 2))` (any association of the products, or
    `x * 0.7071...`) becomes `loom.gelu`; `0.5 * x * (1 + tanh(sqrt(2/pi) *
    (x + 0.044715 * x^3)))` becomes `loom.gelu approximate = tanh`.
  }];
}

def RaiseSiluPass : Pass<"loom-raise-silu", "mlir::func::FuncOp"> {
  let summary = "x * sigmoid(x) -> loom.silu";
}

def RaiseNormsPass : Pass<"loom-raise-norms", "mlir::func::FuncOp"> {
  let summary = "mean/variance formulas -> loom.layer_norm and loom.rms_norm";
  let description = [{
    `(x - mean x) / sqrt(mean((x - mean x)^2) + eps)` over the last axis
    becomes `loom.layer_norm`, `x * rsqrt(mean(x^2) + eps)` (also as
    `1/sqrt` or a division) becomes `loom.rms_norm`; a following
    multiplication by a scale and addition of a bias of the normalised
    shape are folded into the op.
  }];
}

def RaiseRotaryPass : Pass<"loom-raise-rotary", "mlir::func::FuncOp"> {
  let summary = "x * cos + rotate_half(x) * sin -> loom.rotary";
  let description = [{
    Matches the Hugging Face form `x * cos + cat(-x[..., R:], x[..., :R]) *
    sin` on `[B, H, S, 2R]` with cos/sin `[S, 2R]` whose two halves are equal
    (as Hugging Face builds them) and emits `loom.rotary ... style = half`
    with the first halves of the tables.
  }];
}

def RaiseAttentionPass : Pass<"loom-raise-attention", "mlir::func::FuncOp"> {
  let summary = "softmax(q k^T * s + mask) v -> loom.attention";
  let description = [{
    Matches `matmul(softmax(add?(mul|div?(matmul(q, k^T), s), mask)), v)`,
    with `q` optionally pre-scaled, `k^T` as a transpose or `transpose_b`,
    and grouped KV heads written as reshape(broadcast(reshape(k))) (torch
    `repeat_interleave`/`expand`); rank-3 `[B*H, S, D]` operands (torch
    MultiheadAttention) are viewed as `[1, B*H, S, D]`, or as
    `[B, H, S, D]` when B*H is dynamic and H is known from the reshape
    `[S, B, H*D] -> [S, B*H, D]` that made the heads.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect"];
}

#endif // LOOM_PASSES_RAISE_PASSES_TD
