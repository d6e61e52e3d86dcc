#!/usr/bin/env bash
# Never a crash, whatever the input: every IR file of the test suite and the
# examples, and every ONNX model of ONNX's own backend test data (the onnx
# wheel's pytorch-operator, pytorch-converted, simple and node folders),
# through loomc's phases (each --compile-to up to lower; quantize with
# --quant int8:32; shard on tp=2). Each may be refused (exit 1); a signal, an
# assertion or a stack dump fails the test. planner-no-crash does the same
# for the sharding passes alone.
#
# Also the models the pytest suites build at test time (no binary is
# committed): test/python/llama/llama_models.py's GGUF files (f32, f16,
# q4_0, q4_1, q8_0; llama, qwen2, mistral; tied and untied; truncated, an
# unknown architecture, a Q4_K tensor, a missing tensor, wrong metadata) and
# Hugging Face checkpoints (f32, f16, bf16; llama, qwen2, mistral, gpt2;
# sharded; an unknown model_type, a wrong shape), written into the
# temporary folder first.
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
# The pytest suites' generated models (a GGUF file or a checkpoint folder
# each), in $tmp/models.
models() {
  local gen="$ROOT/test/python/llama/llama_models.py" m="$tmp/models"
  mkdir -p "$m"
  gg() { # name, args...
    local n="$1"
    shift
    "$PY" "$gen" gguf "$m/$n.gguf" "$@" > /dev/null 2>&1 || echo "warning: could not write $n.gguf" >&2
  }
  hf() {
    local n="$1"
    shift
    "$PY" "$gen" hf "$m/$n" "$@" > /dev/null 2>&1 || echo "warning: could not write $n" >&2
  }
  for t in f32 f16 q4_0 q4_1 q8_0; do gg "llama-$t" --type "$t"; done
  gg qwen2 --arch qwen2
  gg mistral --arch mistral --type q8_0
  gg untied --untied --type q4_0
  gg one-layer --layers 1 --vocab 40
  for b in truncated arch q4_k missing; do gg "bad-$b" --bad "$b"; done
  gg bad-rope --meta theta=0
  gg bad-ctx --meta context=0
  gg bad-heads --meta heads=3
  for d in f32 f16 bf16; do hf "hf-llama-$d" --dtype "$d"; done
  hf hf-qwen2 --family qwen2
  hf hf-mistral --family mistral --dtype bf16
  hf hf-gpt2 --family gpt2
  hf hf-untied --untied --sharded
  for b in model_type shape; do hf "hf-bad-$b" --bad "$b"; done
  find "$m" -maxdepth 1 -mindepth 1 | sort
}
inputs() {
  find "$ROOT/test" "$ROOT/examples" -name '*.mlir' | sort
  models
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
  if [ "${LOOM_NO_CRASH_FULL:-0}" = 0 ] && [[ "$f" != *.mlir ]]; then
    phases=lower
  fi
  for phase in $phases; do
    check "$f" --compile-to=$phase --mesh tp=2
  done
  check "$f" --compile-to=quantize --quant int8:32
done < <(inputs)
echo "$n runs, crashes: $fail"
exit $fail
