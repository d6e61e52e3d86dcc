"""Fixtures of the quantization tests: the tools, a reference decoder of
Loom's block formats in numpy, and helpers that write weight files and
small modules, compile them with loomc and run them with loom-run."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from loom_paths import run_bundle, tool as _tool  # noqa: E402


class Loom:
    def __init__(self, tmp: Path):
        self.loomc = _tool("loomc")
        self.loom_run = _tool("loom-run")
        self.tmp = tmp
        self.count = 0

    def fresh(self, stem: str) -> Path:
        self.count += 1
        return self.tmp / f"{stem}{self.count}"

    def loomc_run(self, *args, ok=True, env=None):
        e = dict(os.environ)
        if env:
            e.update(env)
        r = subprocess.run([str(self.loomc), *map(str, args)],
                           capture_output=True, text=True, env=e)
        if ok:
            assert r.returncode == 0, r.stderr
        else:
            assert r.returncode == 1, (r.returncode, r.stderr)
            assert "Stack dump" not in r.stderr, r.stderr
            assert "Assertion" not in r.stderr, r.stderr
        return r

    def compile(self, src: Path, *flags, env=None) -> Path:
        bundle = self.fresh("bundle")
        self.loomc_run(src, "-o", bundle, *flags, env=env)
        return bundle

    def run(self, bundle: Path, inputs: dict, entry: str | None = None):
        """Runs an entry with inputs in manifest order; rank 0's outputs."""
        return run_bundle(bundle, inputs, entry, positional=True)


@pytest.fixture
def loom(tmp_path) -> Loom:
    return Loom(tmp_path)
