"""Fixtures of the Python package's tests (python/loom, docs/PYTHON.md):
the package as the build assembled it (<build>/python), the CLI tools the
results are compared with, and small models."""

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
from loom_paths import build_dir, tool  # noqa: E402

sys.path.insert(0, str(build_dir() / "python"))
try:
    import loom  # noqa: E402,F401
except ImportError:  # not built (-DLOOM_BUILD_PYTHON=OFF, no nanobind):
    # nothing is collected (pytest exits 5, which CTest reports as skipped)
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def loomc() -> str:
    return str(tool("loomc"))


@pytest.fixture(scope="session")
def loom_run() -> str:
    return str(tool("loom-run"))


@pytest.fixture(scope="session")
def mlp(tmp_path_factory) -> Path:
    """The MLP demo (examples/mlp): mlp-plain.mlir (16 rows, no mesh),
    x.npy and the numpy reference.npy."""
    d = tmp_path_factory.mktemp("mlp")
    subprocess.run([sys.executable, str(SRC / "examples/mlp/make_model.py"),
                    str(d), "--ranks", "2"], check=True, capture_output=True)
    return d


def run_cli(*cmd, ok=True, env=None) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       timeout=600, env=env)
    if ok:
        assert r.returncode == 0, r.stderr
    return r
