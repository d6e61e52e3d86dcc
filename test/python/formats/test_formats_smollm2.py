"""The real model: SmolLM2-135M-Instruct (Q4_1 GGUF) against GGUFReader."""

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from refcheck import compare_gguf, same_bits  # noqa: E402


def test_every_tensor_and_key(smollm2, inspect):
    loom = inspect(smollm2)
    reader = gguf.GGUFReader(str(smollm2))
    # Checksums are recomputed in Python for the small tensors only.
    compare_gguf(smollm2, reader, loom, checksum_limit=64 << 10)
    meta = loom["metadata"]
    assert meta["general.architecture"]["value"] == "llama"
    assert meta["llama.embedding_length"]["value"] == 576
    assert meta["llama.block_count"]["value"] == 30
    assert meta["llama.attention.head_count"]["value"] == 9
    assert meta["llama.attention.head_count_kv"]["value"] == 3
    assert meta["llama.feed_forward_length"]["value"] == 1536
    assert meta["tokenizer.ggml.tokens"]["count"] == 49152


def test_dequantize_bit_exact(smollm2, dequant):
    reader = gguf.GGUFReader(str(smollm2))
    seen = set()
    for t in reader.tensors:
        # One tensor of each type, plus the first layer's attention.
        if t.tensor_type in seen and not t.name.startswith("blk.0.attn_q"):
            continue
        seen.add(t.tensor_type)
        ref = gguf.quants.dequantize(t.data, t.tensor_type)
        mine = dequant(smollm2, t.name)
        assert same_bits(mine, ref.reshape(mine.shape)), t.name
