"""Generation in loom-run (prefill + one decode call per token, the runtime
owning the KV cache) on a toy decode program compiled from C
(kernels/toy_decode.c) whose logits depend on everything in the cache:
greedy tokens equal numpy's greedy continuation recomputed from scratch on
the growing sequence, on 1 rank, tp=2, tp=4, a vocabulary split over tp,
dp=2 (two prompts), dp=2 x tp=2 and under MPI; seeded sampling repeats and
agrees across rank counts; every bad input is one line and no result."""

import json

import numpy as np
import pytest

import toy_model as tm

PROMPT = [5, 17, 42, 99, 3, 250, 7]
PROMPT2 = [11, 200, 31, 64]
N = 12


def ids(p):
    return ",".join(map(str, p))


def _bundle(tmp_path, mesh, name="b", **kw):
    return tm.toy_bundle(tmp_path / name, mesh, **kw)


@pytest.mark.parametrize("mesh,vsplit", [({"world": 1}, False), ({"tp": 2}, False),
                                         ({"tp": 4}, False), ({"tp": 2}, True)],
                         ids=["1rank", "tp2", "tp4", "tp2-vocab-split"])
def test_greedy_matches_reference(tmp_path, gen, mesh, vsplit):
    b = _bundle(tmp_path, mesh, vocab_split=vsplit)
    res, out, _ = gen.run(b, "--prompt-ids", ids(PROMPT), "--max-tokens", N)
    emb, wout = tm.weights()
    want = tm.reference_greedy(emb, wout, PROMPT, N)
    seq = res["sequences"][0]
    assert seq["ids"] == want
    assert seq["stop"] == "max-tokens" and seq["prompt_ids"] == PROMPT
    # Without a tokenizer the ids stream to stdout.
    assert out.split() == [str(t) for t in want]


@pytest.mark.parametrize("mesh", [{"dp": 2}, {"dp": 2, "tp": 2}],
                         ids=["dp2", "dp2xtp2"])
def test_dp_two_prompts(tmp_path, gen, mesh):
    """One sequence per dp rank, prompts of different lengths."""
    b = _bundle(tmp_path, mesh)
    res, out, _ = gen.run(b, "--prompt-ids", ids(PROMPT), "--prompt-ids",
                          ids(PROMPT2), "--max-tokens", N)
    emb, wout = tm.weights()
    for s, p in zip(res["sequences"], [PROMPT, PROMPT2]):
        assert s["prompt_ids"] == p
        assert s["ids"] == tm.reference_greedy(emb, wout, p, N)
    assert "=== sequence 0 (max-tokens) ===" in out
    assert "=== sequence 1 (max-tokens) ===" in out


def test_batch_of_two_on_one_rank(tmp_path, gen):
    b = _bundle(tmp_path, {"world": 1}, batch=2)
    p2 = PROMPT[::-1]
    res, _, _ = gen.run(b, "--prompt-ids", ids(PROMPT), "--prompt-ids",
                        ids(p2), "--max-tokens", 6)
    emb, wout = tm.weights()
    assert res["sequences"][0]["ids"] == tm.reference_greedy(emb, wout, PROMPT, 6)
    assert res["sequences"][1]["ids"] == tm.reference_greedy(emb, wout, p2, 6)


@pytest.mark.parametrize("mesh", [{"tp": 2}, {"dp": 2}])
def test_mpi(tmp_path, gen, mesh):
    b = _bundle(tmp_path, mesh)
    prompts = ["--prompt-ids", ids(PROMPT)]
    if "dp" in mesh:
        prompts += ["--prompt-ids", ids(PROMPT2)]
    res, out, _ = gen.run(b, *prompts, "--max-tokens", N, mpi=2)
    emb, wout = tm.weights()
    assert res["sequences"][0]["ids"] == tm.reference_greedy(emb, wout, PROMPT, N)
    if "dp" in mesh:
        assert res["sequences"][1]["ids"] == tm.reference_greedy(emb, wout,
                                                                 PROMPT2, N)
    else:  # only rank 0 prints
        assert len(out.split()) == N


