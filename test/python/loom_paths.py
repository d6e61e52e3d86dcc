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


# The build and its tools, derived once here (tests import these rather
# than re-reading LOOM_BUILD_DIR). Paths only: `tool()` skips when one is
# not built, a module's `pytestmark` may test `LOOMC.exists()`.
BUILD = build_dir()
LOOMC = BUILD / "bin" / "loomc"
LOOM_RUN = BUILD / "bin" / "loom-run"
LOOM_OPT = BUILD / "bin" / "loom-opt"


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


def _loomc_flags(flags: dict) -> list:
    """loomc's command line for the package's snake_case options."""
    short = {"opt_level": "-O", "jobs": "-j"}  # loomc's short-only flags
    out = []
    for key, value in flags.items():
        if value is None:
            continue
        if key in short:
            out += [short[key], str(value)]
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            # False matters for the flags that default on
            # (quant_interleave=False: --quant-interleave=false).
            out += [flag if value else f"{flag}=false"]
        else:
            out += [f"{flag}={value}"]
    return out


def run_ok(cmd, timeout: int = 600) -> subprocess.CompletedProcess:
    """Runs a command (paths allowed) and fails the test with its command
    line, stdout and stderr unless it exits 0."""
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}"
    return r


def _loomc(args: list) -> subprocess.CompletedProcess:
    r = subprocess.run([str(tool("loomc")), *map(str, args)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"loomc {' '.join(map(str, args))} failed "
                             f"({r.returncode}):\n{r.stderr}")
    return r


def compile_bundle(model, out, **flags) -> Path:
    """Compiles `model` into the bundle directory `out` (loomc MODEL -o OUT
    --flag=value ...; flags in the package's snake_case): in process
    through the package when it is built, else with loomc. A failure is an
    AssertionError carrying the compiler's diagnostics."""
    pkg = package()
    if pkg is not None:
        try:
            pkg.compile(model, out=out, **flags)
        except pkg.CompileError as e:
            raise AssertionError(f"compile of {model} failed:\n{e}") from None
        return Path(out)
    _loomc([model, "-o", out, *_loomc_flags(flags)])
    return Path(out)


def plan_json(model, **flags) -> dict:
    """The plan of `model` (loomc --emit=plan), parsed: the package's
    loom.plan when it is built, else loomc."""
    import json
    pkg = package()
    if pkg is not None:
        try:
            return pkg.plan(model, **flags).data
        except pkg.CompileError as e:
            raise AssertionError(f"plan of {model} failed:\n{e}") from None
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        _loomc([model, "--emit=plan", "-o", Path(d) / "plan.json",
                *_loomc_flags(flags)])
        return json.loads((Path(d) / "plan.json").read_text())


def ir_text(model, phase: str, **flags) -> str:
    """The IR of `model` after `phase` (loomc --compile-to=PHASE): the
    package's loom.ir when it is built, else loomc."""
    pkg = package()
    if pkg is not None:
        try:
            return pkg.ir(model, phase=phase, **flags)
        except pkg.CompileError as e:
            raise AssertionError(f"{phase} of {model} failed:\n{e}") from None
    return _loomc([model, f"--compile-to={phase}", "-o", "-",
                   *_loomc_flags(flags)]).stdout


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
