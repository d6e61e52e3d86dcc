#!/usr/bin/env python3
"""Compiles the MLP demo (examples/mlp) for 4 ranks (tp=4: the planner
splits it, the partitioner adds the collectives), runs it on 4 thread
ranks in this process and checks it against numpy.

    PYTHONPATH=build/python .venv/bin/python examples/python/mlp_tp4.py
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import loom

ROOT = Path(__file__).resolve().parents[2]


def main():
    with tempfile.TemporaryDirectory(prefix="loom-mlp-") as tmp:
        run(Path(tmp))


def run(work: Path):
    subprocess.run([sys.executable, str(ROOT / "examples/mlp/make_model.py"),
                    str(work)], check=True, capture_output=True)
    model = work / "mlp-plain.mlir"
    print(loom.plan(model, mesh="tp=4"))
    bundle = loom.compile(model, mesh="tp=4")
    print(bundle)
    y = bundle.run(x=np.load(work / "x.npy"))["y"]
    err = float(np.abs(y - np.load(work / "reference.npy")).max())
    print(f"y {y.shape}, max |y - numpy| = {err:.2e}")
    assert err < 1e-3


if __name__ == "__main__":
    main()
