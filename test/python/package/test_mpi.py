"""Bundle.run under mpirun: `mpirun -np 2 python script.py`, each process
one rank (Bundle.load(..., backend="mpi") or "auto" under mpirun), the
process of rank 0 gets the outputs, equal bit for bit to the thread ranks
and to loom-run under mpirun; MPI stays up for a second run in the same
process; a job of the wrong size is a BundleError naming both sizes."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import loom
from conftest import run_cli

SCRIPT = """\
import sys
from pathlib import Path
import numpy as np
import loom
bundle, x, out, backend = sys.argv[1:5]
try:
    b = loom.Bundle.load(bundle, backend=backend)
except loom.BundleError as e:
    print(f"BundleError: {e}", file=sys.stderr)
    sys.exit(3)
assert b.backend == "mpi", b.backend
(rank,) = b.local_ranks
x = np.load(x)
first = b.run(x=x)
second = b.run(x=x)  # MPI stays up between jobs
if rank == 0:
    assert first["y"].tobytes() == second["y"].tobytes()
    np.save(Path(out) / "y.npy", first["y"])
else:
    assert first == {} and second == {}, (first, second)
print(f"rank {rank} done")
"""


def _mpirun():
    mpirun = shutil.which("mpirun")
    if not mpirun:
        pytest.skip("mpirun not installed")
    return [mpirun, "--allow-run-as-root", "--oversubscribe",
            "--mca", "btl", "self,vader"]


def _run_script(tmp_path, bundle, x, np_, backend="mpi"):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"out-{np_}-{backend}"
    out.mkdir()
    env = dict(os.environ,
               PYTHONPATH=str(Path(loom.__file__).resolve().parent.parent))
    return subprocess.run(
        [*_mpirun(), "-np", str(np_), sys.executable, str(script),
         str(bundle), str(x), str(out), backend],
        capture_output=True, text=True, timeout=300, env=env), out


@pytest.fixture(scope="module")
def mlp_tp2(mlp, tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi")
    loom.compile(mlp / "mlp-plain.mlir", mesh="tp=2", out=d / "bundle")
    return d / "bundle"


@pytest.mark.parametrize("backend", ["mpi", "auto"])
def test_mpirun_python_ranks(tmp_path, mlp, mlp_tp2, loom_run, backend):
    r, out = _run_script(tmp_path, mlp_tp2, mlp / "x.npy", 2, backend)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0 done" in r.stdout and "rank 1 done" in r.stdout
    y = np.load(out / "y.npy")
    # The thread ranks of this process, and loom-run under mpirun.
    threads = loom.Bundle.load(mlp_tp2, backend="threads")
    assert threads.backend == "threads" and threads.local_ranks == [0, 1]
    assert y.tobytes() == threads.run(x=np.load(mlp / "x.npy"))["y"].tobytes()
    run_cli(*_mpirun(), "-np", "2", loom_run, mlp_tp2, "--input",
            f"x={mlp / 'x.npy'}", "--output", tmp_path / "cli")
    assert y.tobytes() == np.load(tmp_path / "cli" / "y.npy").tobytes()
    np.testing.assert_allclose(y, np.load(mlp / "reference.npy"), atol=1e-4)


def test_mpirun_of_the_wrong_size(tmp_path, mlp, mlp_tp2):
    r, _ = _run_script(tmp_path, mlp_tp2, mlp / "x.npy", 3)
    assert r.returncode != 0
    assert "BundleError: mpirun started 3 processes, but the bundle has 2 " \
           "ranks" in r.stderr, r.stderr


def test_bad_backend(mlp_tp2):
    with pytest.raises(ValueError, match="backend 'nccl': expected 'auto'"):
        loom.Bundle.load(mlp_tp2, backend="nccl")
