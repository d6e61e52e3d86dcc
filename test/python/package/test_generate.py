"""Bundle.generate against loom-run's generation on the same bundle: the
toy decode program of test/python/generate (heads split over tp=2, the
runtime's collectives resolved from the extension), greedy text with the
byte-level tokenizer, token ids without one, and bad arguments."""

import json
import sys
import threading
from pathlib import Path

import pytest

import loom
from conftest import run_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generate"))
import toy_model as tm  # noqa: E402

N = 12


@pytest.fixture(scope="module")
def tok_bundle(tmp_path_factory):
    d = tmp_path_factory.mktemp("gen")
    t = tm.write_tokenizer(d / "tok.gguf")
    return tm.toy_bundle(d / "tb", {"tp": 2}, tokenizer=t, context=256)


def _cli(loom_run, bundle, tmp_path, *args):
    res = tmp_path / "res.json"
    r = run_cli(loom_run, bundle, *args, "--result", res)
    return json.loads(res.read_text())["sequences"][0], r.stdout


@pytest.mark.parametrize("prompt", ["héllo", "abc abc"])
def test_greedy_text_equals_loom_run(tmp_path, loom_run, tok_bundle, prompt):
    want, stdout = _cli(loom_run, tok_bundle, tmp_path, "--prompt", prompt,
                        "--max-tokens", N)
    b = loom.Bundle.load(tok_bundle)
    g = b.generate(prompt, max_tokens=N)
    pieces = list(g)
    # The streamed pieces are what loom-run prints.
    assert "".join(pieces) + "\n" == stdout
    assert g.text == "".join(pieces)
    assert g.tokens == want["ids"] and g.stop == want["stop"]


def test_chat_sampled_equals_loom_run(tmp_path, loom_run, tok_bundle):
    args = dict(temperature=0.8, top_k=40, top_p=0.9, seed=7)
    want, stdout = _cli(loom_run, tok_bundle, tmp_path, "--chat", "--system",
                        "be brief", "--prompt", "hi", "--max-tokens", N,
                        "--temp", 0.8, "--top-k", 40, "--top-p", 0.9,
                        "--seed", 7)
    g = loom.Bundle.load(tok_bundle).generate(
        "hi", max_tokens=N, chat=True, system="be brief", **args)
    assert "".join(g) + "\n" == stdout and g.tokens == want["ids"]


def test_ids_without_tokenizer(tmp_path):
    prompt = [5, 17, 42, 99, 3, 250, 7]
    b = loom.Bundle.load(tm.toy_bundle(tmp_path / "b", {"tp": 2}))
    emb, wout = tm.weights()
    assert list(b.generate(prompt, max_tokens=N)) == \
        tm.reference_greedy(emb, wout, prompt, N)
    with pytest.raises(ValueError, match="no tokenizer"):
        b.generate("text")


def test_generation_runs_without_the_gil(tok_bundle):
    """Pieces arrive while another Python thread runs."""
    b = loom.Bundle.load(tok_bundle)
    count, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        text = "".join(b.generate("héllo", max_tokens=N))
    finally:
        stop.set()
        t.join()
    assert text and count[0] > 0


def test_bad_generate_arguments(tok_bundle):
    b = loom.Bundle.load(tok_bundle)
    with pytest.raises(ValueError, match="top"):
        b.generate("hi", top_p=0.0)
    with pytest.raises(loom.RunError, match="ctx"):
        list(b.generate("hi", ctx=100000))
