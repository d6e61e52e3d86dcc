#!/usr/bin/env python3
"""The custom sharding pass of examples/sharding-plugin (a C++ MLIR pass
plugin) as a Python sharding rule: every loom.attention is pinned to
heads-only sharding on one mesh axis (query, key and value resharded to
split the head dimension, the results annotated the same way); the planner
keeps that and chooses everything else. It gives the same plan as

    loomc MODEL --plugin build/lib/LoomPinAttentionHeads.so \\
      --shard-passes='loom-pin-attention-heads{axis=tp}' --emit=plan -o plan.json

(test/python/package/test_sharding_rules.py checks it). Usage:

    PYTHONPATH=build/python .venv/bin/python examples/python/pin_attention_heads.py \\
        model.gguf --mesh tp=2 -o plan.json
"""

import argparse
import functools

import loom


def pin_attention_heads(op: loom.Op, axis: str = "tp"):
    """[B, H, S, D] split on H for q, k, v and the result of attention."""
    if op.name != "loom.attention":
        return None
    heads = [None, axis, None, None]
    n = min(3, len(op.operands))
    return loom.Pin(operands={i: heads for i in range(n)},
                    results=[heads] * len(op.results))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--mesh", default="tp=2")
    ap.add_argument("--axis", default="tp")
    ap.add_argument("-o", "--output", help="write the plan JSON here")
    args = ap.parse_args()
    rule = functools.partial(pin_attention_heads, axis=args.axis)
    plan = loom.plan(args.model, mesh=args.mesh, sharding_rules=[rule])
    print(plan)
    if args.output:
        with open(args.output, "w") as f:
            f.write(plan.to_json())


if __name__ == "__main__":
    main()
