#!/usr/bin/env python3
"""CPU int4 GEMV (decode, batch 1): Loom's generated kernel against
llama.cpp's Q4_0 (the ggml CPU backend) on the same machine and threads,
and against the memory bandwidth of a STREAM-like copy.

    .venv/bin/python bench/qgemv/run.py [--threads 1,2] [--iterations 50]

Shapes: [N, K] = 4096x4096 and 11008x4096 (Llama-7B attention and MLP up
projections). Each side multiplies L distinct weights (more bytes than the
32 MB last-level cache, so every product streams its weight from memory)
by one activation vector, with f32 activations (the accurate default),
with `loomc --quant-act int8` (activations quantized per block, integer
dot products, as llama.cpp does) and with `--quant-act int8x3` (three int8
levels per block: integer dot products at about f32's accuracy); the time per product is the best iteration
divided by L (best of --iterations on both sides: the host is shared and
contention only adds time). Loom runs the same Q4_0 bytes (the block layout of Loom's
int4:32) through `loomc` + `loom-run`; with T threads the weight rows are
split over T ranks (each rank's slice is a contiguous range of whole rows,
as tensor parallelism would place them).

llama.cpp: ggml is built beside the project, never inside it: from
$LOOM_GGML_SRC (default /work/ext/ggml, a checkout of github.com/ggml-org/
ggml) into $LOOM_GGML_BUILD (default /work/ext/ggml-build). Without the
source the llama.cpp column is skipped with a message.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parents[1]
HERE = Path(__file__).resolve().parent
SHAPES = [(4096, 4096), (11008, 4096)]  # (N, K)
LLC_BYTES = 32 << 20


def sh(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       **kw)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{r.stdout}{r.stderr}")
    return r.stdout


def build_ggml():
    src = Path(os.environ.get("LOOM_GGML_SRC", "/work/ext/ggml"))
    build = Path(os.environ.get("LOOM_GGML_BUILD", "/work/ext/ggml-build"))
    if not (src / "CMakeLists.txt").exists():
        print(f"llama.cpp/ggml: no source at {src} (set LOOM_GGML_SRC to a "
              "checkout of github.com/ggml-org/ggml); skipping the llama.cpp "
              "column")
        return None
    if not (build / "build.ninja").exists():
        sh(["cmake", "-S", src, "-B", build, "-G", "Ninja",
            "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON",
            "-DBUILD_SHARED_LIBS=ON", "-DGGML_BUILD_TESTS=OFF",
            "-DGGML_BUILD_EXAMPLES=OFF"])
    sh(["ninja", "-C", build, "-j2", "ggml", "ggml-cpu", "ggml-base"])
    exe = build / "loom-ggml-gemv"
    libdirs = sorted({str(p.parent) for p in build.rglob("libggml*.so")})
    sh(["cc", "-O2", HERE / "ggml_gemv.c", "-o", exe, "-I", src / "include",
        *[f"-L{d}" for d in libdirs], *[f"-Wl,-rpath,{d}" for d in libdirs],
        "-lggml", "-lggml-base", "-lggml-cpu"])
    return exe


def stream(tmp, threads):
    exe = tmp / "stream"
    if not exe.exists():
        sh(["cc", "-O3", "-march=native", HERE / "stream.c", "-o", exe,
            "-lpthread"])
    out = sh([exe, threads, 256, 20])
    return float(re.search(r"([\d.]+) GB/s", out).group(1))


def q4_0_rows(n, k, seed=0):
    """Q4_0 blocks of a random [n, k] matrix (gguf's quantizer)."""
    import gguf
    w = np.random.default_rng(seed).uniform(-1, 1, (n, k)).astype(np.float32)
    b = gguf.quants.quantize(w, gguf.GGMLQuantizationType.Q4_0)
    return np.ascontiguousarray(b).reshape(n, -1)


def loom_gemv(tmp, build, n, k, layers, threads, iters, act, flags=()):
    rows = q4_0_rows(n, k)
    row_bytes = rows.shape[1]
    wfile = tmp / f"w_{n}x{k}.bin"
    if not wfile.exists():
        with open(wfile, "wb") as f:
            for _ in range(layers):
                f.write(rows.tobytes())
    local = n // threads
    qt = f"!loom.qtensor<{local}x{k}, #loom.quant<q4_0>>"
    # With T ranks each rank runs the program on its own rows: every value
    # is annotated replicated (the planner keeps annotations), and the
    # manifest's weight slices are moved to each rank's rows below.
    mesh = f"  loom.mesh @mesh = <tp = {threads}>\n" if threads > 1 else ""
    rep = (" {loom.sharding = #loom.sharding<@mesh, [{}, {}]>}"
           if threads > 1 else "")
    body = [f'    %w{i} = loom.weight "w{i}" from <"{wfile}", offset = '
            f'{i * n * row_bytes}>{rep} : {qt}\n'
            f"    %y{i} = loom.qmatmul %x, %w{i}{rep} : tensor<1x{k}xf32>, "
            f"{qt} -> tensor<1x{local}xf32>\n" for i in range(layers)]
    types = ", ".join([f"tensor<1x{local}xf32>{rep}"] * layers)
    src = tmp / f"gemv_{n}_{threads}.mlir"
    src.write_text("module {\n" + mesh +
                   f"  func.func @main(%x: tensor<1x{k}xf32>{rep}) -> "
                   f"({types}) {{\n"
                   + "".join(body) + "    return "
                   + ", ".join(f"%y{i}" for i in range(layers))
                   + " : " + ", ".join([f"tensor<1x{local}xf32>"] * layers)
                   + "\n  }\n}\n")
    bundle = tmp / f"b_{n}_{threads}_{act}"
    sh([build / "bin" / "loomc", src, "-o", bundle, "--quant-act",
        {"i8": "int8", "i8x3": "int8x3"}.get(act, "f32"), *flags])
    # Rank r holds rows [r * local, (r + 1) * local) of every weight.
    man = json.loads((bundle / "manifest.json").read_text())
    for r, rank in enumerate(man["ranks"]):
        for sl in rank["weights"]["main"]:
            sl["offset"] += r * local * row_bytes
    (bundle / "manifest.json").write_text(json.dumps(man, indent=1))
    return bundle, rows, local


def loom_run(tmp, build, bundle, rows, local, k, layers, iters, act,
             check=True):
    x = np.random.default_rng(1).standard_normal((1, k)).astype(np.float32)
    np.save(tmp / "x.npy", x)
    out = sh([build / "bin" / "loom-run", bundle, "--input",
              tmp / "x.npy", "--bench", "--iterations", iters,
              "--output", tmp / "res"],
             env={**os.environ, "LOOM_BLAS_THREADS": "1"})
    # Best iteration: the host is shared, contention only adds time.
    med = float(re.search(r"run: min\s+([\d.]+)", out).group(1))
    if check:
        import gguf
        wd = gguf.quants.dequantize(rows[:local],
                                    gguf.GGMLQuantizationType.Q4_0)
        ref = x.astype(np.float64) @ wd.astype(np.float64).T
        y = np.load(tmp / "res" / "output0.npy")
        err = np.abs(y - ref).max() / np.abs(ref).max()
        limit = 2e-2 if act == "i8" else 1e-5
        assert err < limit, f"Loom GEMV result is wrong: rel error {err}"
    return med / layers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR",
                                                       ROOT / "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-ggml", action="store_true")
    ap.add_argument("--loomc-flag", action="append", default=[],
                    help="extra loomc flag for Loom's programs (repeatable), "
                         "e.g. --loomc-flag=--quant-interleave=0")
    args = ap.parse_args()
    build = Path(args.build)
    tmp = Path(tempfile.mkdtemp(prefix="loom-qgemv-"))
    ggml = None if args.no_ggml else build_ggml()
    rows = []
    for t in [int(s) for s in args.threads.split(",")]:
        bw = max(stream(tmp, t) for _ in range(args.rounds))
        for n, k in SHAPES:
            wbytes = n * k // 32 * 18
            layers = max(2, -(-2 * LLC_BYTES // wbytes))
            nbytes = n * k // 32 * 18
            b32 = loom_gemv(tmp, build, n, k, layers, t, args.iterations,
                            "f32", args.loomc_flag)
            b8 = loom_gemv(tmp, build, n, k, layers, t, args.iterations,
                           "i8", args.loomc_flag)
            b83 = loom_gemv(tmp, build, n, k, layers, t, args.iterations,
                            "i8x3", args.loomc_flag)
            # Rounds alternate Loom and ggml; each side keeps its best.
            ms = ms8 = ms83 = float("inf")
            g = {}
            for rnd in range(args.rounds):
                ms = min(ms, loom_run(tmp, build, *b32, k, layers,
                                      args.iterations, "f32", rnd == 0))
                ms8 = min(ms8, loom_run(tmp, build, *b8, k, layers,
                                        args.iterations, "i8", rnd == 0))
                ms83 = min(ms83, loom_run(tmp, build, *b83, k, layers,
                                          args.iterations, "i8x3", rnd == 0))
                for rp in (0, 1) if ggml else ():
                    out = subprocess.run(
                        [str(ggml), str(k), str(n), str(layers), str(t),
                         str(args.iterations), str(rp)],
                        capture_output=True, text=True)
                    m = re.search(r"buffer=(\S+): [\d.]+ ms per product "
                                  r"\(min ([\d.]+)\)", out.stdout)
                    if m:
                        g[m.group(1)] = min(g.get(m.group(1), float("inf")),
                                            float(m.group(2)))
            gbest = min(g.values()) if g else None
            best = min(ms, ms8)
            loom_bw = nbytes / best / 1e6
            rows.append((t, n, k, ms, ms8, ms83, loom_bw, bw, g, gbest))
            print(f"threads {t}  [{n}x{k}] q4_0 {nbytes / 1e6:.1f} MB x "
                  f"{layers}: Loom f32 act {ms:.3f} ms, int8 act {ms8:.3f} ms, "
                  f"int8x3 act {ms83:.3f} ms "
                  f"({loom_bw:.1f} GB/s, {loom_bw / bw:.0%} of copy "
                  f"{bw:.1f} GB/s)"
                  + (f"; ggml {', '.join(f'{b} {v:.3f} ms' for b, v in g.items())}"
                     f"; ggml best / Loom best = {gbest / best:.2f}x"
                     if g else ""), flush=True)
    print("\n| threads | N x K | Loom f32-act ms | Loom int8-act ms | "
          "Loom int8x3-act ms | Loom GB/s | copy GB/s | Loom / copy | "
          "ggml ms (plain / repacked) | ggml best / Loom best |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t, n, k, ms, ms8, ms83, lbw, bw, g, gbest in rows:
        gs = " / ".join(f"{v:.3f}" for v in g.values()) if g else "skipped"
        sp = f"**{gbest / min(ms, ms8):.2f}x**" if gbest else "-"
        print(f"| {t} | {n}x{k} | {ms:.3f} | {ms8:.3f} | {ms83:.3f} | "
              f"{lbw:.1f} | {bw:.1f} | {lbw / bw:.0%} | {gs} | {sp} |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
