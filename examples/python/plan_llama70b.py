#!/usr/bin/env python3
"""Plans a Llama-3-70B-shaped model (80 layers, d=8192, GQA 64/8 heads;
bench/planner/make_graph.py) on 64 H100s (dp=8 x tp=8) without compiling
it, and writes the plan as JSON and as the HTML table a notebook shows.

    PYTHONPATH=build/python .venv/bin/python examples/python/plan_llama70b.py [out-dir]
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import loom

ROOT = Path(__file__).resolve().parents[2]


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    graph = out / "llama70b.mlir"
    graph.write_text(subprocess.run(
        [sys.executable, str(ROOT / "bench/planner/make_graph.py"),
         "--preset", "70b", "--mesh", "dp=8,tp=8", "--batch", "8",
         "--seq", "4096"], check=True, capture_output=True, text=True).stdout)
    t = time.perf_counter()
    plan = loom.plan(graph, device="h100-sxm")
    print(f"planned in {time.perf_counter() - t:.2f} s: {plan}")
    for name, mem in plan.memory_per_device.items():
        print(f"  @{name}: {mem['total'] / 2**30:.1f} GiB per device "
              f"(unsplit {mem['unsplit'] / 2**30:.1f} GiB), predicted step "
              f"{plan.predicted_time_s[name] * 1e3:.1f} ms")
    kinds = {}
    for c in plan.collectives:
        kinds[c["kind"], ",".join(c["axes"])] = kinds.get(
            (c["kind"], ",".join(c["axes"])), 0) + 1
    for (kind, axes), n in sorted(kinds.items()):
        print(f"  {n} x {kind} on {{{axes}}}")
    (out / "plan.json").write_text(plan.to_json())
    (out / "plan.html").write_text(plan._repr_html_())
    print(f"wrote {out / 'plan.json'} and {out / 'plan.html'}")


if __name__ == "__main__":
    main()
