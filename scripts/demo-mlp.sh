#!/usr/bin/env bash
# The first demo (before text generation): set everything up, make a model
# locally, compile it with loomc and run it with loom-run on CPU ranks
# (4 in-process thread ranks, then 2 MPI processes), checking the result
# against numpy.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${LOOM_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh"
PY="$ROOT/.venv/bin/python"
WORK="${LOOM_DEMO_DIR:-$ROOT/out/demo}"
rm -rf "$WORK"

echo "== 1. make the model (4 data-parallel ranks) in $WORK"
"$PY" "$ROOT/examples/mlp/make_model.py" "$WORK" --ranks 4
echo "== 2. compile: loomc $WORK/mlp.mlir -o $WORK/bundle"
"$BUILD/bin/loomc" "$WORK/mlp.mlir" -o "$WORK/bundle"
echo "== 3. run on 4 thread ranks"
mkdir -p "$WORK/res"
"$BUILD/bin/loom-run" "$WORK/bundle" --input "x=$WORK/x{rank}.npy" \
  --output "$WORK/res" --bench
"$PY" "$ROOT/examples/mlp/check.py" "$WORK/res/y.npy" "$WORK/reference.npy"

echo "== 4. the single-device program, planned and partitioned for tp=4"
"$BUILD/bin/loomc" "$WORK/mlp-plain.mlir" --mesh tp=4 --emit=plan -o "$WORK/plan.json"
"$BUILD/bin/loomc" "$WORK/mlp-plain.mlir" --mesh tp=4 -o "$WORK/planned"
mkdir -p "$WORK/planned-res"
"$BUILD/bin/loom-run" "$WORK/planned" --input "x=$WORK/x.npy" \
  --output "$WORK/planned-res"
"$PY" "$ROOT/examples/mlp/check.py" "$WORK/planned-res/y.npy" "$WORK/reference.npy"

if command -v mpirun >/dev/null; then
  echo "== 5. the same model on 2 MPI processes"
  "$PY" "$ROOT/examples/mlp/make_model.py" "$WORK/mpi" --ranks 2 --rows-per-rank 16
  "$BUILD/bin/loomc" "$WORK/mpi/mlp.mlir" -o "$WORK/mpi/bundle"
  mkdir -p "$WORK/mpi/res"
  mpirun --allow-run-as-root --oversubscribe -np 2 "$BUILD/bin/loom-run" \
    "$WORK/mpi/bundle" --input "x=$WORK/mpi/x{rank}.npy" --output "$WORK/mpi/res"
  "$PY" "$ROOT/examples/mlp/check.py" "$WORK/mpi/res/y.npy" "$WORK/mpi/reference.npy"
fi
echo "demo: OK"
