"""@decode with the runtime's in-place KV cache (docs/IMPORT-LLAMA.md,
contract: decode(tokens, positions, cache_key_<l>, cache_value_<l>) ->
logits of the last position; the caches are loom-run's state).

Generation as a runtime would run it: prefill through @decode (S = prompt
length, positions 0..S-1, zero-filled caches), then single-token steps that
continue from the caches loom-run wrote (state files chained from one call to
the next). Every step's logits equal a float64 numpy forward pass over the
whole sequence so far (at the step's position), and the prefill's equal
Loom's own @forward at the prompt's last position. On 1 rank, on tp meshes
that split attention by KV heads (the caches split with them) and on ones
that keep it whole (9 query / 3 KV heads on tp=2 and tp=4), on dp=2, with
threads and under MPI, for GGUF (f32 and Q4_0) and HF (llama, gpt2) models.
"""
import json
import subprocess

import numpy as np
import pytest

import llama_models as lm  # noqa: E402
from llama_util import assert_close  # noqa: E402

# A 9-token prompt, then 8 generated tokens (teacher-forced).
SEQ = np.array([[5, 17, 3, 90, 44, 2, 8, 61, 33, 7, 70, 12, 1, 88, 40, 23,
                 9]], dtype=np.int64)
PROMPT = 9
STEPS = SEQ.shape[1] - PROMPT
CTX = 24
REL = 1e-5  # the sharded tests' tolerance (reassociated sums)


def _generate(loom, bundle, reference, mpi=False):
    """Prefill + STEPS single-token steps through @decode; each step's logits
    against `reference` [1, T, V] at its position (relative REL)."""
    pos = np.arange(SEQ.shape[1], dtype=np.int64)
    logits, state = loom.decode(bundle, SEQ[:, :PROMPT], pos[:PROMPT],
                                ctx=CTX, mpi=mpi)
    assert logits.shape == (1, reference.shape[2])
    assert_close(logits, reference[:, PROMPT - 1], REL)
    for i in range(PROMPT, PROMPT + STEPS):
        logits, state = loom.decode(bundle, SEQ[:, i:i + 1], pos[i:i + 1],
                                    state=state, mpi=mpi)
        assert_close(logits, reference[:, i], REL)
    return state


def _cache_inputs(bundle):
    m = json.loads((bundle / "manifest.json").read_text())
    entry = next(e for e in m["entries"] if e["name"] == "decode")
    return m, [t for t in entry["inputs"] if t.get("state")]


def _llama_model(tmp_path, fmt, heads=4, kv_heads=2, hidden=64, ttype="f32"):
    cfg = lm.tiny_config("llama", hidden=hidden, heads=heads,
                         kv_heads=kv_heads, ffn=128, layers=2)
    w = lm.make_weights(cfg, seed=11)
    if fmt == "gguf":
        path = lm.write_gguf(tmp_path / f"m-{ttype}.gguf", cfg, w, ttype,
                             arch="llama")
        ref = lm.llama_forward_gguf(cfg, lm.read_gguf_weights(path), SEQ,
                                    np.arange(SEQ.shape[1]), arch="llama")
    else:
        path = lm.write_hf(tmp_path / "hf", cfg, w)
        ref = lm.llama_forward_hf(cfg, w, SEQ, np.arange(SEQ.shape[1]))
    return cfg, path, ref


@pytest.mark.parametrize("fmt,ttype", [("gguf", "f32"), ("gguf", "q4_0"),
                                       ("hf", "f32")])
def test_generate_one_rank(tmp_path, loom, fmt, ttype):
    pytest.importorskip("gguf")
    cfg, path, ref = _llama_model(tmp_path, fmt, ttype=ttype)
    bundle = loom.compile(path)
    # Prefill through decode = @forward's last position (same bundle).
    fwd = loom.run(bundle, SEQ[:, :PROMPT], np.arange(PROMPT))
    logits, _ = loom.decode(bundle, SEQ[:, :PROMPT], np.arange(PROMPT),
                            ctx=CTX)
    assert_close(logits, fwd[:, -1], REL)
    state = _generate(loom, bundle, ref)
    # The manifest's state args: [1, Hkv, -1, Dh], ctx_dim 2; the caches
    # written hold CTX positions.
    m, caches = _cache_inputs(bundle)
    assert len(caches) == 2 * cfg.layers
    for t in caches:
        assert t["state"] == "kv_cache" and t["ctx_dim"] == 2
        assert t["shape"] == [1, cfg.kv_heads, -1, cfg.head_dim]
        assert np.load(state / f"{t['name']}.rank0.npy").shape[2] == CTX
    assert m["model"]["num_kv_heads"] == cfg.kv_heads
    assert m["model"]["context_length"] == cfg.context
    decode = next(e for e in m["entries"] if e["name"] == "decode")
    assert [o["name"] for o in decode["outputs"]] == ["logits"]
    assert decode["outputs"][0]["rank"] == 2


