#!/usr/bin/env bash
# Never a crash, whatever the input: every IR file of the test suite and the
# examples, and every ONNX model of ONNX's own backend test data (the onnx
# wheel's pytorch-operator, pytorch-converted, simple and node folders),
# through loomc's phases (each --compile-to up to lower; quantize with
# --quant int8:32; shard on tp=2). Each may be refused (exit 1); a signal, an
# assertion or a stack dump fails the test. planner-no-crash does the same
# for the sharding passes alone.
#
# CI (ctest -R compiler-no-crash) runs a deterministic subset: every .mlir at
# every phase, every ONNX model at lower and quantize only (lower runs the
# passes of import, raise, shard and partition too; the per-phase runs add
# only the printing of each intermediate module). The whole sweep, every
# input at every phase (about 1,100 loomc runs, 6 minutes on 2 busy cores):
#   LOOM_NO_CRASH_FULL=1 no-crash-phases.sh <loomc> <source root> [python]
#   no-crash-phases.sh <loomc> <source root> [python]
set -u
LOOMC="$1"
ROOT="$2"
PY="${3:-python3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
check() { # file, args...
  local f="$1"
  shift
  out=$(timeout 120 "$LOOMC" "$f" "$@" -o "$tmp/out" 2>&1)
  rc=$?
  n=$((n + 1))
  if [ $rc -gt 1 ] || grep -q "Stack dump\|Assertion\|Segmentation\|PLEASE submit" <<<"$out"; then
    echo "CRASH (exit $rc) on $f with $*:"
    head -5 <<<"$out"
    fail=1
  fi
  rm -rf "$tmp/out" "$tmp/out.qweights"*
}
inputs() {
  find "$ROOT/test" "$ROOT/examples" -name '*.mlir' | sort
  data=$("$PY" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data"))' 2>/dev/null)
  if [ -n "$data" ] && [ -d "$data" ]; then
    find "$data/pytorch-operator" "$data/pytorch-converted" "$data/simple" \
      -name model.onnx | sort
    # A sample of the node tests (one op each): every 7th keeps it short.
    [ -d "$data/node" ] && find "$data/node" -name model.onnx | sort | awk 'NR % 7 == 0'
  fi
}
while IFS= read -r f; do
  phases="import raise shard partition lower"
  if [ "${LOOM_NO_CRASH_FULL:-0}" = 0 ] && [ "${f%.onnx}" != "$f" ]; then
    phases=lower
  fi
  for phase in $phases; do
    check "$f" --compile-to=$phase --mesh tp=2
  done
  check "$f" --compile-to=quantize --quant int8:32
done < <(inputs)
echo "$n runs, crashes: $fail"
exit $fail
