#!/usr/bin/env bash
# Builds the libFuzzer targets of the compiler's user inputs with clang++-22
# and runs each for N seconds (as fuzz/run.sh does for lib/Formats):
#   onnx: bytes -> importOnnx -> verify -> raise phase
#   onnx_struct: the same, with a structure-aware mutator (the input is
#     decoded as a ModelProto and one field of it changed; seeds of onnx)
#   mlir: bytes -> parser guard -> parse -> verify -> raise phase
# The importer and the raise passes are compiled here with ASan + UBSan and
# coverage; the rest (the loom dialect, the pass pipelines, MLIR) is linked
# from the CMake build (BUILD, default <repo>/build: build loomc first).
#
#   fuzz/run-compiler.sh [seconds] [extra libFuzzer flags...]
#   FUZZ_WORK=/tmp/x FUZZ_TARGETS="onnx" fuzz/run-compiler.sh 60 -runs=1000000
#
# Each corpus starts from fuzz/seeds/<target>/ (ONNX: made by
# fuzz/seeds/make_onnx_seeds.py when the onnx package is there).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_PER_TARGET="${1:-20}"
shift || true
WORK="${FUZZ_WORK:-/tmp/loom-fuzz}"
TARGETS="${FUZZ_TARGETS:-onnx onnx_struct mlir}"
CXX="${FUZZ_CXX:-clang++-22}"
BUILD="${BUILD:-$ROOT/build}"
PY="${FUZZ_PYTHON:-$ROOT/.venv/bin/python}"
mkdir -p "$WORK"
PREFIX="$(llvm-config-22 --prefix)"
if [ ! -f "$BUILD/lib/libLoomPasses.a" ]; then
  echo "run-compiler.sh: build the compiler first (ninja -C $BUILD loomc)"
  exit 1
fi

FLAGS=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined
       -fno-sanitize=vptr -fno-sanitize-recover=undefined -fno-rtti
       -DONNX_ML=1 -DONNX_NAMESPACE=onnx -w
       -I"$ROOT" -I"$BUILD" -I"$ROOT/include" -I"$BUILD/include"
       -isystem "$PREFIX/include")
# Instrumented: what a hostile input reaches first.
SOURCES=("$ROOT/lib/Import/OnnxImporter.cpp" "$ROOT/lib/Import/OnnxWire.cpp"
         "$ROOT"/lib/Import/Onnx/*.cpp "$ROOT/lib/Import/ImportFailure.cpp"
         "$ROOT"/passes/Raise/*.cpp)
# Everything else from the CMake build.
LIBS=(-Wl,--start-group "$BUILD"/lib/libLoom*.a "$BUILD"/lib/libloom_cost.a
      "$BUILD"/lib/libloom_quant.a "$BUILD"/lib/libloom_formats.a
      "$BUILD"/lib/libloom_support.a -Wl,--end-group
      -L"$PREFIX/lib" -Wl,-rpath,"$PREFIX/lib" -lMLIR -lLLVM
      -lonnx -lonnx_proto -lprotobuf -lpthread)

# Generated seeds (valid models) once per work dir; fuzz/seeds/onnx/ holds
# the inputs of past findings, replayed by every run.
if [ ! -d "$WORK/onnx-seeds" ] && [ -x "$PY" ]; then
  "$PY" "$ROOT/fuzz/seeds/make_onnx_seeds.py" "$WORK/onnx-seeds" || true
fi

# The instrumented sources are compiled once (objects in $WORK/obj, rebuilt
# when the source or the build's libraries are newer) and shared by both.
mkdir -p "$WORK/obj"
OBJS=()
for src in "${SOURCES[@]}"; do
  obj="$WORK/obj/$(basename "$(dirname "$src")")-$(basename "$src" .cpp).o"
  # Stale when the source or a header it includes (its .d file) is newer.
  if [ ! -f "$obj" ] || [ ! -f "$obj.d" ] || [ -n "$(find $(sed -e 's/^[^:]*://' \
        -e 's/\\$//' "$obj.d") -newer "$obj" -print -quit 2>/dev/null)" ]; then
    echo "== compiling $src"
    "$CXX" "${FLAGS[@]}" -MMD -MF "$obj.d" -c "$src" -o "$obj"
  fi
  OBJS+=("$obj")
done

status=0
for t in $TARGETS; do
  bin="$WORK/${t}_fuzzer"
  if [ ! -x "$bin" ] || [ -n "$(find "$ROOT/fuzz/${t}_fuzzer.cpp" "${OBJS[@]}" \
        "$ROOT/lib/Import/MlirInputGuard.h" "$ROOT/fuzz/OnnxTarget.h" \
        "$BUILD"/lib/lib*.a -newer "$bin" \
        -print -quit)" ]; then
    echo "== building $bin"
    "$CXX" "${FLAGS[@]}" "${OBJS[@]}" "$ROOT/fuzz/${t}_fuzzer.cpp" \
      "${LIBS[@]}" -o "$bin"
  fi
  corpus="$WORK/$t/corpus"
  mkdir -p "$corpus"
  seeds=$t
  [ "$t" = onnx_struct ] && seeds=onnx
  cp -n "$ROOT/fuzz/seeds/$seeds/"* "$corpus/" 2>/dev/null || true
  [ "$seeds" = onnx ] && cp -n "$WORK/onnx-seeds/"* "$corpus/" 2>/dev/null || true
  [ "$t" = mlir ] && find "$ROOT/test/Passes/Raise" "$ROOT/test/Dialect" \
      -name '*.mlir' -size -16k -exec cp -n {} "$corpus/" \; 2>/dev/null || true
  echo "== running $t for ${SECONDS_PER_TARGET}s"
  (cd "$WORK/$t" && "$bin" -max_total_time="$SECONDS_PER_TARGET" \
      -rss_limit_mb=2048 -max_len=65536 -timeout=20 -print_final_stats=1 \
      "$@" corpus 2>&1 | tee "$WORK/$t/log.txt" | \
      grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)") || true
  if [ -n "$(find "$WORK/$t" -maxdepth 1 -newer "$bin" \( -name 'crash-*' \
        -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' \) )" ]; then
    echo "!! $t: findings in $WORK/$t"
    status=1
  fi
done
exit $status