def test_sampling_seeded(tmp_path, gen):
    one = _bundle(tmp_path, {"world": 1}, name="one")
    tp2 = _bundle(tmp_path, {"tp": 2}, name="tp2")
    flags = ["--prompt-ids", ids(PROMPT), "--max-tokens", 24, "--temp", 1.5,
             "--top-k", 40, "--top-p", 0.95, "--min-p", 0.01,
             "--repeat-penalty", 1.1, "--seed", 1234]
    a = gen.run(one, *flags)[0]["sequences"][0]["ids"]
    assert gen.run(one, *flags)[0]["sequences"][0]["ids"] == a
    assert gen.run(tp2, *flags)[0]["sequences"][0]["ids"] == a
    emb, wout = tm.weights()
    assert a != tm.reference_greedy(emb, wout, PROMPT, 24)  # really sampled
    flags[-1] = 99
    assert gen.run(one, *flags)[0]["sequences"][0]["ids"] != a


def test_context_end(tmp_path, gen):
    b = _bundle(tmp_path, {"tp": 2})
    res, _, err = gen.run(b, "--prompt-ids", ids(PROMPT), "--ctx", 10,
                          "--max-tokens", 100)
    s = res["sequences"][0]
    # Positions 7, 8, 9 take generated tokens; the 4th has no room.
    assert len(s["ids"]) == 4 and s["stop"] == "context"
    assert "end of the context (--ctx 10)" in err
    emb, wout = tm.weights()
    assert s["ids"] == tm.reference_greedy(emb, wout, PROMPT, 4)
    assert res["ctx"] == 10


def test_bench(tmp_path, gen):
    b = _bundle(tmp_path, {"tp": 2})
    res, out, _ = gen.run(b, "--prompt-ids", ids(PROMPT), "--max-tokens", 8,
                          "--bench")
    assert "prefill: 7 tokens" in out
    assert "decode:  8 tokens in 7 steps" in out
    assert "compute" in out and "collectives" in out
    bench = res["bench"]
    assert bench["decode_steps"] == 7 and bench["prefill_tokens"] == 7
    assert 0 < bench["decode_collectives_ms"] <= bench["decode_entry_ms"]


# --- text, with a byte-level tokenizer ---------------------------------------

@pytest.fixture
def tok_bundle(tmp_path):
    t = tm.write_tokenizer(tmp_path / "tok.gguf")
    return tm.toy_bundle(tmp_path / "tb", {"tp": 2}, tokenizer=t, context=256)


def _bytes_of(text):
    return list(text.encode())


def test_prompt_text(tmp_path, gen, tok_bundle):
    res, out, _ = gen.run(tok_bundle, "--prompt", "héllo", "--max-tokens", N)
    s = res["sequences"][0]
    assert s["prompt_ids"] == _bytes_of("héllo")
    emb, wout = tm.weights()
    want = tm.reference_greedy(emb, wout, s["prompt_ids"], N)
    eog = [i for i, t in enumerate(want) if t in (256, 258)]  # eos / im_end
    if eog:
        want = want[:eog[0]]
    assert s["ids"] == want
    text = b"".join(bytes([t]) if t < 256 else b"ab" if t == 259 else b""
                    for t in want).decode("utf-8", "replace")
    assert s["text"] == text
    assert out == text + "\n"


def _raw(ids):
    return b"".join(bytes([t]) if t < 256 else b"ab" if t == 259 else b""
                    for t in ids)


def test_chat_and_stop(tmp_path, gen, tok_bundle):
    res, _, _ = gen.run(tok_bundle, "--chat", "--system", "be brief",
                        "--prompt", "hi", "--max-tokens", 4)
    p = res["sequences"][0]["prompt_ids"]
    want = ([257] + _bytes_of("system\nbe brief") + [258] + _bytes_of("\n") +
            [257] + _bytes_of("user\nhi") + [258] + _bytes_of("\n") +
            [257] + _bytes_of("assistant\n"))
    assert p == want
    # A stop string cuts the text where it starts (and is not printed).
    for prompt in ["hello", "abc", "xyz", "the cat"]:
        free, _, _ = gen.run(tok_bundle, "--prompt", prompt, "--max-tokens", 30)
        raw = _raw(free["sequences"][0]["ids"])
        cut = [i for i in range(1, len(raw) - 1)
               if 32 <= raw[i] < 127 and 32 <= raw[i + 1] < 127]
        if cut:
            break
    else:
        pytest.skip("no printable pair in the toy's output")
    stop = raw[cut[0]:cut[0] + 2]
    res, out, _ = gen.run(tok_bundle, "--prompt", prompt, "--max-tokens", 30,
                          "--stop", stop.decode())
    s = res["sequences"][0]
    assert s["stop"] == "stop-string"
    text = raw[:raw.index(stop)].decode("utf-8", "replace")
    assert s["text"] == text
    assert out == text + "\n"


