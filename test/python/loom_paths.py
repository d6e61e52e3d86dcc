"""Where the tests find Loom's tools: LOOM_BUILD_DIR, else <repo>/build.
Imported by the conftest of each test folder (a module of its own, so that
the folders' conftest.py files never import one another)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def build_dir() -> Path:
    return Path(os.environ.get("LOOM_BUILD_DIR",
                               Path(__file__).resolve().parents[2] / "build"))


def tool(name: str) -> Path:
    """A built tool, or skips the test."""
    t = build_dir() / "bin" / name
    if not t.exists():
        pytest.skip(f"{t} is not built (set LOOM_BUILD_DIR)")
    return t


def runtime_tools() -> dict:
    """loomc, loom-run (built with the runtime) and mpirun (or None)."""
    loomc, loom_run = tool("loomc"), tool("loom-run")
    # loom-run built without the runtime is a stub that cannot run bundles.
    out = subprocess.run([str(loom_run), "--help"], capture_output=True,
                         text=True).stdout
    if "--all-ranks" not in out:
        pytest.skip("loom-run was built without the runtime")
    return {"loomc": str(loomc), "loom-run": str(loom_run),
            "mpirun": shutil.which("mpirun")}


def package():
    """The `loom` Python package of the build (docs/PYTHON.md), or None when
    it is not built (-DLOOM_BUILD_PYTHON=OFF): callers fall back to the
    tools. Its Bundle.run equals loom-run bit for bit (test/python/package)."""
    import sys
    path = str(build_dir() / "python")
    if path not in sys.path:
        sys.path.insert(0, path)
    try:
        import loom
    except ImportError:
        return None
    return loom


def run_bundle(bundle, inputs: dict, entry: str | None = None,
               positional: bool = False) -> dict:
    """Runs one entry of a bundle once on its thread ranks and returns rank
    0's outputs by name: in process through the package when it is built,
    else with loom-run. `positional`: `inputs` are in the entry's order
    (their keys are not the entry's names)."""
    import numpy as np
    pkg = package()
    if pkg is not None:
        b = pkg.Bundle.load(bundle)
        if positional:
            names = [n for n, _, _ in b.inputs(entry or "")]
            inputs = dict(zip(names, inputs.values()))
        out = b.run(inputs, entry=entry or "", copy_inputs=True)
        # Own the memory (the bundle may be deleted by the caller's tmp dir).
        return {k: np.array(v) for k, v in out.items()}
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        cmd = [str(tool("loom-run")), str(bundle), "--output", str(d / "res")]
        if entry:
            cmd += ["--entry", entry]
        for name, value in inputs.items():
            np.save(d / f"{name}.npy", value)
            cmd += ["--input", str(d / f"{name}.npy") if positional
                    else f"{name}={d / (name + '.npy')}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return {f.stem: np.load(f) for f in (d / "res").glob("*.npy")}
