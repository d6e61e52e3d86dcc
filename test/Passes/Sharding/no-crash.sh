#!/usr/bin/env bash
# Never a crash on any verifier-valid input: the planner, the pipeline
# stages and the partitioner run on every IR file of the test suite and the
# examples, on a 1-D, a 2-D and a pipelined mesh. Each input may be refused with a diagnostic (exit 1); a signal,
# an assertion or a stack dump fails the test.
#   no-crash.sh <loom-opt> <source root>
set -u
OPT="$1"
ROOT="$2"
fail=0
n=0
while IFS= read -r f; do
  for mesh in "tp=2" "dp=2,tp=2" "pp=2,tp=2"; do
    out=$("$OPT" "$f" --split-input-file --loom-plan-sharding="mesh=$mesh" \
          --loom-assign-stages --loom-split-stages \
          --loom-insert-explicit-reshards --loom-partition -o /dev/null 2>&1)
    rc=$?
    n=$((n + 1))
    if [ $rc -gt 1 ] || grep -q "Stack dump\|Assertion\|Segmentation" <<<"$out"; then
      echo "CRASH (exit $rc) on $f with mesh $mesh:"
      head -5 <<<"$out"
      fail=1
    fi
  done
done < <(find "$ROOT/test" "$ROOT/examples" -name '*.mlir' | sort)
echo "$n runs, crashes: $fail"
exit $fail
