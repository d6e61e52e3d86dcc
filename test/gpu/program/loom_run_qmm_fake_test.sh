#!/usr/bin/env bash
# loomc --target=cuda of two quantized matmuls (q4_1, q8_0) + loom-run
# against the recording fake driver (call order and sizes only, never
# numerics): the quantized weights are uploaded once, as stored (3840 +
# 3264 bytes of GGUF blocks, before the first call), and each run launches
# the generated GEMV of each (batch 1: `<base>_gemv1`, 128 threads, one
# block per 8 weight rows) on the resident weight and the activations and
# output in the entry's workspace, with m = 1.
# usage: loom_run_qmm_fake_test.sh <loomc> <loom-run> <fake-libcuda.so> <qmm.mlir>
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$4" qmm.mlir
head -c 3840 /dev/zero > w1.bin
head -c 3264 /dev/zero > w2.bin
"$1" qmm.mlir --target=cuda -v -o bundle 2> loomc.log
grep -q "memory plan of 'qmm': peak 7872 device bytes (768 workspace, 7104 weights resident, 256 inputs uploaded per call into the workspace)" loomc.log ||
  { cat loomc.log; echo "FAIL: memory plan"; exit 1; }
python3 - <<'PY'
import struct
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 64), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
with open("x.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<64f", *[0.5] * 64))
PY
LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log" \
  "$2" bundle --input input0=x.npy --output res --iterations 3
test -f res/output0.npy
fail() { echo "FAIL: $*"; echo "--- fake driver log:"; cat log; exit 1; }
htod=$(awk '$1 == "cuMemcpyHtoD" { s += $2 } END { print s + 0 }' log)
[ "$htod" -eq 7104 ] || fail "weights uploaded $htod bytes over 3 runs, not once (7104)"
last_htod=$(grep -n '^cuMemcpyHtoD' log | tail -1 | cut -d: -f1)
first_call=$(grep -n '^cuStreamCreate' log | head -1 | cut -d: -f1)
[ "$last_htod" -lt "$first_call" ] || fail "a weight uploaded during a call"
# x, the q4_1 output and the q8_0 output live in the entry's 768-byte
# workspace (one allocation, by the first run): x at 512, the q4_1 output
# at 0, the q8_0 output at 512 (x's place: x is dead by then).
[ "$(grep -c '^cuMemAlloc 768$' log)" -eq 1 ] || fail "the 768-byte workspace is not allocated exactly once"
q41='qmatmul loom_qmm_q4_1_n96_k64_f32_gemv1 w 3840@0 x 768@512 y 768@0 m 1'
q80='qmatmul loom_qmm_q8_0_n32_k96_f32_gemv1 w 3264@0 x 768@0 y 768@512 m 1'
[ "$(grep -c "^$q41\$" log)" -eq 3 ] || fail "expected 3 launches: $q41"
[ "$(grep -c "^$q80\$" log)" -eq 3 ] || fail "expected 3 launches: $q80"
[ "$(grep -c '^cuLaunchKernel grid 12,1,1 block 128,1,1$' log)" -eq 3 ] || fail "q4_1 GEMV geometry"
[ "$(grep -c '^cuLaunchKernel grid 4,1,1 block 128,1,1$' log)" -eq 3 ] || fail "q8_0 GEMV geometry"
[ "$(grep -c '^cuLaunchKernel' log)" -eq 6 ] || fail "expected exactly the 6 qmatmul launches"
# Each launch follows its function lookup, the q4_1 product before the q8_0 one.
grep -A1 '^cuLaunchKernel grid 12,1,1' log | grep -q "^$q41\$" || fail "q4_1 launch line"
allocs=$(grep -c '^cuMemAlloc' log)
frees=$(grep -c '^cuMemFree' log)
[ "$allocs" -eq "$frees" ] || fail "$allocs device allocations, $frees frees"
echo "weights uploaded once ($htod bytes); per run: $q41; $q80"
echo "PASS"
