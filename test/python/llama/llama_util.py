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
