"""Automatically sharded Llama and GPT-2 models (loomc --mesh, no hints):
the planner's plan, partitioned, run on 2, 4 and 8 thread ranks gives the
logits of the unsharded program on 1 rank (relative tolerance 1e-5: the
sums of the row-split matmuls are reassociated)."""

import json
import subprocess

import numpy as np
import pytest

import llama_models as lm  # noqa: E402

TOKENS = np.array([[3, 17, 42, 5, 9, 11, 2]], dtype=np.int64)
POSITIONS = np.arange(TOKENS.shape[1], dtype=np.int64)


def _compile(loom, model, mesh=None, extra=()):
    bundle = loom._fresh("bundle")
    cmd = [str(loom.loomc), str(model), "-o", str(bundle), *extra]
    if mesh:
        cmd += ["--mesh", mesh]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return bundle


@pytest.mark.parametrize("family,mesh", [
    ("llama", "tp=2"), ("llama", "tp=4"), ("gpt2", "tp=2"),
    ("gpt2", "tp=8"), ("llama", "dp=2,tp=2")])
def test_sharded_matches_one_rank(tmp_path, loom, family, mesh):
    cfg = lm.tiny_config(family, hidden=128, heads=8, kv_heads=4 if family != "gpt2" else 8,
                         ffn=256, layers=2)
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg))
    ref = loom.run(_compile(loom, d), TOKENS, POSITIONS)
    bundle = _compile(loom, d, mesh)
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert (bundle / "plan.json").exists()
    plan = json.loads((bundle / "plan.json").read_text())
    kinds = {c["kind"] for f in plan["functions"] for c in f["collectives"]}
    assert kinds, "a sharded plan needs collectives"
    # Split weights are loaded split: each rank's block has its own offset
    # and the ranks together read no more than one copy of them.
    ranks = manifest["ranks"]
    w0 = {w["name"]: w for w in ranks[0]["weights"]["forward"]}
    w1 = {w["name"]: w for w in ranks[-1]["weights"]["forward"]}
    moved = [n for n in w0 if w0[n]["offset"] != w1[n]["offset"]]
    assert moved, "no weight is split"
    got = loom.run(bundle, TOKENS, POSITIONS)
    assert got.shape == ref.shape
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err < 1e-5, (mesh, err, manifest.get("mesh"))


def test_heads_not_divisible(tmp_path, loom):
    """6 heads on tp=4: Megatron's rule (heads divide the axis) breaks; the
    planner keeps attention whole on the axis and still splits the MLP."""
    cfg = lm.tiny_config("llama", hidden=192, heads=6, kv_heads=6, ffn=256,
                         layers=2)
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg))
    ref = loom.run(_compile(loom, d), TOKENS, POSITIONS)
    bundle = _compile(loom, d, "tp=4")
    plan = json.loads((bundle / "plan.json").read_text())
    ops = plan["functions"][0]["ops"]
    attn = [o for o in ops if o["op"] == "loom.attention"]
    assert attn and all("tp" not in o["results"][0] for o in attn)
    assert any("tp" in o["results"][0] for o in ops if o["op"] == "loom.matmul")
    got = loom.run(bundle, TOKENS, POSITIONS)
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5


def test_emit_plan(tmp_path, loom):
    cfg = lm.tiny_config("llama", hidden=128, heads=8, kv_heads=4, ffn=256,
                         layers=2)
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg))
    out = tmp_path / "plan.json"
    r = subprocess.run([str(loom.loomc), str(d), "--mesh", "tp=4",
                        "--emit=plan", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "predicted" in r.stderr and "memory per device" in r.stderr
    plan = json.loads(out.read_text())
    f = plan["functions"][0]
    assert f["name"] == "forward"
    assert f["memory_per_device_bytes"]["weights"] < \
        f["memory_per_device_bytes"]["unsplit"] / 2
    # Megatron's layout: q/k/v and gate/up split by columns (the weights'
    # rows, HF stores [out, in]), o and down by rows: one reduction per block.
    ops = [o for o in f["ops"] if o["op"] == "loom.matmul"]
    assert any("partial {tp}" in o["results"][0] for o in ops)
    assert not any(c["kind"] == "all_to_all" for c in f["collectives"])


def test_model_too_big_for_mesh(tmp_path, loom):
    cfg = lm.tiny_config("llama", hidden=128, heads=8, kv_heads=4, ffn=256,
                         layers=2)
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg))
    r = subprocess.run([str(loom.loomc), str(d), "--mesh", "tp=2",
                        "--memory-limit", "0.0005", "-o",
                        str(tmp_path / "b")], capture_output=True, text=True)
    assert r.returncode != 0
    assert "does not fit" in r.stderr and "smallest mesh" in r.stderr
    assert "Stack dump" not in r.stderr
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("ttype", ["q4_0", "q8_0"])
def test_quantized_gguf_on_ranks(tmp_path, loom, ttype):
    """GGUF Q4_0/Q8_0 weights split over the ranks in whole blocks (rows or
    block columns, read from the .gguf as loaded); logits as on 1 rank."""
    cfg = lm.tiny_config("llama", hidden=128, heads=8, kv_heads=4, ffn=256,
                         layers=2)
    path = lm.write_gguf(tmp_path / f"m-{ttype}.gguf", cfg,
                         lm.make_weights(cfg), ttype, arch="llama")
    ref = loom.run(_compile(loom, path), TOKENS, POSITIONS)
    bundle = _compile(loom, path, "tp=2")
    # The quantized matmul weights are split as they are loaded, in whole
    # blocks: each rank's block of rows has its own offset in the .gguf.
    ranks = json.loads((bundle / "manifest.json").read_text())["ranks"]
    w0 = {w["name"]: w for w in ranks[0]["weights"]["forward"]}
    w1 = {w["name"]: w for w in ranks[1]["weights"]["forward"]}
    split = [n for n in w0 if "ffn" in n and w0[n]["offset"] != w1[n]["offset"]]
    assert split, "no quantized weight is split"
    got = loom.run(bundle, TOKENS, POSITIONS)
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5


def test_int4_quantized_on_ranks(tmp_path, loom):
    """loomc --quant int4:32 with --mesh tp=2: Loom's own int4 blocks split
    over the ranks as loaded; logits as the quantized program on 1 rank."""
    cfg = lm.tiny_config("llama", hidden=128, heads=8, kv_heads=4, ffn=256,
                         layers=2)
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg))
    ref = loom.run(_compile(loom, d, extra=["--quant", "int4:32"]),
                   TOKENS, POSITIONS)
    got = loom.run(_compile(loom, d, "tp=2", extra=["--quant", "int4:32"]),
                   TOKENS, POSITIONS)
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5
