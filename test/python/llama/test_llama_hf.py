"""Hugging Face (config.json + safetensors) import against numpy references.

Tiny random llama / mistral / qwen2 / gpt2 checkpoints are written with the
`safetensors` package (bf16 by hand, numpy has no bf16), compiled with loomc,
run with loom-run, and compared with a float64 numpy forward pass of the HF
model math (rotate_half rotary; gpt2's Conv1D [in, out] weights and
gelu_new).
"""

import json
import re

import numpy as np
import pytest

pytest.importorskip("safetensors")

import llama_models as lm  # noqa: E402
from llama_util import assert_close, check_state, entry_ir, kv_state  # noqa: E402

TOKENS = np.array([[5, 17, 3, 90, 44, 2, 8, 61, 33]], dtype=np.int64)
POSITIONS = np.arange(TOKENS.shape[1], dtype=np.int64)


def _forward(cfg, w):
    if cfg.family == "gpt2":
        return lm.gpt2_forward(cfg, w, TOKENS, POSITIONS)
    return lm.llama_forward_hf(cfg, w, TOKENS, POSITIONS)


@pytest.mark.parametrize("family,dtype,tied,sharded", [
    ("llama", "f32", True, False),
    ("llama", "f32", False, True),
    ("llama", "f16", True, False),
    ("llama", "bf16", False, True),
    ("mistral", "f32", True, False),
    ("qwen2", "f32", True, False),
    ("gpt2", "f32", True, False),
    ("gpt2", "f16", True, True),
])
def test_logits_match_reference(tmp_path, loom, family, dtype, tied, sharded):
    cfg = lm.tiny_config(family, tied=tied)
    w = lm.make_weights(cfg, seed=3)
    d = lm.write_hf(tmp_path / "m", cfg, w, dtype, sharded)
    logits = loom.run(loom.compile(d), TOKENS, POSITIONS)
    assert_close(logits, _forward(cfg, lm.round_to(w, dtype)))


def test_config_json_path_and_two_ranks(tmp_path, loom):
    cfg = lm.tiny_config("llama")
    w = lm.make_weights(cfg)
    d = lm.write_hf(tmp_path / "m", cfg, w)
    files = loom.run(loom.compile(d / "config.json", ranks=2), TOKENS, POSITIONS,
                     all_ranks=True)
    r0, r1 = (np.load(f) for f in files)
    assert np.array_equal(r0, r1)
    assert_close(r0, _forward(cfg, w))


def test_ir_structure(tmp_path, loom):
    cfg = lm.tiny_config("llama", layers=3)
    w = lm.make_weights(cfg)
    d = lm.write_hf(tmp_path / "m", cfg, w, "bf16", sharded=True)
    ir = entry_ir(loom.import_ir(d))
    assert ir.count("loom.attention") == 3
    assert ir.count("loom.rms_norm") == 7
    assert ir.count("loom.rotary ") == 6 and "style = half" in ir
    assert ir.count("transpose_b") == 7 * 3 + 1
    # Every weight refers to its shard at the offset the header gives.
    from safetensors import safe_open  # noqa: F401
    index = json.loads((d / "model.safetensors.index.json").read_text())
    for name, shard in index["weight_map"].items():
        path = (d / shard).resolve()
        raw = path.read_bytes()
        n = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8:8 + n])
        off = 8 + n + header[name]["data_offsets"][0]
        assert f'loom.weight "{name}" from <"{path}", offset = {off}> : tensor<' in ir


# --- bad input -------------------------------------------------------------

def test_unknown_model_type(tmp_path, loom):
    cfg = lm.tiny_config("llama")
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg),
                    config_overrides={"model_type": "falcon"})
    err = loom.import_fails(d)
    assert "falcon" in err and "llama" in err and "gpt2" in err


@pytest.mark.parametrize("family,key,value,tensor", [
    ("llama", "intermediate_size", 256, "mlp.gate_proj.weight"),
    ("llama", "num_key_value_heads", 4, "self_attn.k_proj.weight"),
    ("llama", "vocab_size", 100, "model.embed_tokens.weight"),
    ("gpt2", "n_embd", 128, "wte.weight"),
])
def test_shape_mismatch(tmp_path, loom, family, key, value, tensor):
    cfg = lm.tiny_config(family)
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg),
                    config_overrides={key: value})
    err = loom.import_fails(d)
    assert tensor in err and "has shape" in err and "config.json" in err


