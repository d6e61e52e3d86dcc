"""Fixtures of the generation tests: the loom-run binary, runs that return
the --result JSON, and failures that must be one clean line."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from loom_paths import tool  # noqa: E402


@pytest.fixture(scope="session")
def loom_run() -> Path:
    t = tool("loom-run")
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) for the toy decode program")
    return t


class Gen:
    def __init__(self, loom_run, tmp):
        self.loom_run, self.tmp, self.n = loom_run, tmp, 0

    def cmd(self, bundle, *args, mpi=0):
        c = [str(self.loom_run), str(bundle), *map(str, args)]
        if mpi:
            mpirun = shutil.which("mpirun")
            if not mpirun:
                pytest.skip("mpirun not installed")
            c = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
                 str(mpi), *c]
        return c

    def run(self, bundle, *args, mpi=0, stdin=None):
        """Runs a generation; returns (result JSON, stdout, stderr)."""
        self.n += 1
        res = self.tmp / f"result{self.n}.json"
        r = subprocess.run(self.cmd(bundle, *args, "--result", res, mpi=mpi),
                           capture_output=True, text=True, timeout=300,
                           input=stdin)
        assert r.returncode == 0, r.stderr
        return json.loads(res.read_text()), r.stdout, r.stderr

    def fails(self, bundle, *args) -> str:
        """A refused run: exit 1 or 2, one line on stderr, no result file,
        no crash; returns the line."""
        self.n += 1
        res = self.tmp / f"bad{self.n}.json"
        r = subprocess.run(self.cmd(bundle, *args, "--result", res),
                           capture_output=True, text=True, timeout=120)
        assert r.returncode in (1, 2), (r.returncode, r.stderr)
        assert not res.exists()
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        assert len(lines) == 1, r.stderr
        assert "Assertion" not in r.stderr and "Stack dump" not in r.stderr
        return lines[0]


@pytest.fixture
def gen(loom_run, tmp_path) -> Gen:
    return Gen(loom_run, tmp_path)
