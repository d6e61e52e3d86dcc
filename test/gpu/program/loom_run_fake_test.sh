#!/usr/bin/env bash
# loomc --target=cuda + loom-run against the recording fake driver (call
# order and sizes only, never numerics): the weights are uploaded once
# (cuMemcpyHtoD, through loom_cuda_mgpu_resident) however many times the
# entry runs, before the first call (when loom-run maps the weights; the
# host program's first driver call is cuStreamCreate), the input in and the result out once per run (cuMemcpy of 256
# bytes, the fake does not tell the direction), and the resident copies are
# freed when the bundle closes. The entry's workspace (every buffer of a
# call, docs/GPU.md "The memory plan") is allocated once, by the first call,
# with the manifest's workspace_bytes, and freed when the bundle closes: the
# three calls allocate and free nothing else. With a model that has constant globals
# (the optional fifth argument: their bytes), they are uploaded once too,
# when loom-run opens the bundle (loom_gpu_upload_constants), not inside a
# call.
# usage: loom_run_fake_test.sh <loomc> <loom-run> <fake-libcuda.so> <small-mlp.mlir> [constant bytes]
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$4" mlp.mlir
head -c 2048 /dev/zero > fc1.bin
head -c 128 /dev/zero > fc1_bias.bin
head -c 2048 /dev/zero > fc2.bin
# Generated products (the fake has no cuBLAS behind it).
"$1" mlp.mlir --target=cuda --no-gemm -o bundle
python3 - <<'PY'
import struct
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 16), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
with open("x.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<64f", *[0.5] * 64))
PY
LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log" \
  "$2" bundle --input x=x.npy --output res --iterations 3
test -f res/y.npy
weights=$((2048 + 128 + 2048 + ${5:-0}))
htod=$(awk '$1 == "cuMemcpyHtoD" { s += $2 } END { print s + 0 }' log)
copies=$(grep -c '^cuMemcpy 256$' log || true)
allocs=$(grep -c '^cuMemAlloc' log)
frees=$(grep -c '^cuMemFree' log)
echo "weights and constants uploaded: $htod bytes (expected $weights); input/result copies: $copies (expected 6); allocs $allocs, frees $frees"
[ "$htod" -eq "$weights" ] || { echo "FAIL: weights and constants uploaded $htod bytes over 3 runs, not once ($weights)"; exit 1; }
[ "$copies" -eq 6 ] || { echo "FAIL: expected the input in and the result out once per run"; exit 1; }
[ "$allocs" -eq "$frees" ] || { echo "FAIL: $allocs device allocations, $frees frees"; exit 1; }
# The workspace: one allocation of the plan's size, in the first call
# (after its cuStreamCreate), none in the later calls, no free during them.
ws=$(python3 -c 'import json,sys; p=json.load(open("bundle/manifest.json"))["target"]["memory_plan"]; print(p["mlp"]["workspace_bytes"])')
[ "$ws" -gt 0 ] || { echo "FAIL: no workspace_bytes in the manifest"; exit 1; }
[ "$(grep -c "^cuMemAlloc $ws\$" log)" -eq 1 ] || { echo "FAIL: the $ws-byte workspace is not allocated exactly once over 3 calls"; grep -n '^cuMem\(Alloc\|Free\)\|^cuStream' log; exit 1; }
streams=$(grep -c '^cuStreamCreate' log)
[ "$streams" -eq 3 ] || { echo "FAIL: $streams streams for 3 calls"; exit 1; }
first_call=$(grep -n '^cuStreamCreate' log | head -1 | cut -d: -f1)
last_call=$(grep -n '^cuStreamDestroy' log | tail -1 | cut -d: -f1)
in_calls=$(sed -n "${first_call},${last_call}p" log | grep '^cuMemAlloc\|^cuMemFree' || true)
[ "$in_calls" = "cuMemAlloc $ws" ] || { echo "FAIL: the calls allocate or free more than the workspace once:"; echo "$in_calls"; exit 1; }
echo "workspace: $ws bytes (manifest), allocated once by the first of 3 calls, freed at the close"
last_htod=$(grep -n '^cuMemcpyHtoD' log | tail -1 | cut -d: -f1)
[ "$last_htod" -lt "$first_call" ] || { echo "FAIL: weights or constants uploaded during a call (line $last_htod), not before the first (line $first_call)"; exit 1; }
# The manifest names the CUDA runtime ABI of the host code; a newer one
# than this runtime's is refused at load, before anything runs.
grep -q '"cuda_abi_version": 2' bundle/manifest.json || { echo "FAIL: no cuda_abi_version 2 in the manifest"; exit 1; }
sed -i 's/"cuda_abi_version": 2/"cuda_abi_version": 99/' bundle/manifest.json
if LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log99" "$2" bundle \
    --input x=x.npy --output res99 2> abi.err; then
  echo "FAIL: a bundle of CUDA runtime ABI 99 ran"; exit 1
fi
grep -q "generated against CUDA runtime ABI version 99, but this Loom CUDA runtime has ABI version 2; recompile" abi.err || { cat abi.err; echo "FAIL: ABI message"; exit 1; }
test ! -e res99 || { echo "FAIL: an output was written"; exit 1; }
echo "PASS"
