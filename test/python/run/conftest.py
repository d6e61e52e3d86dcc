"""Fixtures of the loom-run end-to-end checks: hand-made bundles (C entry
points compiled with cc, manifests and weights written here) run by the
loom-run binary of $LOOM_BUILD_DIR (default: <source>/build), compared with
numpy references."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3]
KERNELS = Path(__file__).resolve().parent / "kernels"


def _build_dir() -> Path:
    env = os.environ.get("LOOM_BUILD_DIR")
    return Path(env) if env else SRC / "build"


@pytest.fixture(scope="session")
def loom_run(tmp_path_factory) -> Path:
    tool = _build_dir() / "bin" / "loom-run"
    if not tool.exists():
        pytest.skip(f"{tool} is not built (set LOOM_BUILD_DIR)")
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to build test entry points")
    # A build without the runtime (-DLOOM_BUILD_RUNTIME=OFF) only has a stub.
    d = tmp_path_factory.mktemp("probe")
    (d / "manifest.json").write_text("{}")
    out = subprocess.run([str(tool), str(d)], capture_output=True, text=True)
    if "built without the runtime" in out.stderr:
        pytest.skip(f"{tool} was built without the runtime")
    return tool


@pytest.fixture(scope="session")
def compile_kernel(tmp_path_factory):
    """compile_kernel("echo.c", RANK=2, ESIZE=4) -> path of the .so (cached)."""
    cache = {}
    d = tmp_path_factory.mktemp("kernels")

    def build(name, **defines):
        key = (name, tuple(sorted(defines.items())))
        if key not in cache:
            so = d / f"{Path(name).stem}_{len(cache)}.so"
            cmd = ["cc", "-shared", "-fPIC", "-O1", f"-I{SRC / 'include'}",
                   "-o", str(so), str(KERNELS / name)]
            cmd += [f"-D{k}={v}" for k, v in defines.items()]
            subprocess.run(cmd, check=True)
            cache[key] = so
        return cache[key]

    return build


@pytest.fixture
def run(loom_run):
    """run(bundle, *args) -> CompletedProcess; asserts exit status 0."""

    def go(bundle, *args, ok=True):
        out = subprocess.run([str(loom_run), str(bundle), *map(str, args)],
                             capture_output=True, text=True, timeout=120)
        if ok:
            assert out.returncode == 0, out.stderr
        return out

    return go
