"""loom.Plan: the sharding plan of `loomc --emit=plan` (docs/SHARDING.md)
as a Python object, with a table for Jupyter."""

from __future__ import annotations

import html
import json
from typing import Any


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

    def _repr_html_(self) -> str:
        e = html.escape
        out = [f"<p><b>Plan</b> on {e(self.mesh)} ({e(self.device)})</p>"]
        for f in self.functions:
            mem = f["memory_per_device_bytes"]
            out.append(
                f"<p>@{e(f['name'])}: predicted "
                f"{f['predicted_step_time_s'] * 1e3:.4g} ms (compute "
                f"{f['compute_time_s'] * 1e3:.4g} ms, communication "
                f"{f['communication_time_s'] * 1e3:.4g} ms); memory per "
                f"device {mem['total'] / 2**20:.2f} MiB (unsplit "
                f"{mem['unsplit'] / 2**20:.2f} MiB)</p>")
            rows = "".join(
                f"<tr><td>{e(o['op'])}</td><td>{e(', '.join(o['operands']))}"
                f"</td><td>{e(', '.join(o['results']))}</td>"
                f"<td>{o['time_s'] * 1e3:.4g}</td><td>{e(o['loc'])}</td></tr>"
                for o in f["ops"])
            out.append("<table><tr><th>op</th><th>operands</th>"
                       "<th>results</th><th>ms</th><th>location</th></tr>"
                       f"{rows}</table>")
            if f["collectives"]:
                rows = "".join(
                    f"<tr><td>{e(c['kind'])}</td><td>{e(','.join(c['axes']))}"
                    f"</td><td>{c['bytes']}</td><td>{c['time_s'] * 1e3:.4g}"
                    f"</td><td>{e(c['at'])}</td></tr>"
                    for c in f["collectives"])
                out.append("<table><tr><th>collective</th><th>axes</th>"
                           "<th>bytes</th><th>ms</th><th>at</th></tr>"
                           f"{rows}</table>")
        return "\n".join(out)
