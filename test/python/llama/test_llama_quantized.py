"""Quantized GGUF llama models (Q4_0, Q4_1, Q8_0 blocks kept as they are)
compiled and run on CPU ranks: the logits equal the reference forward pass
on the weights that the `gguf` package dequantizes from the same file."""
import sys
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
sys.path.insert(0, str(Path(__file__).parent))
import llama_models as lm  # noqa: E402
from llama_util import assert_close  # noqa: E402

TOKENS = np.array([[5, 17, 3, 90, 44, 2, 8, 61, 33]], dtype=np.int64)
POSITIONS = np.arange(TOKENS.shape[1], dtype=np.int64)


@pytest.mark.parametrize("ttype", ["q4_0", "q4_1", "q8_0"])
@pytest.mark.parametrize("tied", [True, False])
def test_quantized_logits(tmp_path, loom, ttype, tied):
    cfg = lm.tiny_config("llama", tied=tied, layers=2)
    w = lm.make_weights(cfg)
    path = lm.write_gguf(tmp_path / f"llama-{ttype}.gguf", cfg, w, ttype,
                         arch="llama")
    logits = loom.run(loom.compile(path), TOKENS, POSITIONS)
    ref = lm.llama_forward_gguf(cfg, lm.read_gguf_weights(path), TOKENS,
                                POSITIONS, arch="llama")
    # Dequantisation is exact (f16 scales, integer codes): only the f32
    # arithmetic order differs from numpy.
    assert_close(logits, ref)
