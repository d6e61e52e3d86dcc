"""Helpers of the llama tests (not in conftest.py: the test folders' conftest
modules would shadow each other when imported by name)."""
import re

import numpy as np


def entry_ir(ir: str, name: str = "forward") -> str:
    """The text of one function of an imported module."""
    start = ir.index(f"func.func @{name}(")
    end = ir.find("func.func @", start + 1)
    return ir[start:end if end >= 0 else len(ir)]


def assert_close(got, ref, rel=1e-4):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    err = np.abs(got - ref).max()
    scale = np.abs(ref).max()
    assert err <= rel * scale, f"max abs err {err:.3g} > {rel} x max|ref| {scale:.3g}"
    return err / scale


CTX = 16  # the KV cache's context length in these tests


def kv_state(cache, layers, n, ctx=CTX):
    """The reference cache of the first n positions as @decode's initial
    state: [1, Hkv, ctx, Dh] per layer, zero after row n."""
    state = {}
    for l in range(layers):
        for kv, c in (("key", cache[2 * l]), ("value", cache[2 * l + 1])):
            s = np.zeros(c.shape[:2] + (ctx,) + c.shape[3:], dtype=np.float32)
            s[:, :, :n] = c[:, :, :n]
            state[f"cache_{kv}_{l}"] = s
    return state


def check_state(res, cache, layers, n):
    """The caches loom-run wrote after a call hold the reference keys and
    values (after rotary, in the file's row order) of positions [0, n) and
    zeros after."""
    for l in range(layers):
        for kv, c in (("key", cache[2 * l]), ("value", cache[2 * l + 1])):
            got = np.load(res / f"cache_{kv}_{l}.rank0.npy")
            assert got.shape[2] == CTX
            assert_close(got[:, :, :n], c[:, :, :n])
            assert not got[:, :, n:].any()
