#!/usr/bin/env python3
"""Compile time of the real SmolLM2-135M-Instruct (Q4_1 GGUF, prefill +
decode entry points) through loomc, and of the same model cut to fewer
layers (a GGUF holding the first N blocks, written here with the `gguf`
package), with and without loom-outline-repeated-layers (issue 14: one
copy of the code per distinct layer). Not part of CI.

    .venv/bin/python bench/compile/run.py [--layers 30,2] [--mesh tp=3]
                                          [--no-outline] [--runs 1]
    .venv/bin/python bench/compile/run.py --synthetic 8b
    .venv/bin/python bench/compile/run.py --synthetic 70b --mesh tp=8

`--synthetic 8b|70b` compiles a Llama-3-8B- or Llama-3-70B-shaped GGUF
(random Q4_0 weights, written once into ~/.cache/loom/synthetic by
bench/compile/synthetic_gguf.py) instead of SmolLM2; `--layers` then
cuts that shape to N layers (default: all).

Prints one line per compile: layers, mesh, outlining, wall, user and sys
seconds (of loomc and its linker, from os.wait4; user time is the figure
to compare on a shared host), loomc's peak resident memory (GNU time's
%M), the 1-minute load average
when it finished, the bundle's library size, and the ratio of each time
to the fewest-layers one.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "python" / "formats"))


def truncate_gguf(src: Path, dst: Path, layers: int):
    """A copy of `src` with blocks [0, layers) only (block_count set to
    `layers`), tensors stored as they are (Q4_1 stays Q4_1)."""
    import gguf
    r = gguf.GGUFReader(str(src))
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(dst), arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        val = f.contents()
        if name == f"{arch}.block_count":
            val = layers
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, val, vtype, sub)
    for t in r.tensors:
        if t.name.startswith("blk.") and int(t.name.split(".")[1]) >= layers:
            continue
        # The data as stored (rows of blocks for quantized types) and its
        # type: the writer derives the ggml shape from them.
        w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def compile_once(loomc: Path, model: Path, out: Path, flags):
    """Wall, user and sys seconds, peak RSS bytes and library size of one
    compile. The peak comes from GNU time when it is there: the rusage of
    a child forked from this Python process starts at the parent's own
    resident size, which holds the tokenizer after a synthetic GGUF was
    written."""
    shutil.rmtree(out, ignore_errors=True)
    gnu_time = Path("/usr/bin/time")
    peak_file = out.with_suffix(".peak")
    cmd = [str(loomc), str(model), "-o", str(out), *flags]
    if gnu_time.exists():
        cmd = [str(gnu_time), "-f", "%M", "-o", str(peak_file), *cmd]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"loomc failed ({status}): {err}")
    peak = ru.ru_maxrss * 1024
    if gnu_time.exists():
        peak = int(peak_file.read_text().split()[-1]) * 1024
    lib = next(out.glob("*.so"))
    return wall, ru.ru_utime, ru.ru_stime, peak, lib.stat().st_size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default="30,2",
                    help="comma-separated layer counts (30 = the whole model)")
    ap.add_argument("--mesh", default="", help="loomc --mesh, e.g. tp=3")
    ap.add_argument("--no-outline", action="store_true",
                    help="loomc --no-outline-layers (the unrolled program)")
    ap.add_argument("--synthetic", choices=["8b", "70b"],
                    help="a Llama-3-8B/70B-shaped synthetic GGUF instead of "
                         "SmolLM2 (bench/compile/synthetic_gguf.py)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR",
                                                       ROOT / "build"))
    args = ap.parse_args()
    loomc = Path(args.build) / "bin" / "loomc"
    tmp = Path(tempfile.mkdtemp(prefix="loom-compile-"))
    flags = (["--mesh", args.mesh] if args.mesh else []) + \
        (["--no-outline-layers"] if args.no_outline else [])
    if args.synthetic:
        from synthetic_gguf import SHAPES, synthetic_gguf
        full_layers = SHAPES[args.synthetic].layers
        layer_list = args.layers if "--layers" in sys.argv else \
            str(full_layers)

        def model_for(n):
            return synthetic_gguf(args.synthetic, n,
                                  log=lambda m: print(m, file=sys.stderr))
    else:
        from fetch_models import fetch_smollm2
        full = Path(fetch_smollm2())
        full_layers, layer_list = 30, args.layers

        def model_for(n):
            if n == full_layers:
                return full
            model = tmp / f"smollm2-{n}.gguf"
            truncate_gguf(full, model, n)
            return model
    rows = []
    for n in [int(x) for x in layer_list.split(",")]:
        model = model_for(n)
        for _ in range(args.runs):
            wall, user, sys_, rss, size = compile_once(loomc, model,
                                                       tmp / "out", flags)
            rows.append((n, wall, user, sys_, size))
            load = os.getloadavg()[0]
            print(f"{args.synthetic or 'smollm2'} layers={n:3d} "
                  f"mesh={args.mesh or '1 rank'} "
                  f"outline={'off' if args.no_outline else 'on'} "
                  f"wall={wall:7.1f}s user={user:7.1f}s sys={sys_:5.1f}s "
                  f"peak={rss / 2**30:5.2f} GiB load={load:4.1f} "
                  f"lib={size / 1e6:6.2f} MB", flush=True)
    fewest = min(rows, key=lambda r: r[0])
    for n, wall, user, _, _ in rows:
        if n != fewest[0]:
            print(f"{n} layers / {fewest[0]} layers: wall {wall / fewest[1]:.2f}x,"
                  f" user {user / fewest[2]:.2f}x")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
