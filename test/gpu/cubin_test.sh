#!/usr/bin/env bash
# Compiles the qmatmul kernels of every weight format to a cubin for one
# chip with ptxas, and checks each cubin's ELF header (EM_CUDA, the SM) and
# kernel symbols. Exit 77 (skipped) without ptxas.
# usage: cubin_test.sh <loom-gpu-kernels> <sm_80|sm_90> <out-dir>
set -euo pipefail
tool=$1 chip=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
if [[ -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/ptxas" ]]; then
  export PATH="$PATH:$CUDA_HOME/bin"
fi
if ! command -v ptxas >/dev/null; then
  echo "SKIP: ptxas not found (install the CUDA toolkit or set CUDA_HOME)"
  exit 77
fi
mkdir -p "$out"
sm=${chip#sm_}
# format / extra flags: the GGUF blocks and Loom's int4/int8 variants.
specs=(
  "q4_0|--act=f32"
  "q4_1|--act=f16"
  "q8_0|--act=f32"
  "int4|--block=128 --mode=symmetric --scale=f16 --act=f16"
  "int4|--block=64 --mode=min --scale=bf16 --act=f32"
  "int8|--block=32 --mode=symmetric --scale=f32 --act=f16"
)
for spec in "${specs[@]}"; do
  fmt=${spec%%|*} flags=${spec#*|}
  # shellcheck disable=SC2086
  base=$("$tool" --format="$fmt" $flags --n=96 --k=256 --list |
         sed -n 's/.*"base": "\([^"]*\)".*/\1/p')
  file="$out/$base.$chip.cubin"
  # shellcheck disable=SC2086
  "$tool" --format="$fmt" $flags --n=96 --k=256 --emit=cubin --chip="$chip" \
    -o "$file.tmp"
  mv "$file.tmp" "$file" # whole files only: gpu.runtime.* reads them too
  kernels=${base}_tiled
  for b in 1 2 3 4 5 6 7 8; do kernels+=",${base}_gemv$b"; done
  python3 "$here/check_cubin.py" --sm "$sm" --kernels "$kernels" "$file"
done
echo "PASS: ${#specs[@]} cubins for $chip"
