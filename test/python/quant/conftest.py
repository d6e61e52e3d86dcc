"""Fixtures of the quantization tests: a reference decoder of Loom's
block formats in numpy (qref.py), and helpers that compile small modules
and run them through the package (test/python/loom_paths.py: loom.compile
and Bundle.run, loomc / loom-run where the package is not built). loomc
itself stays for what only its command line shows: a phase's IR written
with its sidecar files (--compile-to=quantize -o FILE), the exit code and
stderr of a refused compile, `-o dir/`."""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from loom_paths import compile_bundle, run_bundle, tool as _tool  # noqa: E402


class Loom:
    def __init__(self, tmp: Path):
        self.loomc = _tool("loomc")
        self.tmp = tmp
        self.count = 0

    def fresh(self, stem: str) -> Path:
        self.count += 1
        return self.tmp / f"{stem}{self.count}"

    def loomc_run(self, *args, ok=True):
        """loomc ARGS: ok, or refused with exit code 1 and no crash."""
        r = subprocess.run([str(self.loomc), *map(str, args)],
                           capture_output=True, text=True)
        if ok:
            assert r.returncode == 0, r.stderr
        else:
            assert r.returncode == 1, (r.returncode, r.stderr)
            assert "Stack dump" not in r.stderr, r.stderr
            assert "Assertion" not in r.stderr, r.stderr
        return r

    def compile(self, src: Path, out: Path | None = None,
                **options) -> Path:
        """Compiles `src` into a fresh bundle (or `out`): loom.compile with
        loomc's flags as snake_case options (quant="int4:32",
        quant_act="int8", cpu="x86-64-v3", portable=True, ...)."""
        return compile_bundle(src, out or self.fresh("bundle"), **options)

    def run(self, bundle: Path, inputs: dict, entry: str | None = None):
        """Runs an entry with inputs in manifest order; rank 0's outputs."""
        return run_bundle(bundle, inputs, entry, positional=True)


@pytest.fixture
def loom(tmp_path) -> Loom:
    return Loom(tmp_path)
