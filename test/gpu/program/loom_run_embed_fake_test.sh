#!/usr/bin/env bash
# loomc --target=cuda + loom-run with an embedding against the recording fake
# driver (call order and sizes only, never numerics; no kernel runs). The id
# check runs on the device (loom-gpu-device-index-check): per run, its two
# 8-byte values come back to the host after the launches, and the host
# reports a bad id with the CPU's one-line error after the synchronisation.
# The fake's fresh memory reads as "no bad id" (0xff bytes: -1) unless
# LOOM_FAKE_CUDA_FILL says otherwise: with 1, the position and the id read
# as 0x0101..., which must come out as that error, exit 1, no output.
# The same for a loom.gather's run-time indices (op: loom.gather; the
# program's input is `ids`, 1 x 5, its weight t.bin 100 x 16 f32).
# usage: loom_run_embed_fake_test.sh <loomc> <loom-run> <fake-libcuda.so> <embed.mlir> [op]
set -euo pipefail
op=${5:-loom.embedding}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$4" embed.mlir
head -c 6400 /dev/zero > t.bin
"$1" embed.mlir --target=cuda -o bundle
python3 - <<'PY'
import struct
hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 5), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
with open("ids.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<5q", 1, 2, 3, 99, 0))
PY
LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log" \
  "$2" bundle --input ids=ids.npy --output res --iterations 2
test -f res/h.npy
checks=$(grep -c '^cuMemcpy 8$' log || true)
echo "id check values copied back: $checks (expected 4: two per run)"
[ "$checks" -eq 4 ] || { echo "FAIL: expected two 8-byte copies per run"; exit 1; }
# The copies back come after the launches of their run, before its sync.
first_launch=$(grep -n '^cuLaunchKernel' log | head -1 | cut -d: -f1)
first_check=$(grep -n '^cuMemcpy 8$' log | head -1 | cut -d: -f1)
[ "$first_check" -gt "$first_launch" ] || { echo "FAIL: id check read back before the first launch"; exit 1; }
allocs=$(grep -c '^cuMemAlloc' log)
frees=$(grep -c '^cuMemFree' log)
[ "$allocs" -eq "$frees" ] || { echo "FAIL: $allocs device allocations, $frees frees"; exit 1; }
# A bad id (as the fake's memory says): the CPU's error, exit 1, no output.
if LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_FILL=1 LOOM_FAKE_CUDA_LOG="$work/log2" \
    "$2" bundle --input ids=ids.npy --output bad > out.txt 2>&1; then
  echo "FAIL: a bad id was not reported"; cat out.txt; exit 1
fi
cat out.txt
grep -q "ids: id 72340172838076673 out of range \\[-100, 100) in $op" out.txt ||
  { echo "FAIL: not the CPU's index error"; exit 1; }
[ ! -e bad/h.npy ] || { echo "FAIL: an output was written for a failed step"; exit 1; }
echo "PASS"
