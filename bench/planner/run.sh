#!/usr/bin/env bash
# Planner time on one core (docs/BENCHMARKS.md, "Planner time"):
#   bench/planner/run.sh [build-dir]
# Llama-70B-shaped graph (80 layers) on 64 H100s (dp=8 x tp=8), target < 1 s;
# Llama-405B-shaped graph (126 layers) on 16,384 H100s (dp=2048 x tp=8),
# target < 10 s. Prints the planner's own summary (it times itself).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
python3 "$ROOT/bench/planner/make_graph.py" --preset 70b --mesh dp=8,tp=8 \
  --batch 8 --seq 4096 > "$TMP/l70.mlir"
python3 "$ROOT/bench/planner/make_graph.py" --preset 405b --mesh dp=2048,tp=8 \
  --batch 2048 --seq 8192 > "$TMP/l405.mlir"
for g in l70 l405; do
  echo "== $g"
  taskset -c 0 "$BUILD/bin/loom-opt" "$TMP/$g.mlir" \
    --loom-plan-sharding="device=h100-sxm summary=1" -o /dev/null
done
