#!/usr/bin/env python3
"""A model of SmolLM2's quantized shapes and formats for scripts/gpu-check.sh:
M token ids -> embedding of a q8_0 table [4096, 576] -> q4_1 [1536, 576] ->
q4_1 [576, 1536] -> q8_0 [2048, 576], GGUF blocks with random codes and
scales, written as <out>/qmm-m<M>.mlir with its weight files, the input
ids-m<M>.npy and the float64 reference reference-m<M>.npy (numpy's
dequantization, independent of Loom's kernels).

With --tied, instead: SmolLM2's tied LM head, M token ids -> embedding of a
q8_0 table [4096, 576] -> a q8_0 qmatmul whose weight is that same table
(logits [M, 4096]), written as <out>/tied-m<M>.mlir (one weight file,
tied.bin), tied-ids-m<M>.npy and tied-reference-m<M>.npy.

usage: gpu-qmm-model.py <out folder> [--tied] [M ...]   (default M: 1 24)
"""
import os
import sys

import numpy as np

SHAPES = [("w_up", "q4_1", 1536, 576), ("w_down", "q4_1", 576, 1536),
          ("w_head", "q8_0", 2048, 576)]


def blocks(fmt, n, k, rng):
    """(GGUF bytes [n, k / 32 * block bytes], dequantized float64 [n, k])."""
    nb = k // 32
    d = (rng.uniform(0.5, 1.5, (n, nb)) / np.sqrt(k) / 8).astype(np.float16)
    if fmt == "q4_1":
        m = (-8 * d.astype(np.float32)).astype(np.float16)
        q = rng.integers(0, 16, (n, nb, 32), dtype=np.uint8)
        qs = q[:, :, :16] | (q[:, :, 16:] << 4)
        raw = np.concatenate([d[..., None].view(np.uint8).reshape(n, nb, 2),
                              m[..., None].view(np.uint8).reshape(n, nb, 2),
                              qs], axis=2)
        w = (d.astype(np.float64)[..., None] * q +
             m.astype(np.float64)[..., None])
    else:  # q8_0
        q = rng.integers(-127, 128, (n, nb, 32), dtype=np.int8)
        raw = np.concatenate([d[..., None].view(np.uint8).reshape(n, nb, 2),
                              q.view(np.uint8)], axis=2)
        w = d.astype(np.float64)[..., None] * q
    return raw.reshape(n, -1), w.reshape(n, k)


def tied(out, ms):
    """The embedding and the LM head reading one q8_0 table."""
    rng = np.random.default_rng(17)
    vocab, dim = 4096, 576
    raw, table = blocks("q8_0", vocab, dim, rng)
    raw.tofile(os.path.join(out, "tied.bin"))
    qt = "!loom.qtensor<%dx%d, #loom.quant<q8_0>>" % (vocab, dim)
    for m in ms:
        ids = rng.integers(0, vocab, m, dtype=np.int64)
        # The embedding's rows are f32 (exact: f16 scale times int8 code).
        x = table[ids].astype(np.float32).astype(np.float64)
        y = x @ table.T
        np.save(os.path.join(out, "tied-ids-m%d.npy" % m), ids)
        np.save(os.path.join(out, "tied-reference-m%d.npy" % m),
                y.astype(np.float32))
        lines = [
            "// gpu-qmm-model.py --tied: SmolLM2's tied q8_0 embedding and "
            "LM head, batch %d" % m,
            "func.func @tied(%%ids: tensor<%dxi64>) -> tensor<%dx%dxf32> {" %
            (m, m, vocab),
            '  %%emb = loom.weight "token_embd" from <"tied.bin", '
            "offset = 0> : %s" % qt,
            "  %%x = loom.embedding %%emb, %%ids : %s, tensor<%dxi64> -> "
            "tensor<%dx%dxf32>" % (qt, m, m, dim),
            "  %%y = loom.qmatmul %%x, %%emb : tensor<%dx%dxf32>, %s -> "
            "tensor<%dx%dxf32>" % (m, dim, qt, m, vocab),
            "  return %%y : tensor<%dx%dxf32>" % (m, vocab),
            "}",
        ]
        with open(os.path.join(out, "tied-m%d.mlir" % m), "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    out = sys.argv[1]
    args = sys.argv[2:]
    is_tied = "--tied" in args
    ms = [int(a) for a in args if a != "--tied"] or [1, 24]
    os.makedirs(out, exist_ok=True)
    if is_tied:
        tied(out, ms)
        return
    rng = np.random.default_rng(16)
    deq = {}
    for name, fmt, n, k in [("emb", "q8_0", 4096, 576)] + SHAPES:
        raw, deq[name] = blocks(fmt, n, k, rng)
        raw.tofile(os.path.join(out, name + ".bin"))
    for m in ms:
        ids = rng.integers(0, 4096, m, dtype=np.int64)
        y = deq["emb"][ids].astype(np.float32).astype(np.float64)
        for name, _, _, _ in SHAPES:
            y = y @ deq[name].T
        np.save(os.path.join(out, "ids-m%d.npy" % m), ids)
        np.save(os.path.join(out, "reference-m%d.npy" % m),
                y.astype(np.float32))
        lines = ["// gpu-qmm-model.py: SmolLM2's quantized matmul shapes, "
                 "batch %d" % m,
                 "func.func @qmm(%%ids: tensor<%dxi64>) -> "
                 "tensor<%dx2048xf32> {" % (m, m),
                 '  %emb = loom.weight "emb" from <"emb.bin", offset = 0> : '
                 "!loom.qtensor<4096x576, #loom.quant<q8_0>>",
                 "  %%x = loom.embedding %%emb, %%ids : !loom.qtensor<4096x576, "
                 "#loom.quant<q8_0>>, tensor<%dxi64> -> tensor<%dx576xf32>" %
                 (m, m)]
        v, kdim = "%x", 576
        for i, (name, fmt, n, k) in enumerate(SHAPES):
            qt = "!loom.qtensor<%dx%d, #loom.quant<%s>>" % (n, k, fmt)
            lines.append('  %%%s = loom.weight "%s" from <"%s.bin", '
                         'offset = 0> : %s' % (name, name, name, qt))
            lines.append("  %%h%d = loom.qmatmul %s, %%%s : tensor<%dx%dxf32>,"
                         " %s -> tensor<%dx%dxf32>" %
                         (i, v, name, m, kdim, qt, m, n))
            v, kdim = "%%h%d" % i, n
        lines.append("  return %s : tensor<%dx2048xf32>" % (v, m))
        lines.append("}")
        with open(os.path.join(out, "qmm-m%d.mlir" % m), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
