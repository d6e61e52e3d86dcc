"""f32 GEMM weights packed when the bundle is loaded, not on their first
call (issue 14): loomc records which weights the GEMM calls read
(manifest "gemm_b", loom-record-gemm-weights) and loom-run packs exactly
those at load, so no call packs one (the runtime's counters, printed by
`loom-run --bench`); the output matches ONNX Runtime and is the same bits
on 1 and 2 threads."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (Debian python3-torch)")
ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime (pip)")
sys.path.insert(0, str(Path(__file__).parent))
import models  # noqa: E402
from test_onnx_import import TOL, max_rel_err, run  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1]))
from loom_paths import BUILD, LOOMC, LOOM_RUN  # noqa: E402


def test_gemm_weights_packed_at_load(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(models.GPT2Block(64, 4, 16),
                                models.GPT2Block(64, 4, 16)).eval()
    x = torch.randn(1, 16, 64)
    onnx_path = tmp_path / "gpt2.onnx"
    models.export(model, x, onnx_path)
    xn = x.numpy()
    np.save(tmp_path / "x.npy", xn)
    want = ort.InferenceSession(str(onnx_path)).run(None, {"x": xn})[0]
    run([LOOMC, onnx_path, "-o", tmp_path / "bundle"])
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    weights = manifest["entries"][0]["weights"]
    marked = [w for w in weights if "gemm_b" in w]
    # Per block: qkv, proj, fc1, fc2 (ONNX MatMul: [K, N]); the 1-D biases
    # and norm scales are not GEMM operands.
    assert len(marked) == 8, [w["name"] for w in weights]
    assert all(w["gemm_b"] == "kn" and len(w["shape"]) == 2 for w in marked)
    outs = []
    for threads in (1, 2):
        out = tmp_path / f"out{threads}"
        out.mkdir()
        r = subprocess.run(
            [LOOM_RUN, tmp_path / "bundle", "--input", tmp_path / "x.npy",
             "--output", out, "--bench", "--iterations", "2",
             "--threads", str(threads)],
            capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        gemm = next(line for line in r.stdout.splitlines() if "GEMM:" in line)
        if "weights packed once" not in gemm:
            pytest.skip(f"no packed GEMM kernel on this CPU: {gemm}")
        m = re.search(r"packed at load: (\d+) weights .* on first use: (\d+)",
                      gemm)
        assert m, gemm
        assert (int(m.group(1)), int(m.group(2))) == (8, 0), gemm
        outs.append(np.load(next(out.glob("*.npy"))))
    assert max_rel_err(outs[0], want) <= TOL
    assert np.array_equal(outs[0], outs[1])
