#!/usr/bin/env bash
# Takes a fresh Debian 12 machine of this project's kind to a working Loom
# build, idempotently: Debian packages, the Python virtual environment for the
# reference checks, then configure + build. A second run only rebuilds what
# changed.
#
#   scripts/setup.sh            packages + venv + build
#   LOOM_SKIP_BUILD=1 scripts/setup.sh   packages + venv only
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${LOOM_BUILD_DIR:-$ROOT/build}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

# --- Debian packages -----------------------------------------------------------
PKGS=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 libclang-rt-22-dev
  cmake ninja-build ccache g++ clang-format
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libgtest-dev libgmock-dev libpcre2-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
  python3-torch
  libopenblas-dev
  python3 python3-venv python3-dev
  chromium
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- Python virtual environment for reference checks ---------------------------
# Debian's python3 with system site packages, so that Debian's CPU-only
# python3-torch (when a later step installs it) is visible without pulling
# gigabytes of CUDA wheels from PyPI.
VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
REQ="$ROOT/python/requirements.txt"
STAMP="$VENV/.requirements.sha"
if [ ! -f "$STAMP" ] || [ "$(sha256sum "$REQ" | cut -d' ' -f1)" != "$(cat "$STAMP")" ]; then
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
  sha256sum "$REQ" | cut -d' ' -f1 > "$STAMP"
fi

[ "${LOOM_SKIP_BUILD:-0}" = 1 ] && exit 0

# --- Configure + build -----------------------------------------------------------
PREFIX="$(llvm-config-22 --prefix)"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DMLIR_DIR="$PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$PREFIX/bin/lit" \
    -DMLIR_LINK_MLIR_DYLIB=ON \
    -DCMAKE_BUILD_TYPE=Release \
    -DPython3_EXECUTABLE="$VENV/bin/python"
fi
cmake --build "$BUILD"
