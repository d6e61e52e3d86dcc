"""Every loom compute op the CPU lowering supports, compiled by loomc and run
by loom-run on one rank, against a numpy reference on the same inputs."""
from math import erf

import numpy as np
import pytest

from e2e_util import run

rng = np.random.default_rng(7)
f32 = np.float32


def r(*shape):
    return rng.standard_normal(shape).astype(f32)


def verf(x):
    return np.vectorize(erf)(x).astype(x.dtype)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention_ref(q, k, v, causal=False, mask=None, scale=None, past=None):
    if past is not None:
        k = np.concatenate([past[0], k], axis=2)
        v = np.concatenate([past[1], v], axis=2)
    g = q.shape[1] // k.shape[1]
    kk, vv = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    scale = scale or 1 / np.sqrt(q.shape[-1])
    s = q @ kk.transpose(0, 1, 3, 2) * scale
    S, T = q.shape[2], kk.shape[2]
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    if causal:
        future = np.arange(T)[None, :] > np.arange(S)[:, None] + (T - S)
        s = np.where(future, -np.inf, s)
    out = softmax(s) @ vv
    return (out, k, v) if past is not None else (out,)


def rotary_ref(x, cos, sin, style):
    R = cos.shape[-1]
    out = x.copy()
    c, s = cos[None, None], sin[None, None]
    if style == "half":
        x1, x2 = x[..., :R], x[..., R:2 * R]
        out[..., :R] = x1 * c - x2 * s
        out[..., R:2 * R] = x2 * c + x1 * s
    else:
        x1, x2 = x[..., 0:2 * R:2], x[..., 1:2 * R:2]
        out[..., 0:2 * R:2] = x1 * c - x2 * s
        out[..., 1:2 * R:2] = x2 * c + x1 * s
    return out


def rotary_table_ref(pos, theta, dim):
    inv = theta ** (-np.arange(0, dim // 2, dtype=np.float64) * 2 / dim)
    ang = pos[..., None].astype(np.float64) * inv
    return np.cos(ang).astype(f32), np.sin(ang).astype(f32)


CASES = {}


def case(name, sig, body, ins, ref, tol=1e-5):
    CASES[name] = (sig, body, ins, ref, tol)


x = r(3, 5)
case("softmax", "(%a: tensor<3x5xf32>) -> tensor<3x5xf32>",
     "%0 = loom.softmax %a axis = -1 : tensor<3x5xf32>", [x],
     lambda a: softmax(a))
case("softmax_axis0", "(%a: tensor<3x5xf32>) -> tensor<3x5xf32>",
     "%0 = loom.softmax %a axis = 0 : tensor<3x5xf32>", [x],
     lambda a: softmax(a, 0))
g, b = r(5), r(5)
case("layer_norm", "(%a: tensor<?x5xf32>, %g: tensor<5xf32>, %b: tensor<5xf32>) -> tensor<?x5xf32>",
     "%0 = loom.layer_norm %a scale(%g : tensor<5xf32>) bias(%b : tensor<5xf32>) axis = -1 epsilon = 1.0e-5 : tensor<?x5xf32> -> tensor<?x5xf32>",
     [x, g, b],
     lambda a, g, b: (a - a.mean(-1, keepdims=True)) /
     np.sqrt(a.var(-1, keepdims=True) + 1e-5) * g + b)
case("rms_norm", "(%a: tensor<3x5xf32>, %g: tensor<5xf32>) -> tensor<3x5xf32>",
     "%0 = loom.rms_norm %a scale(%g : tensor<5xf32>) epsilon = 1.0e-6 : tensor<3x5xf32> -> tensor<3x5xf32>",
     [x, g], lambda a, g: a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-6) * g)
case("reduce_mean_keep", "(%a: tensor<3x5xf32>) -> tensor<3x1xf32>",
     "%0 = loom.reduce mean %a axes = [1] keep_dims : tensor<3x5xf32> -> tensor<3x1xf32>",
     [x], lambda a: a.mean(1, keepdims=True))
case("reduce_max_all", "(%a: tensor<3x5xf32>) -> tensor<f32>",
     "%0 = loom.reduce max %a axes = [0, 1] : tensor<3x5xf32> -> tensor<f32>",
     [x], lambda a: np.array(a.max(), dtype=f32))
case("gelu_tanh", "(%a: tensor<3x5xf32>) -> tensor<3x5xf32>",
     "%0 = loom.gelu %a approximate = tanh : tensor<3x5xf32>", [x],
     lambda a: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3))))
case("gelu_silu_chain", "(%a: tensor<3x5xf32>) -> tensor<3x5xf32>",
     "%1 = loom.gelu %a : tensor<3x5xf32>\n  %0 = loom.silu %1 : tensor<3x5xf32>",
     [x], lambda a: (lambda h: h / (1 + np.exp(-h)))(0.5 * a * (1 + verf(a / np.sqrt(2)))))
