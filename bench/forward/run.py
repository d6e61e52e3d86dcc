#!/usr/bin/env python3
"""Forward pass of a GPT-2-style stack on 1 rank: Loom (the Python package:
loom.compile + Bundle.run, loomc's and loom-run's code in process) against
ONNX Runtime on the same ONNX file, the same input and the same number of
threads, measured in the same run and the same way (each call timed in
Python).

    .venv/bin/python bench/forward/run.py [--layers 4] [--d 256] [--seq 128]
        [--threads 1] [--iterations 20]

Prints the median time of each and the ratio Loom / ORT (target <= 1.5).
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "python" / "onnx"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR",
                                                       ROOT / "build"))
    args = ap.parse_args()

    import torch
    import onnxruntime as ort
    from models import GPT2Block, export

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[GPT2Block(args.d, args.heads, args.seq)
                                  for _ in range(args.layers)]).eval()
    x = torch.randn(1, args.seq, args.d)
    tmp = Path(tempfile.mkdtemp(prefix="loom-bench-"))
    onnx_path = tmp / "gpt2.onnx"
    export(model, x, onnx_path)
    xn = x.numpy()
    np.save(tmp / "x.npy", xn)

    # ONNX Runtime, sequential, `threads` intra-op threads.
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(str(onnx_path), so,
                                providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    ref = sess.run(None, {name: xn})[0]
    times = []
    for _ in range(args.iterations):
        t = time.perf_counter()
        sess.run(None, {name: xn})
        times.append(time.perf_counter() - t)
    ort_ms = 1e3 * float(np.median(times))

    # Loom, 1 rank, the same threads (threads per rank: the generated
    # loops and OpenBLAS).
    os.environ.pop("LOOM_BLAS_THREADS", None)
    sys.path.insert(0, str(Path(args.build) / "python"))
    import loom
    bundle = loom.compile(onnx_path, out=tmp / "bundle",
                          threads=args.threads)
    (got,) = bundle.run({name: xn}).values()  # warm: weights, first buffers
    times = []
    for _ in range(args.iterations):
        t = time.perf_counter()
        bundle.run({name: xn})
        times.append(time.perf_counter() - t)
    loom_ms = 1e3 * float(np.median(times))
    err = np.abs(got - ref).max() / np.abs(ref).max()
    flops = args.layers * (2 * args.seq * args.d * 12 * args.d +
                           4 * args.seq * args.seq * args.d)
    print(f"model: {args.layers} GPT-2 blocks, d={args.d}, heads={args.heads},"
          f" seq={args.seq}, batch 1, {flops / 1e9:.2f} GFLOP; "
          f"threads={args.threads}")
    print(f"max relative error vs ORT: {err:.2e}")
    print(f"{'':12}{'median ms':>12}{'GFLOP/s':>10}")
    print(f"{'onnxruntime':12}{ort_ms:12.2f}{flops / ort_ms / 1e6:10.1f}")
    print(f"{'loom':12}{loom_ms:12.2f}{flops / loom_ms / 1e6:10.1f}")
    print(f"ratio loom/ort: {loom_ms / ort_ms:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
