"""Shared helpers of the generation tests: loom-run's generation loop on a
bundle (threads or mpirun) and the numpy greedy reference of the tiny llama
models (llama_models.py)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llama"))
import llama_models as lm  # noqa: E402
from loom_paths import tool  # noqa: E402


def generate(bundle, *args, mpi=0, tmp):
    """The `sequences` of `loom-run bundle args --result`, on `mpi` processes
    under mpirun when mpi > 0 (skipped without mpirun)."""
    res = tmp / "r.json"
    cmd = [str(tool("loom-run")), str(bundle), *map(str, args), "--result",
           str(res)]
    if mpi:
        if not shutil.which("mpirun"):
            pytest.skip("mpirun not installed")
        cmd = [shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe",
               "-np", str(mpi), *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(res.read_text())["sequences"]


def first_ids(bundle, *args, mpi=0, tmp):
    """The token ids of the first sequence `generate` returns."""
    return generate(bundle, *args, mpi=mpi, tmp=tmp)[0]["ids"]


def reference_greedy(model, prompt, n, eog=()):
    """numpy's greedy continuation of `prompt` by `model` = (cfg, _, weights),
    n tokens or up to the first token in `eog`."""
    cfg, _, gw = model
    ids, out = list(prompt), []
    for _ in range(n):
        logits = lm.llama_forward_gguf(cfg, gw, np.array([ids]),
                                       np.arange(len(ids)), arch="llama")
        t = int(np.argmax(logits[0, -1]))
        if t in eog:
            break
        out.append(t)
        ids.append(t)
    return out