def test_generate_gpt2(tmp_path, loom):
    cfg = lm.tiny_config("gpt2", layers=2)
    w = lm.make_weights(cfg, seed=3)
    d = lm.write_hf(tmp_path / "hf", cfg, w)
    ref = lm.gpt2_forward(cfg, w, SEQ, np.arange(SEQ.shape[1]))
    _generate(loom, loom.compile(d), ref)


@pytest.mark.parametrize("heads,kv_heads,mesh,split", [
    (8, 4, "tp=2", True),     # attention split by KV heads: caches split
    (9, 3, "tp=3", True),
    (9, 3, "tp=2", False),    # heads do not divide: attention kept whole
    (9, 3, "tp=4", False),
    # One sequence (batch 1) on dp=2: nothing to split by batch; the
    # planner may use the axis for the heads (it does: caches split).
    (8, 4, "dp=2", True),
])
def test_generate_sharded(tmp_path, loom, heads, kv_heads, mesh, split):
    cfg, path, ref = _llama_model(tmp_path, "hf", heads=heads,
                                  kv_heads=kv_heads, hidden=16 * heads)
    bundle = loom.compile(path, mesh=mesh)
    m, caches = _cache_inputs(bundle)
    axis, n = mesh.split("=")
    local = kv_heads // int(n) if split else kv_heads
    for t in caches:
        assert t["shape"] == [1, local, -1, cfg.head_dim], (mesh, t)
    # The planner's choice is in plan.json: the decode attentions are split
    # over the axis exactly when the caches are, and the caches' memory is
    # counted at the model's context length.
    plan = json.loads((bundle / "plan.json").read_text())
    dec = next(f for f in plan["functions"] if f["name"] == "decode")
    attn = [o for o in dec["ops"] if o["op"] == "loom.attention"]
    assert len(attn) == cfg.layers
    assert all((axis in o["results"][0]) == split for o in attn), attn
    mem = dec["memory_per_device_bytes"]
    assert mem["kv_cache"] == (2 * cfg.layers * local * cfg.context *
                               cfg.head_dim * 4)
    state = _generate(loom, bundle, ref)
    # Each rank's caches hold its own KV heads (split) or all of them.
    for r in range(m["num_ranks"]):
        k = np.load(state / f"cache_key_0.rank{r}.npy")
        assert k.shape == (1, local, CTX, cfg.head_dim)
        logits = np.load(state / f"logits.rank{r}.npy")
        assert_close(logits, ref[:, -1], REL)


def test_generate_mpi(tmp_path, loom):
    cfg, path, ref = _llama_model(tmp_path, "hf", heads=8, kv_heads=4,
                                  hidden=128)
    _generate(loom, loom.compile(path, mesh="tp=2"), ref, mpi=True)


# --- bad input ---------------------------------------------------------------

def _run(loom, bundle, *args):
    return subprocess.run([str(loom.loom_run), str(bundle), "--entry",
                           "decode", *map(str, args)], capture_output=True,
                          text=True)


def test_decode_refusals(tmp_path, loom):
    cfg, path, ref = _llama_model(tmp_path, "hf")
    bundle = loom.compile(path)
    np.save(tmp_path / "t.npy", SEQ[:, :4])
    inputs = ["--input", f"tokens={tmp_path / 't.npy'}"]
    # Positions past the context.
    np.save(tmp_path / "p.npy", np.arange(6, 10, dtype=np.int64))
    r = _run(loom, bundle, *inputs, "--input", f"positions={tmp_path / 'p.npy'}",
             "--ctx", 8)
    assert r.returncode == 1 and "--ctx" in r.stderr and "6..9" in r.stderr
    # Non-contiguous positions.
    np.save(tmp_path / "p.npy", np.array([0, 1, 3, 4], dtype=np.int64))
    r = _run(loom, bundle, *inputs, "--input", f"positions={tmp_path / 'p.npy'}",
             "--ctx", 8)
    assert r.returncode == 1 and "contiguous" in r.stderr
    # --ctx beyond the model's context length.
    np.save(tmp_path / "p.npy", np.arange(4, dtype=np.int64))
    r = _run(loom, bundle, *inputs, "--input", f"positions={tmp_path / 'p.npy'}",
             "--ctx", cfg.context + 1)
    assert r.returncode == 1 and "context length" in r.stderr
    assert "Stack dump" not in r.stderr and len(r.stderr.splitlines()) == 1
