"""loom-inspect on config.json samples of each supported family."""

import json

import pytest

SAMPLES = {
    "llama": ({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
               "hidden_size": 576, "num_hidden_layers": 30,
               "num_attention_heads": 9, "num_key_value_heads": 3,
               "intermediate_size": 1536, "vocab_size": 49152,
               "rms_norm_eps": 1e-05, "rope_theta": 100000,
               "tie_word_embeddings": True,
               "max_position_embeddings": 8192},
              {"head_dim": 64, "num_kv_heads": 3, "norm": "rms"}),
    "mistral": ({"model_type": "mistral", "hidden_size": 4096,
                 "num_hidden_layers": 32, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "intermediate_size": 14336,
                 "vocab_size": 32000, "sliding_window": 4096},
                {"head_dim": 128, "sliding_window": 4096}),
    "qwen2": ({"model_type": "qwen2", "hidden_size": 896,
               "num_hidden_layers": 24, "num_attention_heads": 14,
               "num_key_value_heads": 2, "intermediate_size": 4864,
               "vocab_size": 151936, "rope_theta": 1000000.0},
              {"head_dim": 64, "attention_bias": True}),
    "gpt2": ({"model_type": "gpt2", "n_embd": 768, "n_layer": 12,
              "n_head": 12, "n_positions": 1024, "vocab_size": 50257,
              "layer_norm_epsilon": 1e-05},
             {"head_dim": 64, "intermediate_size": 3072, "norm": "layer",
              "max_position_embeddings": 1024}),
}


@pytest.mark.parametrize("family", sorted(SAMPLES))
def test_family(family, tmp_path, inspect):
    config, expected = SAMPLES[family]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = inspect(path)
    assert out["model_type"] == family
    for k, v in expected.items():
        assert out[k] == v, k


def test_unknown_model_type(tmp_path, inspect_fails):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "bert", "hidden_size": 768}))
    assert "model type 'bert' is not supported" in inspect_fails(path)
