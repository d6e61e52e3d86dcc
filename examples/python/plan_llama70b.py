#!/usr/bin/env python3
"""Plans Llama-3-70B from its published config.json alone (no weights:
test/python/cfgplan/configs/llama-3-70b) on 64 H100s (dp=8 x tp=8)
without compiling it, and writes the plan as JSON (loomc --emit=plan) and
as the picture a notebook shows (Plan.to_html(), loomc --emit=plan-html).

    PYTHONPATH=build/python .venv/bin/python examples/python/plan_llama70b.py [out-dir]
"""

import sys
import tempfile
import time
from pathlib import Path

import loom

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "test/python/cfgplan/configs/llama-3-70b"


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    plan = loom.plan(CONFIG, mesh="dp=8,tp=8", device="h100-sxm")
    print(f"planned in {time.perf_counter() - t:.2f} s: {plan}")
    for name, mem in plan.memory_per_device.items():
        print(f"  @{name}: {mem['total'] / 2**30:.2f} GiB per device "
              f"(unsplit {mem['unsplit'] / 2**30:.1f} GiB), predicted step "
              f"{plan.predicted_time_s[name] * 1e3:.1f} ms")
    kinds = {}
    for c in plan.collectives:
        key = (c["function"], c["kind"], ",".join(c["axes"]))
        kinds[key] = kinds.get(key, 0) + 1
    for (fn, kind, axes), n in sorted(kinds.items()):
        print(f"  @{fn}: {n} x {kind} on {{{axes}}}")
    (out / "plan.json").write_text(plan.to_json())
    (out / "plan.html").write_text(plan.to_html())
    print(f"wrote {out / 'plan.json'} and {out / 'plan.html'}")


if __name__ == "__main__":
    main()
