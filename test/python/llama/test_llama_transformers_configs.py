"""Every option of transformers' own config classes either changes nothing,
matches transformers, or is refused by name.

For each supported model_type (LlamaConfig, MistralConfig, Qwen2Config,
GPT2Config) a tiny model with random weights is built by transformers itself
and saved with save_pretrained (safetensors; nothing is downloaded). Then
each boolean option of the config class is toggled, and a few enumerated
ones set to another value, and for each toggle:

  * loomc refuses the checkpoint with a message naming the key; or
  * loomc imports the same graph as for the defaults (the IR is identical)
    and transformers' logits do not change either; or
  * the bundle loomc compiles gives transformers' logits (1e-5 of max|ref|).

Only the toggles whose import differs are compiled (a few per family: about
3 s each here); the file ran in 150 s here (2 shared cores).
"""

import json
import re
import subprocess

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from llama_util import assert_close  # noqa: E402

TINY = {
    "llama": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2,
                  vocab_size=96, max_position_embeddings=128),
    "mistral": dict(hidden_size=64, intermediate_size=128,
                    num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, vocab_size=96,
                    max_position_embeddings=128),
    "qwen2": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2,
                  vocab_size=96, max_position_embeddings=128),
    "gpt2": dict(n_embd=64, n_layer=2, n_head=4, vocab_size=96,
                 n_positions=128),
}

# Enumerated options set to a value other than the default.
ENUMS = {
    "llama": {"hidden_act": ["gelu"],
              "rope_scaling": [{"type": "linear", "factor": 2.0}]},
    "mistral": {"hidden_act": ["gelu"], "sliding_window": [16, None]},
    "qwen2": {"hidden_act": ["gelu"]},
    "gpt2": {"activation_function": ["gelu", "relu"]},
}

# Toggles that transformers itself cannot build or run as a causal LM from
# the tiny config (nothing to compare against); Loom's answer is still
# checked to be an import or a refusal, never a crash.
TOKENS = np.array([[3, 17, 42, 5, 88, 1, 60, 23, 9, 71, 2, 33]], dtype=np.int64)


def config_class(family):
    return {"llama": transformers.LlamaConfig,
            "mistral": transformers.MistralConfig,
            "qwen2": transformers.Qwen2Config,
            "gpt2": transformers.GPT2Config}[family]


def build(family, overrides, out_dir):
    """Saves a model built by transformers from the tiny config; returns
    (the model, its state dict) or None when transformers cannot build it."""
    cfg = config_class(family)(**{**TINY[family], **overrides})
    torch.manual_seed(0)
    try:
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    except Exception:  # noqa: BLE001 - a config transformers rejects
        return None
    model.eval()
    # Non-trivial norms and biases, so that a dropped one shows.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    # Generation toggles (early_stopping, ...) stay in config.json, which is
    # what is tested; the separate generation_config.json would refuse them.
    model.generation_config = transformers.GenerationConfig()
    model.save_pretrained(out_dir, safe_serialization=True)
    return model


def logits_of(model):
    with torch.no_grad():
        out = model(torch.from_numpy(TOKENS))
    lg = out.logits if hasattr(out, "logits") else out[0]
    return lg.double().numpy()


def loomc(loom, model_dir, *args):
    out = loom._fresh("imp").with_suffix(".mlir")
    r = subprocess.run([str(loom.loomc), str(model_dir), "--compile-to=import",
                        "-o", str(out), *args], capture_output=True, text=True)
    assert r.returncode in (0, 1), (r.returncode, r.stderr)
    assert "Stack dump" not in r.stderr
    if r.returncode:
        return None, r.stderr
    return out.read_text(), ""


def normalized(ir, model_dir):
    return ir.replace(str(model_dir), "<dir>")


def toggles(family):
    defaults = config_class(family)(**TINY[family]).to_dict()
    for key, value in sorted(defaults.items()):
        if isinstance(value, bool):
            yield key, not value
    for key, values in ENUMS[family].items():
        for v in values:
            yield key, v


@pytest.mark.parametrize("family", ["llama", "mistral", "qwen2", "gpt2"])
def test_every_config_option(family, loom, tmp_path):
    base_dir = tmp_path / "base"
    base = build(family, {}, base_dir)
    base_ir, err = loomc(loom, base_dir)
    assert base_ir is not None, err
    ref = logits_of(base)
    # The defaults match transformers.
    bundle = loom.compile(base_dir)
    pos = np.arange(TOKENS.shape[1])
    assert_close(loom.run(bundle, TOKENS, pos), ref, rel=1e-5)

    outcomes = {}
    for i, (key, value) in enumerate(toggles(family)):
        d = tmp_path / f"t{i}"
        model = build(family, {key: value}, d)
        if model is None:
            outcomes[key] = "transformers cannot build it"
            continue
        saved = json.loads((d / "config.json").read_text())
        ir, err = loomc(loom, d)
        if ir is None:
            # Refused: the message names the key (or, for a key that only
            # adds tensors, the tensor it adds).
            assert re.search(re.escape(key) + r"|tensor '", err), (key, err)
            outcomes[key] = "refused"
            continue
        try:
            got_ref = logits_of(model)
        except Exception:  # noqa: BLE001 - e.g. is_encoder_decoder plumbing
            got_ref = None
        if normalized(ir, d) == normalized(base_ir, base_dir):
            # Loom builds the same graph: transformers must compute the same
            # logits on the same weights.
            same_weights = all(
                torch.equal(a, b) for a, b in
                zip(base.state_dict().values(), model.state_dict().values())) \
                and base.state_dict().keys() == model.state_dict().keys()
            if got_ref is not None and same_weights:
                assert_close(got_ref, ref, rel=1e-6)
            outcomes[key] = "no change"
            continue
        assert got_ref is not None, (key, saved)
        b = loom.compile(d)
        assert_close(loom.run(b, TOKENS, pos), got_ref, rel=1e-5)
        outcomes[key] = "matches transformers"
    print(family, json.dumps(outcomes, indent=1))


def test_full_config_dict_imports(loom, tmp_path):
    """A config.json holding every key of the class (to_dict(), as some
    tools write it) imports: every key is consumed or known harmless."""
    for family in ("llama", "mistral", "qwen2", "gpt2"):
        d = tmp_path / family
        build(family, {}, d)
        full = config_class(family)(**TINY[family]).to_dict()
        (d / "config.json").write_text(json.dumps(full))
        ir, err = loomc(loom, d)
        assert ir is not None, (family, err)
