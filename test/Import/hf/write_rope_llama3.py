"""Writes the tiny llama of the importer tests with Llama 3.1's rope_scaling
(original_max_position_embeddings 64, so that the 8 frequencies fall in all
three bands). Usage: write_rope_llama3.py <test/python/llama> <out dir>."""
import sys

sys.path.insert(0, sys.argv[1])
import llama_models as lm  # noqa: E402

cfg = lm.tiny_config("llama")
lm.write_hf(sys.argv[2], cfg, lm.make_weights(cfg), config_overrides={
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 64}})