def test_missing_tensor(tmp_path, loom):
    cfg = lm.tiny_config("llama")
    w = lm.make_weights(cfg)
    del w["model.layers.1.self_attn.v_proj.weight"]
    d = lm.write_hf(tmp_path / "m", cfg, w)
    err = loom.import_fails(d)
    assert "missing tensor 'model.layers.1.self_attn.v_proj.weight'" in err


def test_missing_weights_file(tmp_path, loom):
    cfg = lm.tiny_config("llama")
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg))
    (d / "model.safetensors").unlink()
    err = loom.import_fails(d)
    assert "safetensors" in err


def test_truncated_safetensors(tmp_path, loom):
    cfg = lm.tiny_config("llama")
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg))
    f = d / "model.safetensors"
    f.write_bytes(f.read_bytes()[:-100])
    err = loom.import_fails(d)
    assert "model.safetensors" in err


def test_rope_scaling_refused(tmp_path, loom):
    cfg = lm.tiny_config("llama")
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg), config_overrides={
        "rope_scaling": {"rope_type": "yarn", "factor": 8.0,
                         "original_max_position_embeddings": 8192}})
    err = loom.import_fails(d)
    assert "rope_scaling of type 'yarn' is not supported (supported: " \
        "default, llama3)" in err
    # llama3 without one of its keys.
    d = lm.write_hf(tmp_path / "n", cfg, lm.make_weights(cfg), config_overrides={
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0}})
    err = loom.import_fails(d)
    assert "needs 'original_max_position_embeddings'" in err


def _rope_llama3(factor, low, high, old):
    """transformers' _compute_llama3_parameters (4.43+; Debian's 4.40 does
    not have it) in float64, then rotate_half as _rope_halves."""
    def rope(x, pos, theta):
        Dh = x.shape[-1]
        inv = 1.0 / theta ** (np.arange(0, Dh, 2, dtype=np.float64) / Dh)
        wavelen = 2 * np.pi / inv
        scaled = np.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        inv = np.where(medium, smoothed, scaled)
        ang = pos[:, None].astype(np.float64) * inv[None]
        cos = np.concatenate([np.cos(ang)] * 2, -1)
        sin = np.concatenate([np.sin(ang)] * 2, -1)
        rot = np.concatenate([-x[..., Dh // 2:], x[..., : Dh // 2]], -1)
        return x * cos + rot * sin
    return rope


def test_rope_scaling_llama3_matches_reference(tmp_path, loom):
    """Llama 3.1's rope_scaling: with original_max_position_embeddings 64 the
    16 rotary features of the tiny model fall in all three bands (kept,
    interpolated, divided by factor); positions 100.. make them matter."""
    cfg = lm.tiny_config("llama")
    w = lm.make_weights(cfg, seed=5)
    rs = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    d = lm.write_hf(tmp_path / "m", cfg, w,
                    config_overrides={"rope_scaling": rs})
    pos = POSITIONS + 100
    logits = loom.run(loom.compile(d), TOKENS, pos)
    ref = lm._llama_forward(cfg, lm._hf_names, w, TOKENS, pos,
                            _rope_llama3(8.0, 1.0, 4.0, 64))
    assert_close(logits, ref)
    # The scaling matters at these positions: unscaled rotary is far off.
    plain = lm.llama_forward_hf(cfg, w, TOKENS, pos)
    assert np.abs(plain - ref).max() > 100 * np.abs(logits - ref).max()


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_decode_with_kv_cache(tmp_path, loom, family):
    """@decode continues from a KV cache: the reference cache of the first n
    tokens plus the rest gives the full forward's last logits and leaves the
    full reference cache; each later position likewise."""
    cfg = lm.tiny_config(family)
    w = lm.make_weights(cfg, seed=5)
    d = lm.write_hf(tmp_path / "m", cfg, w)
    fwd = lm.gpt2_forward if family == "gpt2" else lm.llama_forward_hf
    cache = []
    ref = fwd(cfg, w, TOKENS, POSITIONS, cache=cache)
    n = 4
    bundle = loom.compile(d)
    logits, res = loom.decode(bundle, TOKENS[:, n:], POSITIONS[n:],
                              inputs=kv_state(cache, cfg.layers, n))
    assert_close(logits, ref[:, -1])
    check_state(res, cache, cfg.layers, TOKENS.shape[1])
    # Every position of the rest, one token at a time from Loom's own cache.
    for i in range(n, TOKENS.shape[1]):
        logits, res = loom.decode(bundle, TOKENS[:, i:i + 1],
                                  POSITIONS[i:i + 1],
                                  inputs=kv_state(cache, cfg.layers, i))
        assert_close(logits, ref[:, i])
        check_state(res, cache, cfg.layers, i + 1)
