#!/usr/bin/env bash
# Counts the ops of dialects/Loom/IR/LoomOps.td that have a FileCheck
# lowering case: the op is used in the IR (not a comment or CHECK line) of a
# lit test whose RUN line runs the lowering. Prints the count and the ops
# without one (issue 11, item 8).
#
#   scripts/lowering-coverage.sh [source dir]
set -euo pipefail
cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}"
ops=$(grep -oE '^def Loom_\w+Op : Loom_\w+<"[a-z_0-9]+"' \
        dialects/Loom/IR/LoomOps.td | sed -E 's/.*"(.*)"/\1/' | sort)
files=$(grep -lE 'RUN:.*(loom-convert-loom-to-linalg|loom-lower-pipeline|loom-bufferize|--compile-to=lower|--emit=)' \
          -r test --include=*.mlir)
ir=$(cat $files | grep -vE '^\s*//')
with=0 total=0 without=""
for op in $ops; do
  total=$((total + 1))
  if grep -qE "loom\.$op\b" <<<"$ir"; then with=$((with + 1))
  else without="$without $op"; fi
done
echo "ops: $total, with a lowering test: $with, without:${without:- none}"
