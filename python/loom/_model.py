"""Models given to loom.compile / loom.plan / loom.ir: a path, or an ONNX
model in memory (an onnx.ModelProto, its serialised bytes, or a
torch.nn.Module exported with example inputs), written to a file because
the compiled bundle reads the weights from it in place."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, Sequence

#: What loom.compile, loom.plan and loom.ir accept as a model.
ModelLike = Any


def mesh_spec(mesh: str | dict | os.PathLike | None) -> str:
    """"tp=2", {"dp": 2, "tp": 4} -> "dp=2,tp=4", or a .json spec file."""
    if mesh is None:
        return ""
    if isinstance(mesh, dict):
        return ",".join(f"{k}={int(v)}" for k, v in mesh.items())
    return os.fspath(mesh)


def onnx_bytes(model: Any, example_inputs: Sequence[Any] | None) -> bytes | None:
    """The serialised ONNX of an in-memory model, None for a path."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if hasattr(model, "SerializeToString"):  # onnx.ModelProto
        return model.SerializeToString()
    try:  # an optional dependency (only for a torch.nn.Module)
        import torch  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    if isinstance(model, torch.nn.Module):
        if example_inputs is None:
            raise TypeError("a torch.nn.Module needs example_inputs=(...) "
                            "to be exported to ONNX")
        if isinstance(example_inputs, torch.Tensor):
            example_inputs = (example_inputs,)
        buf = io.BytesIO()
        torch.onnx.export(model.eval(), tuple(example_inputs), buf,
                          opset_version=17, do_constant_folding=True)
        return buf.getvalue()
    return None


def model_path(model: ModelLike, where: Path,
               example_inputs: Sequence[Any] | None = None) -> str:
    """A path the compiler reads: `model` itself, or the in-memory model
    written to `where` (which must outlive a bundle compiled from it)."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    data = onnx_bytes(model, example_inputs)
    if data is None:
        raise TypeError(
            f"model: expected a path (.onnx, .gguf, .mlir, a Hugging Face "
            f"folder), an onnx.ModelProto, ONNX bytes or a torch.nn.Module; "
            f"got {type(model).__name__}")
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_bytes(data)
    return str(where)
