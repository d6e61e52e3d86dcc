"""Fixtures of the partitioner tests: tool paths from LOOM_BUILD_DIR."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def build_dir() -> Path:
    return Path(os.environ.get("LOOM_BUILD_DIR",
                               Path(__file__).resolve().parents[3] / "build"))


@pytest.fixture(scope="session")
def tools():
    bdir = build_dir() / "bin"
    loomc, loom_run = bdir / "loomc", bdir / "loom-run"
    if not loomc.exists() or not loom_run.exists():
        pytest.skip(f"loomc/loom-run not built in {bdir}")
    # loom-run built without the runtime is a stub that cannot run bundles.
    out = subprocess.run([str(loom_run), "--help"], capture_output=True,
                         text=True).stdout
    if "--all-ranks" not in out:
        pytest.skip("loom-run was built without the runtime")
    return {"loomc": str(loomc), "loom-run": str(loom_run),
            "mpirun": shutil.which("mpirun")}