case("compare_select", "(%a: tensor<3x5xf32>, %b: tensor<5xf32>) -> tensor<3x5xf32>",
     "%c = loom.compare lt, %a, %b : tensor<3x5xf32>, tensor<5xf32> -> tensor<3x5xi1>\n"
     "  %0 = loom.select %c, %a, %b : tensor<3x5xi1>, tensor<3x5xf32>, tensor<5xf32> -> tensor<3x5xf32>",
     [x, g], lambda a, b: np.where(a < b, a, np.broadcast_to(b, a.shape)))
case("transpose_concat_slice",
     "(%a: tensor<3x5xf32>, %b: tensor<5x2xf32>) -> tensor<5x2xf32>",
     "%t = loom.transpose %a permutation = [1, 0] : tensor<3x5xf32> -> tensor<5x3xf32>\n"
     "  %c = loom.concat %t, %b axis = 1 : tensor<5x3xf32>, tensor<5x2xf32> -> tensor<5x5xf32>\n"
     "  %0 = loom.slice %c starts = [0, 1] limits = [5, 5] steps = [1, 2] : tensor<5x5xf32> -> tensor<5x2xf32>",
     [x, r(5, 2)], lambda a, b: np.concatenate([a.T, b], 1)[:, 1:5:2])
table = r(10, 4)
ids = np.array([[3, 0, 9, -1]], dtype=np.int64)
case("embedding", "(%t: tensor<10x4xf32>, %i: tensor<1x?xi64>) -> tensor<1x?x4xf32>",
     "%0 = loom.embedding %t, %i : tensor<10x4xf32>, tensor<1x?xi64> -> tensor<1x?x4xf32>",
     [table, ids], lambda t, i: t[i])
case("gather_axis1", "(%t: tensor<10x4xf32>, %i: tensor<2xi64>) -> tensor<10x2xf32>",
     "%0 = loom.gather %t, %i axis = 1 : tensor<10x4xf32>, tensor<2xi64> -> tensor<10x2xf32>",
     [table, np.array([3, 1], dtype=np.int64)], lambda t, i: t[:, i])
case("reshape_dynamic", "(%a: tensor<?x6xf32>) -> tensor<?x2x3xf32>",
     "%0 = loom.reshape %a : tensor<?x6xf32> -> tensor<?x2x3xf32>",
     [r(4, 6)], lambda a: a.reshape(-1, 2, 3))
case("cast_roundtrip", "(%a: tensor<3x5xf32>) -> tensor<3x5xf32>",
     "%h = loom.cast %a : tensor<3x5xf32> -> tensor<3x5xf16>\n"
     "  %0 = loom.cast %h : tensor<3x5xf16> -> tensor<3x5xf32>",
     [x], lambda a: a.astype(np.float16).astype(f32))
case("batched_matmul_broadcast",
     "(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32>",
     "%0 = loom.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>",
     [r(2, 3, 4), r(4, 5)], lambda a, b: a @ b, 1e-4)
# Large enough to be called through the runtime's GEMM (OpenBLAS).
case("gemm_batched_lhs_transpose_b",
     "(%a: tensor<2x?x64xf32>, %b: tensor<48x64xf32>) -> tensor<2x?x48xf32>",
     "%0 = loom.matmul %a, %b transpose_b : tensor<2x?x64xf32>, tensor<48x64xf32> -> tensor<2x?x48xf32>",
     [r(2, 33, 64), r(48, 64)], lambda a, b: a @ b.T, 1e-4)
case("gemm_transpose_a",
     "(%a: tensor<64x40xf32>, %b: tensor<64x48xf32>) -> tensor<40x48xf32>",
     "%0 = loom.matmul %a, %b transpose_a : tensor<64x40xf32>, tensor<64x48xf32> -> tensor<40x48xf32>",
     [r(64, 40), r(64, 48)], lambda a, b: a.T @ b, 1e-4)
case("gemm_two_dynamic_dims",
     "(%a: tensor<?x?x64xf32>, %b: tensor<64x96xf32>) -> tensor<?x?x96xf32>",
     "%0 = loom.matmul %a, %b : tensor<?x?x64xf32>, tensor<64x96xf32> -> tensor<?x?x96xf32>",
     [r(3, 11, 64), r(64, 96)], lambda a, b: a @ b, 1e-4)
case("reshape_merge_dynamic",
     "(%a: tensor<8x?x64xf32>) -> tensor<8x?x16xf32>",
     "%0 = loom.reshape %a : tensor<8x?x64xf32> -> tensor<8x?x16xf32>",
     [r(8, 3, 64)], lambda a: a.reshape(8, -1, 16))
