"""Threads inside a rank (loom-run --threads N; docs/RUNTIME.md): the
quantized matmul kernels and the generated loops split over the rank's
pool give the logits of one thread bit for bit (each output is computed by
one thread, in the same order), on 1 and 2 ranks, for the forward pass and
for decode. $LOOM_PARALLEL_GRAIN=1 makes even these tiny models' loops
split; without it the default grain keeps them whole, which must not change
anything either. On a host with fewer cores than N, loom-run clamps N with
a note (the partition is still exercised up to the host's cores)."""

import json
import os
import subprocess

import numpy as np
import pytest

import llama_models as lm  # noqa: E402
from llama_util import assert_close  # noqa: E402

TOKENS = np.array([[3, 17, 42, 5, 9, 11, 2, 60, 7]], dtype=np.int64)
POSITIONS = np.arange(TOKENS.shape[1], dtype=np.int64)


def _run(loom, bundle, threads, entry=None, grain="1", extra=(), tokens=TOKENS,
         blas=None):
    """Runs `entry` (default: the first) with --threads; returns every
    rank's outputs (and, for @decode, caches)."""
    d = loom._fresh("thr")
    d.mkdir()
    np.save(d / "t.npy", tokens)
    np.save(d / "p.npy", np.arange(tokens.shape[1], dtype=np.int64))
    cmd = [str(loom.loom_run), str(bundle), "--input", f"tokens={d / 't.npy'}",
           "--input", f"positions={d / 'p.npy'}", "--output", str(d / "res"),
           "--all-ranks", "--threads", str(threads), *extra]
    if entry:
        cmd += ["--entry", entry]
    env = dict(os.environ)
    env.pop("LOOM_PARALLEL_GRAIN", None)
    env.pop("LOOM_BLAS_THREADS", None)
    if blas:
        env["LOOM_BLAS_THREADS"] = str(blas)
    if grain:
        env["LOOM_PARALLEL_GRAIN"] = grain
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return {f.name: np.load(f) for f in sorted((d / "res").glob("*.npy"))}


def _same_bits(a: dict, b: dict, what: str):
    assert a.keys() == b.keys(), what
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, (what, k)
        diff = np.flatnonzero(a[k].view(np.uint8) != b[k].view(np.uint8))
        assert diff.size == 0, (
            f"{what}: {k} differs from 1 thread "
            f"(max abs diff {np.abs(a[k].astype(np.float64) - b[k]).max():.3g})")


@pytest.mark.parametrize("ttype", ["q4_0", "q8_0"])
def test_quantized_llama_threads(tmp_path, loom, ttype):
    """GGUF Q4_0/Q8_0 llama, 1 rank: the generated quantized kernels split
    rows and tokens; --threads 1, 2, 4 give the same bits, and match the
    numpy reference."""
    cfg = lm.tiny_config("llama", hidden=128, heads=8, kv_heads=4, ffn=256,
                         layers=2)
    path = lm.write_gguf(tmp_path / f"m-{ttype}.gguf", cfg,
                         lm.make_weights(cfg), ttype, arch="llama")
    bundle = loom.compile(path)
    one = _run(loom, bundle, 1)
    for n in (2, 4):
        _same_bits(one, _run(loom, bundle, n), f"{ttype} --threads {n}")
    # The default grain (the tiny loops stay on one thread) too.
    _same_bits(one, _run(loom, bundle, 2, grain=None), f"{ttype} default grain")
    ref = lm.llama_forward_gguf(cfg, lm.read_gguf_weights(path), TOKENS,
                                POSITIONS, arch="llama")
    assert_close(one["logits.rank0.npy"], ref)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_two_ranks_threads(tmp_path, loom, family):
    """f32 llama and GPT-2 on tp=2 (thread ranks x N threads each): every
    rank's logits are the same bits with --threads 1, 2 and 4 when OpenBLAS
    keeps one thread ($LOOM_BLAS_THREADS=1: the generated loops alone are
    split); with OpenBLAS on the same N threads (the default) within the
    sharded tests' tolerance, as OpenBLAS's own threading does not keep the
    bits across thread counts (GPT-2's projections: ~1e-6 relative)."""
    cfg = lm.tiny_config(family, hidden=128, heads=8,
                         kv_heads=4 if family != "gpt2" else 8, ffn=256,
                         layers=2)
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg))
    bundle = loom.compile(d, mesh="tp=2")
    one = _run(loom, bundle, 1)
    assert len([k for k in one if k.startswith("logits")]) == 2
    for n in (2, 4):
        _same_bits(one, _run(loom, bundle, n, blas=1),
                   f"{family} tp=2 --threads {n}")
        got = _run(loom, bundle, n)
        for k in one:
            assert_close(got[k], one[k], 1e-5)


def test_decode_threads(tmp_path, loom):
    """@decode of a quantized llama (the GEMV path: one row of x, W's rows
    split) on 1 and 2 ranks: logits and caches the same bits with 1, 2, 4
    threads."""
    cfg = lm.tiny_config("llama", hidden=128, heads=8, kv_heads=4, ffn=256,
                         layers=2)
    path = lm.write_gguf(tmp_path / "m.gguf", cfg, lm.make_weights(cfg),
                         "q4_0", arch="llama")
    for mesh in (None, "tp=2"):
        bundle = loom.compile(path, mesh=mesh)
        manifest = json.loads((bundle / "manifest.json").read_text())
        if not any(e["name"] == "decode" for e in manifest["entries"]):
            pytest.skip("no decode entry")
        # A 9-token prefill (rows and tokens split) and one token (GEMV).
        for toks in (TOKENS, TOKENS[:, :1]):
            args = dict(entry="decode", extra=("--ctx", "16"), tokens=toks)
            one = _run(loom, bundle, 1, **args)
            for n in (2, 4):
                _same_bits(one, _run(loom, bundle, n, **args),
                           f"decode {mesh} {toks.shape} --threads {n}")


def test_threads_flag_errors(tmp_path, loom):
    """--threads 0 is refused by name; more threads than cores are clamped
    with a note and still run."""
    cfg = lm.tiny_config("llama", layers=1)
    path = lm.write_gguf(tmp_path / "m.gguf", cfg, lm.make_weights(cfg),
                         "q8_0", arch="llama")
    bundle = loom.compile(path)
    r = subprocess.run([str(loom.loom_run), str(bundle), "--threads", "0"],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "--threads must be at least 1" in r.stderr
    assert "Stack dump" not in r.stderr
    r = subprocess.run([str(loom.loom_run), str(bundle), "--threads", "x"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "--threads must be at least 1" in r.stderr
    many = (os.cpu_count() or 1) * 64
    d = loom._fresh("many")
    d.mkdir()
    np.save(d / "t.npy", TOKENS)
    np.save(d / "p.npy", POSITIONS)
    r = subprocess.run([str(loom.loom_run), str(bundle), "--threads",
                        str(many), "--input", f"tokens={d / 't.npy'}",
                        "--input", f"positions={d / 'p.npy'}",
                        "--output", str(d / "res")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"note: --threads {many} is more than" in r.stderr
