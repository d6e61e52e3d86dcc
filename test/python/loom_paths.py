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
