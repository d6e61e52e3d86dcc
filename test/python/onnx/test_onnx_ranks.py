"""ONNX models compiled (the Python package, or loomc when it is not built)
and run by loom-run (every rank's output) on 1, 2, 4 and 8 CPU
ranks with both backends: `--mesh tp=N` plans and partitions the program
(docs/SHARDING.md, docs/PARTITION.md), every rank gets the same input and
returns the whole output, which must match ONNX Runtime."""
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (Debian python3-torch)")
ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime (pip)")
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
import models  # noqa: E402
from loom_paths import run_ok as run, compile_bundle  # noqa: E402
from loom_paths import BUILD, LOOMC, LOOM_RUN  # noqa: E402

pytestmark = pytest.mark.skipif(not LOOMC.exists(), reason=f"no loomc in {BUILD}")


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpt2")
    torch.manual_seed(0)
    path = tmp / "gpt2.onnx"
    models.export(models.GPT2Block(), torch.randn(1, 8, 64), path, None)
    return path


@pytest.mark.parametrize("backend,n", [("threads", 1), ("threads", 2),
                                       ("threads", 4), ("threads", 8),
                                       ("mpi", 2), ("mpi", 4)])
def test_gpt2_block_on_ranks(tmp_path, gpt2, backend, n):
    if backend == "mpi" and not shutil.which("mpirun"):
        pytest.skip("mpirun not installed")
    compile_bundle(gpt2, tmp_path / "out", mesh=f"tp={n}")
    if n > 1:
        assert "all_reduce" in (tmp_path / "out" / "ir" / "program.mlir").read_text() \
            or "reduce_scatter" in (tmp_path / "out" / "ir" / "program.mlir").read_text()
    sess = ort.InferenceSession(str(gpt2))
    x = np.random.default_rng(n).standard_normal((1, 8, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    args = [tmp_path / "out", "--input", f"x={tmp_path}/x.npy",
            "--output", tmp_path / "res", "--all-ranks"]
    if backend == "threads":
        run([LOOM_RUN, *args])
    else:
        run([shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe",
             "-np", str(n), LOOM_RUN, *args])
    want = sess.run(None, {"x": x})[0]
    for r in range(n):
        got = np.load(tmp_path / "res" / f"y.rank{r}.npy")
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err <= 1e-4, f"rank {r}: max relative error {err:.3g}"