def _greedy_until_eog(prompt, n):
    emb, wout = tm.weights()
    want = tm.reference_greedy(emb, wout, prompt, n)
    eog = [i for i, t in enumerate(want) if t in (256, 258)]
    return want[:eog[0]] if eog else want


def test_interactive_keeps_cache(tmp_path, gen, tok_bundle):
    """Three turns with the chat template: each turn feeds only what is not
    cached (the cache is indexed by position), yet the last turn's tokens
    equal the reference recomputed on the whole conversation."""
    res, out, _ = gen.run(tok_bundle, "--interactive", "--max-tokens", 5,
                          "--system", "sys", stdin="hi\nyou\nok\n")
    assert out.count("> ") == 4  # one prompt per turn + the one that sees EOF
    s = res["sequences"][0]
    p = s["prompt_ids"]
    assert p.count(257) == 7  # system, 3 user turns, 2 replies, header
    assert p[-len(_bytes_of("assistant\n")) - 1:] == [257] + _bytes_of(
        "assistant\n")
    assert s["ids"] == _greedy_until_eog(p, 5)


# --- bad input ----------------------------------------------------------------

def test_bad_input(tmp_path, gen, tok_bundle):
    b = _bundle(tmp_path, {"world": 1})
    p = ["--prompt-ids", ids(PROMPT)]
    assert "does not leave room" in gen.fails(b, *p, "--ctx", 7)
    assert "beyond the model's context length 64" in gen.fails(b, *p, "--ctx", 65)
    assert "has no tokenizer" in gen.fails(b, "--prompt", "hello")
    assert "has no tokenizer" in gen.fails(b, *p, "--stop", "x")
    assert "not valid UTF-8" in gen.fails(b, "--prompt", "a\udcffb".encode(
        "utf-8", "surrogateescape").decode("latin-1").encode("latin-1").decode(
        "utf-8", "surrogateescape"))
    assert "--temp must be >= 0" in gen.fails(b, *p, "--temp", -1)
    assert "--top-p must be in (0, 1]" in gen.fails(b, *p, "--top-p", 0)
    assert "--top-p must be in (0, 1]" in gen.fails(b, *p, "--top-p", 1.5)
    assert "--min-p must be in [0, 1]" in gen.fails(b, *p, "--min-p", 2)
    assert "--repeat-penalty must be > 0" in gen.fails(b, *p,
                                                       "--repeat-penalty", 0)
    assert "--top-k must be >= 0" in gen.fails(b, *p, "--top-k", -3)
    assert "--max-tokens must be at least 1" in gen.fails(b, *p,
                                                         "--max-tokens", 0)
    assert "expected token ids" in gen.fails(b, "--prompt-ids", "1,x")
    assert "outside the vocabulary" in gen.fails(b, "--prompt-ids", "1,5000")
    assert "need a prompt" in gen.fails(b, "--temp", 0.5)
    # dp=2 wants one prompt per sequence.
    dp = _bundle(tmp_path, {"dp": 2}, name="dp")
    assert "give one prompt per sequence" in gen.fails(dp, *p)
    # No decode entry.
    nod = _bundle(tmp_path, {"world": 1}, name="nodecode", decode=False)
    assert "has no 'decode' entry" in gen.fails(nod, *p)
    # A cache larger than the memory.
    huge = _bundle(tmp_path, {"world": 1}, name="huge", context=1 << 40)
    msg = gen.fails(huge, *p, "--ctx", 1 << 38)
    assert "needs" in msg and "available" in msg and "smaller --ctx" in msg
    # An unknown chat template, refused by name.
    t = tm.write_tokenizer(tmp_path / "weird.gguf",
                           chat_template="{{ weird_template_xyz }}")
    wb = tm.toy_bundle(tmp_path / "weird", {"world": 1}, tokenizer=t)
    msg = gen.fails(wb, "--chat", "--prompt", "hi")
    assert "--chat" in msg and "weird_template_xyz" in msg
    # --prompt-ids and --input still work without a tokenizer.
    gen.run(b, *p, "--max-tokens", 2)


def test_invalid_utf8_prompt(tmp_path, gen, tok_bundle):
    import subprocess
    res = tmp_path / "r.json"
    r = subprocess.run([str(gen.loom_run), str(tok_bundle), "--prompt",
                        b"ab\xffcd", "--result", str(res)],
                       capture_output=True)
    assert r.returncode == 1 and not res.exists()
    assert b"not valid UTF-8 (byte 2)" in r.stderr
