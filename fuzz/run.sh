#!/usr/bin/env bash
# Builds the libFuzzer targets of lib/Formats and of the runtime executor's readers
# (manifest.json, .npy) with clang++-22 (ASan + UBSan, directly, not through
# the g++ CMake build) and runs each for N seconds.
#
#   fuzz/run.sh [seconds]          default 20 seconds per target
#   FUZZ_WORK=/tmp/x fuzz/run.sh   where binaries, corpora and crashes go
#   FUZZ_TARGETS="gguf" fuzz/run.sh
#
# tokenizer: lib/Tokenizer's GGUF and tokenizer.json loaders, then encode and
# decode (fuzz/tokenizer_fuzzer.cpp says how the input is split).
#
# Each corpus starts from the small valid files in fuzz/seeds/<target>/.
# A crash leaves crash-* in $FUZZ_WORK/<target>/ and makes the script fail.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_PER_TARGET="${1:-20}"
WORK="${FUZZ_WORK:-/tmp/loom-fuzz}"
TARGETS="${FUZZ_TARGETS:-gguf safetensors hfconfig manifest npy tokenizer}"
CXX="${FUZZ_CXX:-clang++-22}"
mkdir -p "$WORK"

FLAGS=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -fno-exceptions -DJSON_NOEXCEPTION
       -ffp-contract=off -I"$ROOT/include")
# The reader each target links.
sources() {
  case $1 in
    manifest|npy)
      echo "$ROOT/runtime/exec/Manifest.cpp" \
           "$ROOT/runtime/exec/Npy.cpp" ;;
    tokenizer)
      echo "$ROOT"/lib/Tokenizer/*.cpp "$ROOT"/lib/Formats/*.cpp \
           "$ROOT"/lib/Support/*.cpp ;;
    *) echo "$ROOT"/lib/Formats/*.cpp "$ROOT"/lib/Support/*.cpp ;;
  esac
}
# The libraries it links after them.
libs() {
  case $1 in
    tokenizer) echo -lpcre2-8 ;;
  esac
}

status=0
for t in $TARGETS; do
  bin="$WORK/${t}_fuzzer"
  echo "== building $bin"
  # shellcheck disable=SC2046 # word splitting of the source list is wanted
  "$CXX" "${FLAGS[@]}" $(sources "$t") "$ROOT/fuzz/${t}_fuzzer.cpp" \
    $(libs "$t") -o "$bin"
  corpus="$WORK/$t/corpus"
  mkdir -p "$corpus"
  cp -n "$ROOT/fuzz/seeds/$t/"* "$corpus/" 2>/dev/null || true
  echo "== running $t for ${SECONDS_PER_TARGET}s"
  # -rss_limit_mb: a hostile count must never make the reader allocate much.
  if ! (cd "$WORK/$t" && "$bin" -max_total_time="$SECONDS_PER_TARGET" \
        -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        corpus 2>&1 | tee "$WORK/$t/log.txt" | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)"); then
    :
  fi
  if [ -n "$(find "$WORK/$t" -maxdepth 1 -newer "$bin" \( -name 'crash-*' \
        -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' \) )" ]; then
    echo "!! $t: findings in $WORK/$t"
    status=1
  fi
done
exit $status
