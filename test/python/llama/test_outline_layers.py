"""Repeated layers compiled once (loom-outline-repeated-layers, issue 14).

The bundle's code does not grow with the layer count: tiny llama models
(Q4_1 GGUF) with 4 and 16 layers compile to one function per distinct layer
of `forward` and of `decode`, called in one loop over the layers, so the
16-layer library is no larger than the 4-layer one (a page of slack; the
unrolled program, `loomc --no-outline-layers`, adds 24 layer bodies). The 16-layer
model's `forward` logits and its `decode` steps with the in-place KV cache
equal the float64 numpy reference on what the file holds.
"""
import subprocess

import numpy as np
import pytest

import llama_models as lm  # noqa: E402
from llama_util import assert_close  # noqa: E402

gguf = pytest.importorskip("gguf")

SEQ = np.array([[5, 17, 3, 90, 44, 2, 8, 61, 33, 7, 70]], dtype=np.int64)
PROMPT = 9


def _model(tmp_path, layers):
    cfg = lm.tiny_config("llama", layers=layers)
    w = lm.make_weights(cfg, seed=5)
    path = lm.write_gguf(tmp_path / f"l{layers}.gguf", cfg, w, "q4_1",
                         arch="llama")
    return cfg, path


def _compile(loom, model, *flags):
    bundle = loom._fresh("bundle")
    r = subprocess.run([str(loom.loomc), str(model), "-o", str(bundle),
                        *flags], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return bundle


def _library_size(bundle):
    (lib,) = bundle.glob("*.so")
    return lib.stat().st_size


def test_library_size_independent_of_layers(tmp_path, loom):
    _, m4 = _model(tmp_path, 4)
    _, m16 = _model(tmp_path, 16)
    s4 = _library_size(_compile(loom, m4))
    s16 = _library_size(_compile(loom, m16))
    i4 = _library_size(_compile(loom, m4, "--no-outline-layers"))
    i16 = _library_size(_compile(loom, m16, "--no-outline-layers"))
    # Outlined, each entry point calls its layer function in one loop over
    # the layer index (loom-loop-repeated-layers), so 12 more layers add no
    # code (108,888 bytes for both on 2026-12-01; 24 calls, 24.5 KB, before
    # the loop); unrolled, they add 24 layer bodies.
    assert s16 - s4 <= 0.1 * (i16 - i4), (s4, s16, i4, i16)
    assert s16 - s4 <= 4 * 1024, (s4, s16)
    assert 2 * s16 < i16, (s16, i16)


def test_sixteen_layers_match_reference(tmp_path, loom):
    cfg, path = _model(tmp_path, 16)
    ref = lm.llama_forward_gguf(cfg, lm.read_gguf_weights(path), SEQ,
                                np.arange(SEQ.shape[1]), arch="llama")
    bundle = _compile(loom, path)
    pos = np.arange(SEQ.shape[1], dtype=np.int64)
    logits = loom.run(bundle, SEQ[:, :PROMPT], pos[:PROMPT])
    assert_close(logits, ref[:, :PROMPT])
    # Prefill and two steps through decode: the caches written in place by
    # the layer function are read back by the next call.
    out, state = loom.decode(bundle, SEQ[:, :PROMPT], pos[:PROMPT], ctx=16)
    assert_close(out, ref[:, PROMPT - 1])
    for i in range(PROMPT, SEQ.shape[1]):
        out, state = loom.decode(bundle, SEQ[:, i:i + 1], pos[i:i + 1],
                                 state=state)
        assert_close(out, ref[:, i])
