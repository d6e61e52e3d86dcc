#!/usr/bin/env python3
"""Makes the demo model locally: a 2-layer GELU MLP (d=256, hidden 1024)
with random weights stored as raw little-endian f32 files, and the loom
program that runs it data-parallel on N ranks: each rank takes its own slice
of the batch and an all_gather along the batch dimension gives every rank
the whole result. Also writes the inputs and the numpy reference."""
import argparse
from pathlib import Path

import numpy as np
from math import erf

D, H = 256, 1024

PROGRAM = """\
// Data-parallel MLP: rank r holds rows of the batch; weights are shared
// (memory-mapped once per process by loom-run).
loom.mesh @mesh = <dp = {n}>
func.func @mlp(%x: tensor<?x{d}xf32> {{loom.name = "x"}}) -> (tensor<?x{d}xf32> {{loom.name = "y"}}) {{
  %w1 = loom.weight "fc1.weight" from <"fc1.bin", offset = 0> : tensor<{h}x{d}xf32>
  %b1 = loom.weight "fc1.bias" from <"fc1_bias.bin", offset = 0> : tensor<{h}xf32>
  %w2 = loom.weight "fc2.weight" from <"fc2.bin", offset = 0> : tensor<{d}x{h}xf32>
  %b2 = loom.weight "fc2.bias" from <"fc2_bias.bin", offset = 0> : tensor<{d}xf32>
  %0 = loom.matmul %x, %w1 transpose_b : tensor<?x{d}xf32>, tensor<{h}x{d}xf32> -> tensor<?x{h}xf32>
  %1 = loom.add %0, %b1 : tensor<?x{h}xf32>, tensor<{h}xf32> -> tensor<?x{h}xf32>
  %2 = loom.gelu %1 : tensor<?x{h}xf32>
  %3 = loom.matmul %2, %w2 transpose_b : tensor<?x{h}xf32>, tensor<{d}x{h}xf32> -> tensor<?x{d}xf32>
  %4 = loom.add %3, %b2 : tensor<?x{d}xf32>, tensor<{d}xf32> -> tensor<?x{d}xf32>
  %5 = loom.layer_norm %4 axis = -1 epsilon = 1.0e-5 : tensor<?x{d}xf32> -> tensor<?x{d}xf32>
  %6 = loom.all_gather %5 on @mesh axes = ["dp"] gather_dim = 0 : tensor<?x{d}xf32> -> tensor<?x{d}xf32>
  return %6 : tensor<?x{d}xf32>
}}
"""


# The same model written for one device, no mesh and no collectives: loomc
# --mesh tp=N plans and partitions it (docs/SHARDING.md).
PLAIN = """\
func.func @mlp(%x: tensor<{b}x{d}xf32> {{loom.name = "x"}}) -> (tensor<{b}x{d}xf32> {{loom.name = "y"}}) {{
  %w1 = loom.weight "fc1.weight" from <"fc1.bin", offset = 0> : tensor<{h}x{d}xf32>
  %b1 = loom.weight "fc1.bias" from <"fc1_bias.bin", offset = 0> : tensor<{h}xf32>
  %w2 = loom.weight "fc2.weight" from <"fc2.bin", offset = 0> : tensor<{d}x{h}xf32>
  %b2 = loom.weight "fc2.bias" from <"fc2_bias.bin", offset = 0> : tensor<{d}xf32>
  %0 = loom.matmul %x, %w1 transpose_b : tensor<{b}x{d}xf32>, tensor<{h}x{d}xf32> -> tensor<{b}x{h}xf32>
  %1 = loom.add %0, %b1 : tensor<{b}x{h}xf32>, tensor<{h}xf32> -> tensor<{b}x{h}xf32>
  %2 = loom.gelu %1 : tensor<{b}x{h}xf32>
  %3 = loom.matmul %2, %w2 transpose_b : tensor<{b}x{h}xf32>, tensor<{d}x{h}xf32> -> tensor<{b}x{d}xf32>
  %4 = loom.add %3, %b2 : tensor<{b}x{d}xf32>, tensor<{d}xf32> -> tensor<{b}x{d}xf32>
  %5 = loom.layer_norm %4 axis = -1 epsilon = 1.0e-5 : tensor<{b}x{d}xf32> -> tensor<{b}x{d}xf32>
  return %5 : tensor<{b}x{d}xf32>
}}
"""


def reference(x, w1, b1, w2, b2):
    h = x @ w1.T + b1
    h = 0.5 * h * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    y = h @ w2.T + b2
    mu = y.mean(-1, keepdims=True)
    var = ((y - mu) ** 2).mean(-1, keepdims=True)
    return (y - mu) / np.sqrt(var + 1e-5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--rows-per-rank", type=int, default=8)
    args = ap.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(42)
    w1 = (rng.standard_normal((H, D)) / np.sqrt(D)).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(H)).astype(np.float32)
    w2 = (rng.standard_normal((D, H)) / np.sqrt(H)).astype(np.float32)
    b2 = (0.1 * rng.standard_normal(D)).astype(np.float32)
    for name, a in [("fc1", w1), ("fc1_bias", b1), ("fc2", w2),
                    ("fc2_bias", b2)]:
        a.tofile(out / f"{name}.bin")
    (out / "mlp.mlir").write_text(PROGRAM.format(n=args.ranks, d=D, h=H))
    x = rng.standard_normal((args.ranks * args.rows_per_rank, D)).astype(
        np.float32)
    (out / "mlp-plain.mlir").write_text(PLAIN.format(b=x.shape[0], d=D, h=H))
    np.save(out / "x.npy", x)
    for r in range(args.ranks):
        rows = x[r * args.rows_per_rank:(r + 1) * args.rows_per_rank]
        np.save(out / f"x{r}.npy", rows)
    np.save(out / "reference.npy",
            reference(x.astype(np.float64), w1, b1, w2, b2).astype(np.float32))


if __name__ == "__main__":
    main()
