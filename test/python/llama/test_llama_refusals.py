"""What the LLM importers refuse by name instead of compiling a wrong model:
unknown tensors, config keys and GGUF metadata, sliding windows that bind,
and hyper-parameters out of range. Also --context-limit."""

import json
import math
import re
import subprocess

import numpy as np
import pytest

import llama_models as lm


def hf_dir(tmp_path, family="llama", extra=None, overrides=None, name="m"):
    cfg = lm.tiny_config(family, layers=1)
    w = lm.make_weights(cfg)
    w.update(extra or {})
    return lm.write_hf(tmp_path / name, cfg, w, config_overrides=overrides)


def test_unknown_tensor_in_a_layer_is_refused(loom, tmp_path):
    # attention_bias false, yet an o_proj bias in the file: never dropped.
    d = hf_dir(tmp_path, extra={
        "model.layers.0.self_attn.o_proj.bias": np.ones(64, np.float32)})
    err = loom.import_fails(d)
    assert "tensor 'model.layers.0.self_attn.o_proj.bias' is not used" in err


def test_unknown_top_level_tensor_is_refused(loom, tmp_path):
    d = hf_dir(tmp_path, extra={"model.extra_norm.weight":
                                np.ones(64, np.float32)})
    assert "tensor 'model.extra_norm.weight'" in loom.import_fails(d)


def test_tied_checkpoint_with_saved_lm_head_imports(loom, tmp_path):
    # tie_word_embeddings: transformers replaces lm_head by the embedding.
    cfg = lm.tiny_config("llama", layers=1)
    w = lm.make_weights(cfg)
    w["lm_head.weight"] = w["model.embed_tokens.weight"].copy()
    d = lm.write_hf(tmp_path / "m", cfg, w,
                    config_overrides={"tie_word_embeddings": True})
    loom.import_ir(d)


def test_attention_bias_without_o_proj_bias_is_refused(loom, tmp_path):
    cfg = lm.tiny_config("llama", layers=1, qkv_bias=True)
    d = lm.write_hf(tmp_path / "m", cfg, lm.make_weights(cfg),
                    config_overrides={"attention_bias": True})
    err = loom.import_fails(d)
    assert "missing tensor 'model.layers.0.self_attn.o_proj.bias'" in err


@pytest.mark.parametrize("key,value", [
    ("mlp_bias", True),
    ("quantization_config", {"quant_method": "gptq", "bits": 4}),
    ("some_future_option", 3),
])
def test_config_keys_are_refused_by_name(loom, tmp_path, key, value):
    d = hf_dir(tmp_path, overrides={key: value})
    err = loom.import_fails(d)
    assert f"key '{key}'" in err, err


def test_sliding_window(loom, tmp_path):
    # Shorter than the context: refused, with the way out.
    d = hf_dir(tmp_path, "mistral", overrides={"sliding_window": 32})
    err = loom.import_fails(d)
    assert ("sliding_window 32 < context length 128 is not supported: the "
            "attention would differ after 32 tokens; pass --context-limit N "
            "with N <= 32 to compile a model exact up to N tokens") in err
    # --context-limit within the window: imports, the limit recorded.
    out = tmp_path / "cl.mlir"
    r = subprocess.run([str(loom.loomc), str(d), "--compile-to=import",
                        "--context-limit", "32", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert re.search(r"context_length = 32\b", out.read_text())
    # Beyond the window: still refused.
    r = subprocess.run([str(loom.loomc), str(d), "--compile-to=import",
                        "--context-limit", "64", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "sliding_window 32 < context length 64" in r.stderr
    # Longer than the model's context: refused.
    r = subprocess.run([str(loom.loomc), str(d), "--compile-to=import",
                        "--context-limit", "4096", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "max_position_embeddings 128" in r.stderr
    # null, or at least the context: no window binds.
    for w in (None, 128, 4096):
        loom.import_ir(hf_dir(tmp_path, "mistral", name=f"w{w}",
                              overrides={"sliding_window": w}))
    # qwen2 only uses it with use_sliding_window.
    loom.import_ir(hf_dir(tmp_path, "qwen2", name="q",
                          overrides={"sliding_window": 32}))
    err = loom.import_fails(hf_dir(tmp_path, "qwen2", name="q2", overrides={
        "sliding_window": 32, "use_sliding_window": True}))
    assert "sliding_window 32 < context length 128" in err


def test_context_limit_is_recorded(loom, tmp_path):
    cfg = lm.tiny_config("llama", layers=1)
    g = lm.write_gguf(tmp_path / "m.gguf", cfg, lm.make_weights(cfg))
    out = tmp_path / "o.mlir"
    r = subprocess.run([str(loom.loomc), str(g), "--compile-to=import",
                        "--context-limit", "100", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert re.search(r"context_length = 100\b", out.read_text())


@pytest.mark.parametrize("field,value,key", [
    ("theta", 0.0, "llama.rope.freq_base"),
    ("theta", math.inf, "llama.rope.freq_base"),
    ("theta", -5.0, "llama.rope.freq_base"),
    ("theta", math.nan, "llama.rope.freq_base"),
    ("context", 0, "llama.context_length"),
    ("eps", 0.0, "llama.attention.layer_norm_rms_epsilon"),
    ("eps", math.inf, "llama.attention.layer_norm_rms_epsilon"),
    ("kv_heads", 3, "llama.attention.head_count_kv"),
    ("heads", 3, "llama.attention.head_count"),
    ("rope_dims", 5, "llama.rope.dimension_count"),
    ("rope_dims", 32, "llama.rope.dimension_count"),
    ("hidden", 1 << 21, "llama.embedding_length"),
])
def test_gguf_hyper_parameters_are_validated(loom, tmp_path, field, value,
                                             key):
    # The metadata only is wrong; the rules are the HF reader's too
    # (LlmHyperParams.h), and the message names the key and its value.
    cfg = lm.tiny_config("llama", layers=1)
    w = lm.make_weights(cfg)
    g = lm.write_gguf(tmp_path / "m.gguf", cfg, w, meta={field: value})
    err = loom.import_fails(g)
    assert f"metadata key '{key}': {key} = " in err, err
    assert "must " in err, err


def test_gguf_unknown_metadata_is_refused(loom, tmp_path):
    import gguf
    cfg = lm.tiny_config("llama", layers=1)
    w = lm.make_weights(cfg)
    orig = gguf.GGUFWriter.write_header_to_file

    def add_and_write(self, key, value):
        def patched(s, *a, **k):
            s.add_uint32(key, value) if isinstance(value, int) else \
                s.add_string(key, value)
            return orig(s, *a, **k)
        return patched

    for key, value, want in [
            ("llama.expert_count", 8, "mixture-of-experts"),
            ("llama.attention.sliding_window", 16,
             "llama.attention.sliding_window 16 < context length 128"),
            ("llama.some_new_thing", 1, "'llama.some_new_thing' is not a llama key"),
            ("general.something", "x", "'general.something'")]:
        gguf.GGUFWriter.write_header_to_file = add_and_write(None, key, value)
        try:
            g = lm.write_gguf(tmp_path / f"{key}.gguf", cfg, w)
        finally:
            gguf.GGUFWriter.write_header_to_file = orig
        assert want in loom.import_fails(g), key
