#!/usr/bin/env python3
"""Compile time of the real SmolLM2-135M-Instruct (Q4_1 GGUF, prefill +
decode entry points) through loomc, and of the same model cut to fewer
layers (a GGUF holding the first N blocks, written here with the `gguf`
package), with and without loom-outline-repeated-layers (issue 14: one
copy of the code per distinct layer). Not part of CI.

    .venv/bin/python bench/compile/run.py [--layers 30,2] [--mesh tp=3]
                                          [--no-outline] [--runs 1]

Prints one line per compile: layers, mesh, outlining, wall, user and sys
seconds (of loomc and its linker, from os.wait4; user time is the figure
to compare on a shared host), the bundle's library size, and the ratio of
each wall time to the fewest-layers one.
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
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    p = subprocess.Popen([str(loomc), str(model), "-o", str(out), *flags],
                         stderr=subprocess.PIPE, text=True)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read()
    if status != 0:
        sys.exit(f"loomc failed ({status}): {err}")
    lib = next(out.glob("*.so"))
    return wall, ru.ru_utime, ru.ru_stime, lib.stat().st_size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default="30,2",
                    help="comma-separated layer counts (30 = the whole model)")
    ap.add_argument("--mesh", default="", help="loomc --mesh, e.g. tp=3")
    ap.add_argument("--no-outline", action="store_true",
                    help="loomc --no-outline-layers (the unrolled program)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR",
                                                       ROOT / "build"))
    args = ap.parse_args()
    from fetch_models import fetch_smollm2
    full = Path(fetch_smollm2())
    loomc = Path(args.build) / "bin" / "loomc"
    tmp = Path(tempfile.mkdtemp(prefix="loom-compile-"))
    flags = (["--mesh", args.mesh] if args.mesh else []) + \
        (["--no-outline-layers"] if args.no_outline else [])
    rows = []
    for n in [int(x) for x in args.layers.split(",")]:
        model = full if n == 30 else tmp / f"smollm2-{n}.gguf"
        if n != 30:
            truncate_gguf(full, model, n)
        for _ in range(args.runs):
            wall, user, sys_, size = compile_once(loomc, model, tmp / "out",
                                                  flags)
            rows.append((n, wall, user, sys_, size))
            print(f"layers={n:3d} mesh={args.mesh or '1 rank'} "
                  f"outline={'off' if args.no_outline else 'on'} "
                  f"wall={wall:7.1f}s user={user:7.1f}s sys={sys_:5.1f}s "
                  f"lib={size / 1e6:6.2f} MB", flush=True)
    fewest = min(rows, key=lambda r: r[0])
    for n, wall, user, _, _ in rows:
        if n != fewest[0]:
            print(f"{n} layers / {fewest[0]} layers: wall {wall / fewest[1]:.2f}x,"
                  f" user {user / fewest[2]:.2f}x")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
