"""Repeated blocks of an ONNX graph compiled once (loom-outline-repeated-
layers, issue 14): three GPT-2 blocks exported from torch (nothing in the
graph names them as layers) lower to one function called three times, and
the bundle's output equals ONNX Runtime's."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (Debian python3-torch)")
pytest.importorskip("onnxruntime", reason="needs onnxruntime (pip)")
sys.path.insert(0, str(Path(__file__).parent))
import models  # noqa: E402
from test_onnx_import import LOOMC, TOL, loom_vs_ort, run  # noqa: E402


class Blocks(torch.nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.blocks = torch.nn.ModuleList(models.GPT2Block() for _ in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def test_repeated_blocks_outlined(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "blocks.onnx"
    models.export(Blocks(), torch.randn(1, 8, 64), path)
    x = np.random.default_rng(1).standard_normal((1, 8, 64)).astype(np.float32)
    err, _ = loom_vs_ort(tmp_path, path, x)
    assert err <= TOL
    run([LOOMC, path, "--compile-to=lower", "-o", tmp_path / "lowered.mlir"])
    ir = (tmp_path / "lowered.mlir").read_text()
    # One layer function (its parallel-loop bodies, @loom_layer_0_par<N>,
    # are not layers).
    assert len(re.findall(r"llvm\.func internal @loom_layer_\d+\(", ir)) == 1
    # Called once, inside the loop over the 3 blocks that
    # loom-loop-repeated-layers makes (the entry point reads each block's
    # weights from the launcher's argument array: loom.arg_slots).
    assert ir.count("llvm.call @loom_layer_0(") == 1
    assert "loom.arg_slots" in ir
