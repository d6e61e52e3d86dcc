#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the whole test suite:
# lit + FileCheck IR tests, GoogleTest units, pytest reference checks, all
# registered with CTest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${LOOM_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh"
# The runtime never includes llvm/ or mlir/ headers.
if git -C "$ROOT" grep -nE '#\s*include\s*[<"](llvm|mlir)/' -- runtime include/loom/runtime; then
  echo "error: the runtime must not include llvm/ or mlir/ headers (see above)" >&2
  exit 1
fi
# The layering (docs/ARCHITECTURE.md): nothing under lib/ includes passes/
# (driver/ is the one library above both), and code generation never reads
# the environment (targets are data: pass options and #loom.cpu_target).
if git -C "$ROOT" grep -nE '#\s*include\s*[<"]passes/' -- lib; then
  echo "error: lib/ must not include passes/ (see above); driver/ is the layer above both" >&2
  exit 1
fi
if git -C "$ROOT" grep -nE '\bgetenv\s*\(' -- passes lib/Target; then
  echo "error: passes/ and lib/Target must not read the environment (see above): make it a pass option or a target attribute" >&2
  exit 1
fi
# Every C/C++ file is in the project's clang-format style (.clang-format:
# LLVM). Fix with: git ls-files '*.cpp' '*.h' '*.c' | xargs clang-format -i
mapfile -t cxx < <(git -C "$ROOT" ls-files -- '*.cpp' '*.h' '*.hpp' '*.c' '*.cc' '*.cu')
fmt="$(cd "$ROOT" && clang-format --dry-run --Werror "${cxx[@]}" 2>&1 || true)"
if [ -n "$fmt" ]; then
  printf '%s\n' "$fmt" | head -20 >&2
  echo "error: files above are not clang-formatted; run: git ls-files '*.cpp' '*.h' '*.c' | xargs clang-format -i" >&2
  exit 1
fi
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" "$@"