# Two run-time dims on each side: the types alone do not say which input dim
# each result `?` is (refused without sizes, lit loom-convert-loom-to-linalg-
# runtime-sizes.mlir @infer), so the batch and sequence come as `sizes`.
case("reshape_split_heads",
     "(%a: tensor<?x?x576xf32>) -> tensor<?x?x9x64xf32>",
     "%c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
     "  %b = tensor.dim %a, %c0 : tensor<?x?x576xf32>\n"
     "  %s = tensor.dim %a, %c1 : tensor<?x?x576xf32>\n"
     "  %0 = loom.reshape %a sizes(%b, %s) : tensor<?x?x576xf32> -> tensor<?x?x9x64xf32>",
     [r(2, 3, 576)], lambda a: a.reshape(2, 3, 9, 64))
case("reshape_rank0",
     "(%a: tensor<1x1xf32>) -> tensor<f32>",
     "%0 = loom.reshape %a : tensor<1x1xf32> -> tensor<f32>",
     [r(1, 1)], lambda a: a.reshape(()))
pos = np.arange(6, dtype=np.int64)
case("rotary_table", "(%p: tensor<?xi64>) -> tensor<?x4xf32>",
     "%c, %0 = loom.rotary_table %p theta = 1.0e4 dim = 8 : tensor<?xi64> -> tensor<?x4xf32>",
     [pos], lambda p: rotary_table_ref(p, 1e4, 8)[1], 1e-5)
for style in ["half", "interleaved"]:
    xq = r(1, 2, 6, 8)
    cos, sin = rotary_table_ref(pos, 1e4, 6)  # R = 3 < D/2: partial rotary
    case(f"rotary_{style}",
         "(%x: tensor<1x2x?x8xf32>, %c: tensor<?x3xf32>, %s: tensor<?x3xf32>) -> tensor<1x2x?x8xf32>",
         f"%0 = loom.rotary %x, %c, %s style = {style} : tensor<1x2x?x8xf32>, tensor<?x3xf32> -> tensor<1x2x?x8xf32>",
         [xq, cos, sin], lambda x, c, s, style=style: rotary_ref(x, c, s, style))
q, k, v = r(2, 6, 5, 4), r(2, 3, 5, 4), r(2, 3, 5, 4)
case("attention_gqa_causal",
     "(%q: tensor<2x6x?x4xf32>, %k: tensor<2x3x?x4xf32>, %v: tensor<2x3x?x4xf32>) -> tensor<2x6x?x4xf32>",
     "%0 = loom.attention %q, %k, %v causal : tensor<2x6x?x4xf32>, tensor<2x3x?x4xf32>, tensor<2x3x?x4xf32> -> tensor<2x6x?x4xf32>",
     [q, k, v], lambda q, k, v: attention_ref(q, k, v, causal=True)[0], 1e-5)
mask = rng.standard_normal((1, 1, 5, 5)) > -0.5
mask[..., 0] = True
case("attention_bool_mask_scale",
     "(%q: tensor<2x6x5x4xf32>, %k: tensor<2x3x5x4xf32>, %v: tensor<2x3x5x4xf32>, %m: tensor<1x1x5x5xi1>) -> tensor<2x6x5x4xf32>",
     "%0 = loom.attention %q, %k, %v mask(%m : tensor<1x1x5x5xi1>) scale = 0.3 : tensor<2x6x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32> -> tensor<2x6x5x4xf32>",
     [q, k, v, mask], lambda q, k, v, m: attention_ref(q, k, v, mask=m, scale=0.3)[0], 1e-5)
pk, pv = r(2, 3, 7, 4), r(2, 3, 7, 4)
case("attention_kv_cache",
     "(%q: tensor<2x6x5x4xf32>, %k: tensor<2x3x5x4xf32>, %v: tensor<2x3x5x4xf32>, %pk: tensor<2x3x?x4xf32>, %pv: tensor<2x3x?x4xf32>) -> tensor<2x6x5x4xf32>",
     "%0, %pk2, %pv2 = loom.attention %q, %k, %v past(%pk, %pv : tensor<2x3x?x4xf32>, tensor<2x3x?x4xf32>) causal : tensor<2x6x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32> -> tensor<2x6x5x4xf32>, tensor<2x3x?x4xf32>, tensor<2x3x?x4xf32>",
     [q, k, v, pk, pv],
     lambda q, k, v, pk, pv: attention_ref(q, k, v, causal=True, past=(pk, pv))[0], 1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_op(tools, tmp_path, name):
    sig, body, ins, ref, tol = CASES[name]
    prog = f"func.func @main{sig} {{\n  {body}\n  return %0 : {sig.split('-> ')[-1]}\n}}\n"
    (tmp_path / "p.mlir").write_text(prog)
    run([tools["loomc"], str(tmp_path / "p.mlir"), "-o", str(tmp_path / "b")])
    args = []
    for i, a in enumerate(ins):
        np.save(tmp_path / f"in{i}.npy", a)
        args += ["--input", f"input{i}={tmp_path}/in{i}.npy"]
    (tmp_path / "res").mkdir()
    run([tools["loom-run"], str(tmp_path / "b"), *args, "--output",
         str(tmp_path / "res")])
    out = np.load(tmp_path / "res" / "output0.npy")
    expected = np.asarray(ref(*ins), dtype=f32)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)
