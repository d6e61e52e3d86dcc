#!/usr/bin/env bash
# Run-time sizes (docs/GPU.md "Run-time sizes"): loomc --target=cuda
# --gpu-max-tokens 64 of an entry with a dynamic number of rows, then
# loom-run against the recording fake driver (call order and sizes only,
# never numerics) with 5 rows and with 20 rows: the workspace is planned at
# the bound (16384 bytes, one allocation), the input's copy (rows x 16 x 4
# bytes) and the result's (rows x 32 x 4) follow the call's length, and the
# three kernels' grids
# (the product's zero fill, the product, SiLU) change (ceil(rows x 32 /
# 256) blocks of 256 threads). A call with 65 rows
# is over the bound: refused before anything runs (no stream, no launch,
# no output).
# usage: loom_run_dyn_fake_test.sh <loomc> <loom-run> <fake-libcuda.so> <dynamic.mlir>
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$4" dyn.mlir
head -c 2048 /dev/zero > w.bin
# Generated products (the fake has no cuBLAS behind it).
"$1" dyn.mlir --target=cuda --no-gemm --gpu-max-tokens 64 -v -o bundle 2> loomc.log
# At the bound: input 64x16x4, product and SiLU 64x32x4 each (SiLU in the
# input's place: 16384 bytes of workspace), the weight.
grep -q "memory plan of 'dyn': peak 18432 device bytes (16384 workspace, 2048 weights resident, 4096 inputs uploaded per call into the workspace) at the bound 64 of every dynamic input dimension (--gpu-max-tokens)" loomc.log ||
  { cat loomc.log; echo "FAIL: memory plan"; exit 1; }
grep -q '"max_dim": 64' bundle/manifest.json || { echo "FAIL: manifest max_dim"; exit 1; }
mknpy() {
  python3 - "$1" "$2" <<'PY'
import struct, sys
rows = int(sys.argv[2])
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 16), }" % rows
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<%df" % (rows * 16), *[0.5] * (rows * 16)))
PY
}
fail() { echo "FAIL: $*"; echo "--- fake driver log:"; cat "${log:-/dev/null}"; exit 1; }
for rows in 5 20; do
  mknpy x$rows.npy $rows
  log="$work/log$rows"
  LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$log" \
    "$2" bundle --input x=x$rows.npy --output res$rows
  test -f res$rows/y.npy || fail "no output for $rows rows"
  in=$((rows * 16 * 4)) out=$((rows * 32 * 4)) grid=$(((rows * 32 + 255) / 256))
  # The workspace planned at the bound (x at 64 rows, the product and SiLU
  # at 64 x 32, SiLU in x's place), one allocation whatever the rows; the
  # input's copy and the copy out of the run-time sizes.
  [ "$(grep -c "^cuMemAlloc 16384\$" log$rows)" -eq 1 ] || fail "$rows rows: one 16384-byte workspace"
  [ "$(grep -c "^cuMemAlloc" log$rows)" -eq 2 ] || fail "$rows rows: more than the weight and the workspace allocated"
  [ "$(grep -c "^cuMemcpy $in\$" log$rows)" -eq 1 ] || fail "$rows rows: the $in-byte input copy"
  [ "$(grep -c "^cuMemcpy $out\$" log$rows)" -eq 1 ] || fail "$rows rows: the $out-byte result copy"
  [ "$(grep -c "^cuLaunchKernel grid $grid,1,1 block 256,1,1\$" log$rows)" -eq 3 ] ||
    fail "$rows rows: three launches of $grid blocks"
  [ "$(grep -c '^cuLaunchKernel' log$rows)" -eq 3 ] || fail "$rows rows: exactly three launches"
  allocs=$(grep -c '^cuMemAlloc' log$rows)
  frees=$(grep -c '^cuMemFree' log$rows)
  [ "$allocs" -eq "$frees" ] || fail "$rows rows: $allocs device allocations, $frees frees"
  echo "$rows rows: copies of $in and $out bytes, grids of $grid blocks"
done
# refused <rows> <loom-run> <fake driver> <expected error>: a call refused
# before anything runs (no stream, no launch, no output).
refused() {
  local rows=$1 log="$work/log$1"
  mknpy "x$rows.npy" "$rows"
  if LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$log" \
      "$2" bundle --input "x=x$rows.npy" --output "res$rows" 2> "err$rows"; then
    fail "a call with $rows rows ran"
  fi
  grep -qF "$4" "err$rows" || { cat "err$rows"; fail "the error for $rows rows"; }
  [ "$(grep -c '^cuLaunchKernel\|^cuStreamCreate' "$log" || true)" -eq 0 ] ||
    fail "a call with $rows rows launched"
  test ! -e "res$rows/y.npy" || fail "a call with $rows rows wrote an output"
  echo "$rows rows: refused ($(cat "err$rows"))"
}
# Over the bound.
refused 65 "$2" "$3" "input 'x' ('x65.npy'): dimension 0 is 65, over the bound 64 that entry 'dyn' was compiled for (its device memory plan); recompile with loomc --gpu-max-tokens 65 or more"
# Empty (0 rows): empty grids, and an index counted from the end would read
# before the input.
refused 0 "$2" "$3" "input 'x' ('x0.npy'): dimension 0 is 0; a CUDA entry's run-time dimensions must be at least 1"
echo "PASS"
