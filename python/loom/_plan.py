"""loom.Plan: the sharding plan of `loomc --emit=plan` (docs/SHARDING.md)
as a Python object, drawn for Jupyter as `loomc --emit=plan-html` draws it."""

from __future__ import annotations

import json
import os
from typing import Any

from ._loom import plan_html as _plan_html


class Plan:
    """The planner's decision for every function of the model: per-op
    shardings (strategies), the collectives it costs, memory per device and
    the predicted step time. `to_json()` is byte for byte the file that
    `loomc --emit=plan -o plan.json` writes for the same model and flags."""

    def __init__(self, text: str):
        self._text = text
        self.data: dict[str, Any] = json.loads(text)

    def to_json(self) -> str:
        """The plan JSON, as `loomc --emit=plan` writes it."""
        return self._text

    @property
    def mesh(self) -> str:
        """The mesh and its links, e.g. "cpu: tp=2 (shm 10.1 GB/s, 1.0 us)"."""
        return self.data["mesh"]

    @property
    def device(self) -> str:
        return self.data["device"]

    @property
    def functions(self) -> list[dict[str, Any]]:
        """One dict per planned function (name, ops, collectives, memory)."""
        return self.data["functions"]

    @property
    def ops(self) -> list[dict[str, Any]]:
        """Every op's chosen sharding: op, loc, operands, results, time_s
        (each with its function's name under "function")."""
        return [dict(op, function=f["name"]) for f in self.functions
                for op in f["ops"]]

    @property
    def collectives(self) -> list[dict[str, Any]]:
        """The collectives the plan implies: kind, axes, bytes, time_s, at."""
        return [dict(c, function=f["name"]) for f in self.functions
                for c in f["collectives"]]

    @property
    def memory_per_device(self) -> dict[str, dict[str, int]]:
        """Bytes per device of each function: weights, inputs, kv_cache,
        total, unsplit."""
        return {f["name"]: f["memory_per_device_bytes"] for f in self.functions}

    @property
    def predicted_time_s(self) -> dict[str, float]:
        """Predicted seconds of one call of each function."""
        return {f["name"]: f["predicted_step_time_s"] for f in self.functions}

    def __repr__(self) -> str:
        fns = ", ".join(f"@{f['name']}: {len(f['ops'])} ops, "
                        f"{f['predicted_step_time_s'] * 1e3:.4g} ms"
                        for f in self.functions)
        return f"<loom.Plan {self.mesh}; {fns}>"

    def to_html(self, trace: str | os.PathLike | None = None) -> str:
        """The plan drawn as one self-contained HTML page (inline CSS and
        SVG: mesh, stages, memory per device, predicted schedule,
        collectives), byte for byte what `loomc PLAN.json
        --emit=plan-html` writes for this plan (the same C++ renderer,
        docs/PLAN-HTML.md). `trace`: a Chrome trace of a run (`loom-run
        --trace`; per-rank files PATH.0, PATH.1, ... are read together),
        drawn as the measured schedule beside the prediction
        (`--trace-overlay`)."""
        return _plan_html(self._text,
                          None if trace is None else os.fspath(trace))

    def _repr_html_(self) -> str:
        """Jupyter's rich view: the picture of `to_html()`."""
        return self.to_html()
