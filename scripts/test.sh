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
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" "$@"
