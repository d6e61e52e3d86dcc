#!/usr/bin/env bash
# loomc --target=cuda of a tied LM head (q8_0 table 64x64, 4352 bytes of
# GGUF blocks, read by the embedding and by the head's qmatmul) + loom-run
# against the recording fake driver (call order, sizes and the allocations
# kernels read, never numerics): the table is resident once (4352 bytes
# planned, uploaded once before the first call) and on each of the three
# runs both the embedding's gather kernel and the head's q8_0 GEMV read
# that one allocation (the fake's `args` line names each pointer argument's
# allocation by its number).
# usage: loom_run_tied_fake_test.sh <loomc> <loom-run> <fake-libcuda.so> <qmm-tied.mlir>
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$4" tied.mlir
head -c 4352 /dev/zero > t.bin
"$1" tied.mlir --target=cuda -v -o bundle 2> loomc.log
grep -q "memory plan of 'tied': .*(520 workspace, 4352 weights resident, 8 inputs uploaded per call into the workspace)" loomc.log ||
  { cat loomc.log; echo "FAIL: memory plan (the table resident once)"; exit 1; }
python3 - <<'PY'
import struct
hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 1), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
with open("ids.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<q", 7))
PY
LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log" \
  "$2" bundle --input ids=ids.npy --output res --iterations 3
test -f res/logits.npy
fail() { echo "FAIL: $*"; echo "--- fake driver log:"; cat log; exit 1; }
# The table: one 4352-byte allocation, uploaded once, before the first call.
[ "$(grep -c '^cuMemAlloc 4352$' log)" -eq 1 ] || fail "the table allocated more than once"
[ "$(grep -c '^cuMemcpyHtoD 4352$' log)" -eq 1 ] || fail "the table uploaded more than once"
last_htod=$(grep -n '^cuMemcpyHtoD' log | tail -1 | cut -d: -f1)
first_call=$(grep -n '^cuStreamCreate' log | head -1 | cut -d: -f1)
[ "$last_htod" -lt "$first_call" ] || fail "a weight uploaded during a call"
# Its allocation's number (the fake numbers allocations from 1).
table=$(grep '^cuMemAlloc' log | grep -n '^cuMemAlloc 4352$' | cut -d: -f1)
head_kernel=loom_qmm_q8_0_n64_k64_f32_gemv1
# The rows and the logits in the entry's 520-byte workspace (at 256 and 0).
q80="qmatmul $head_kernel w 4352@0 x 520@256 y 520@0 m 1"
[ "$(grep -c "^$q80\$" log)" -eq 3 ] || fail "expected 3 launches: $q80"
[ "$(grep -c "^args $head_kernel a$table:4352@0 " log)" -eq 3 ] ||
  fail "the head's GEMV does not read the table's allocation a$table"
# Every other kernel that reads the table: the embedding's gather.
gathers=$(grep '^args ' log | grep -v "^args $head_kernel " |
  grep -c " a$table:4352@0" || true)
[ "$gathers" -eq 3 ] || fail "expected the gather to read a$table on each of 3 runs, got $gathers"
allocs=$(grep -c '^cuMemAlloc' log)
frees=$(grep -c '^cuMemFree' log)
[ "$allocs" -eq "$frees" ] || fail "$allocs device allocations, $frees frees"
echo "table uploaded once (allocation a$table, 4352 bytes); per run:"
grep '^args ' log | grep " a$table:4352@0" | head -2
echo "PASS"
