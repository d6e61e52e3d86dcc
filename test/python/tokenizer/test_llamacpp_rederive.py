"""Re-derives llama.cpp's committed reference data when llama-cpp-python is
importable (it is not in the project venv: build it as the docstring of
test/python/generate/make_llamacpp_reference.py says, then run pytest with
that interpreter). The tokenizer data always; the greedy generation data with
LOOM_REDERIVE_GREEDY=1 (it runs a float64 forward of SmolLM2 too)."""

import json
import os
import sys

import pytest

from conftest import DATA, HERE

sys.path.insert(0, str(HERE.parent / "generate"))


def _llama_cpp():
    try:
        import llama_cpp  # noqa: F401
    except Exception as e:  # not installed, or its libllama is missing
        pytest.skip(f"llama-cpp-python is not importable ({type(e).__name__}: {e}); "
                    "see make_llamacpp_reference.py for how to build it")


def _same(a, b, path=""):
    """Equal JSON, ignoring version/system strings."""
    if isinstance(a, dict):
        keys = set(a) | set(b)
        for k in keys - {"versions"}:
            _same(a.get(k), b.get(k), f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=1e-5, abs=1e-4), path
    else:
        assert a == b, path


@pytest.mark.parametrize("only, files", [
    ("tokenizer", ["tokenizer_smollm2.json"]),
    ("spm", ["tokenizer_mistral_spm.json"]),
    ("greedy", ["greedy_smollm2.json"]),
])
def test_rederive(only, files, smollm2, tmp_path):
    _llama_cpp()
    if only == "greedy" and not os.environ.get("LOOM_REDERIVE_GREEDY"):
        pytest.skip("set LOOM_REDERIVE_GREEDY=1 to re-run the greedy reference")
    import make_llamacpp_reference as ref
    ref.main(["--only", only, "--out", str(tmp_path)])
    for f in files:
        _same(json.loads((DATA / f).read_text()),
              json.loads((tmp_path / f).read_text()), f)
