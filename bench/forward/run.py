#!/usr/bin/env python3
"""Forward pass of a GPT-2-style stack on 1 rank: Loom (the Python package:
loom.compile + Bundle.run, loomc's and loom-run's code in process) against
ONNX Runtime on the same ONNX file, the same input and the same number of
threads, measured in the same run and the same way (each call timed in
Python, the two alternating call by call).

    .venv/bin/python bench/forward/run.py [--layers 4] [--d 256] [--seq 128]
        [--threads 1] [--iterations 20] [--no-settle]

Prints the load average, the median time of each and the ratio Loom / ORT
(target <= 1.0, issue 14; LOOM_GEMM=openblas: weight GEMMs through OpenBLAS
as before the packed kernels).

Before each timed call the process settles: it sleeps until its threads
have stopped using the CPU (ONNX Runtime's idle intra-op threads spin for
about 40 ms of CPU after every run; in the same process they took one of
the two cores from the Loom call that followed, and counted in its CPU
time). `--no-settle` times the calls back to back, as before 2026-12-01.
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
    ap.add_argument("--no-settle", action="store_true",
                    help="time the calls back to back (no wait for the "
                    "other library's idle threads to stop spinning)")
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

    # Loom, 1 rank, the same threads (threads per rank: the generated
    # loops and the GEMMs).
    os.environ.pop("LOOM_BLAS_THREADS", None)
    sys.path.insert(0, str(Path(args.build) / "python"))
    import loom
    bundle = loom.compile(onnx_path, out=tmp / "bundle",
                          threads=args.threads)
    (got,) = bundle.run({name: xn}).values()  # warm: weights, first buffers

    # Alternating, one call of each per iteration (which goes first
    # alternates too), so that a shared host's load hits both alike.
    # Wall time, and the process's CPU time (all threads: on a loaded host
    # it counts what the call computed, not the time it waited for a core;
    # idle pool threads spinning count too).
    ort_times, loom_times, ort_cpu, loom_cpu = [], [], [], []

    def settle():
        # Until a 10 ms sleep costs the process under 0.5 ms of CPU (at
        # most 2 s): no thread of either library is spinning any more.
        for _ in range(200):
            c = time.process_time()
            time.sleep(0.01)
            if time.process_time() - c < 0.0005:
                return

    def timed(call, wall, cpu):
        if not args.no_settle:
            settle()
        c, t = time.process_time(), time.perf_counter()
        call()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)

    def time_ort():
        timed(lambda: sess.run(None, {name: xn}), ort_times, ort_cpu)

    def time_loom():
        timed(lambda: bundle.run({name: xn}), loom_times, loom_cpu)

    for i in range(args.iterations):
        for f in ((time_ort, time_loom) if i % 2 == 0 else
                  (time_loom, time_ort)):
            f()
    ort_ms = 1e3 * float(np.median(ort_times))
    loom_ms = 1e3 * float(np.median(loom_times))
    err = np.abs(got - ref).max() / np.abs(ref).max()
    flops = args.layers * (2 * args.seq * args.d * 12 * args.d +
                           4 * args.seq * args.seq * args.d)
    print(f"model: {args.layers} GPT-2 blocks, d={args.d}, heads={args.heads},"
          f" seq={args.seq}, batch 1, {flops / 1e9:.2f} GFLOP; "
          f"threads={args.threads}")
    print(f"max relative error vs ORT: {err:.2e}")
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}; "
          f"{args.iterations} alternating iterations"
          f"{', back to back' if args.no_settle else ', settled'}")
    print(f"{'':12}{'median ms':>12}{'GFLOP/s':>10}{'min ms':>10}"
          f"{'CPU ms':>10}")
    for label, ms, wall, cpu in (("onnxruntime", ort_ms, ort_times, ort_cpu),
                                 ("loom", loom_ms, loom_times, loom_cpu)):
        print(f"{label:12}{ms:12.2f}{flops / ms / 1e6:10.1f}"
              f"{1e3 * min(wall):10.2f}{1e3 * float(np.median(cpu)):10.2f}")
    print(f"ratio loom/ort: {loom_ms / ort_ms:.2f} (target <= 1.0, issue 14); "
          f"min {min(loom_times) / min(ort_times):.2f}; "
          f"CPU {np.median(loom_cpu) / np.median(ort_cpu):.2f}")


if __name__ == "__main__":
    main()
