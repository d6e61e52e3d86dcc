#!/usr/bin/env bash
# loomc --target=cuda + loom-run of an entry with a KV cache (a state input)
# against the recording fake driver (call order and sizes only, never
# numerics; docs/GPU.md "KV cache on the device"). The entry runs 3 times
# with --ctx 16: the cache (1 x 2 x 16 x 8 f32 = 1024 bytes) is allocated
# and zero-filled on the device once, before the first call; no call copies
# it in or out (each run copies the 64-byte input in and the 64-byte result
# out; the 8-byte positions are read on the host and never uploaded); with
# --output it is copied back once, after the last call (and reads as the
# device's zeros: the fake fills new memory with 0xff); every device buffer
# is freed. With an initial state (--input cache_key_0=FILE) the cache is
# uploaded once instead, before the first call.
# usage: loom_run_kv_fake_test.sh <loomc> <loom-run> <fake-libcuda.so> <kv-step.mlir>
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$4" step.mlir
head -c 64 /dev/zero > w.bin
"$1" step.mlir --target=cuda --no-gemm -v -o bundle 2> loomc.err
grep -q "KV cache resident: 64 bytes per context position, sized at load" loomc.err || {
  cat loomc.err; echo "FAIL: loomc -v does not print the cache's plan"; exit 1; }
grep -q '"state_bytes_per_position": 64' bundle/manifest.json || {
  echo "FAIL: no state_bytes_per_position in the manifest"; exit 1; }
python3 - <<'PY'
import struct
def npy(name, descr, shape, data):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    with open(name, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(data)
npy("k.npy", "<f4", "(1, 2, 1, 8)", struct.pack("<16f", *[0.5] * 16))
npy("pos.npy", "<i8", "(1,)", struct.pack("<q", 3))
npy("cache.npy", "<f4", "(1, 2, 16, 8)", struct.pack("<256f", *[0.25] * 256))
PY

check() { # <log> <expected HtoD bytes> <expected cache memsets> <expected DtoH>
  local log=$1
  htod=$(awk '$1 == "cuMemcpyHtoD" { s += $2 } END { print s + 0 }' "$log")
  cache_allocs=$(grep -c '^cuMemAlloc 1024$' "$log" || true)
  memsets=$(grep -c '^cuMemsetD8 1024$' "$log" || true)
  copies=$(grep -c '^cuMemcpy 64$' "$log" || true)
  big=$(grep -c '^cuMemcpy 1024$' "$log" || true)
  dtoh=$(grep -c '^cuMemcpyDtoH 1024$' "$log" || true)
  small=$(grep -c '^cuMemcpy 8$' "$log" || true)
  allocs=$(grep -c '^cuMemAlloc' "$log")
  frees=$(grep -c '^cuMemFree' "$log")
  echo "$log: HtoD $htod bytes (expected $2); cache allocs $cache_allocs, zero fills $memsets (expected $3); input/result copies $copies (expected 6); cache copies in calls $big; cache read back $dtoh (expected $4); allocs $allocs, frees $frees"
  [ "$htod" -eq "$2" ] || { echo "FAIL: uploads"; exit 1; }
  [ "$cache_allocs" -eq 1 ] || { echo "FAIL: the cache is allocated $cache_allocs times, not once"; exit 1; }
  [ "$memsets" -eq "$3" ] || { echo "FAIL: the cache is zero-filled $memsets times"; exit 1; }
  [ "$copies" -eq 6 ] || { echo "FAIL: expected the input in and the result out once per run"; exit 1; }
  [ "$big" -eq 0 ] || { echo "FAIL: the cache is copied during a call"; exit 1; }
  [ "$small" -eq 0 ] || { echo "FAIL: the positions were uploaded"; exit 1; }
  [ "$dtoh" -eq "$4" ] || { echo "FAIL: the cache was read back $dtoh times"; exit 1; }
  [ "$allocs" -eq "$frees" ] || { echo "FAIL: $allocs device allocations, $frees frees"; exit 1; }
  first_call=$(grep -n '^cuStreamCreate' "$log" | head -1 | cut -d: -f1)
  cache_alloc=$(grep -n '^cuMemAlloc 1024$' "$log" | head -1 | cut -d: -f1)
  last_htod=$(grep -n '^cuMemcpyHtoD' "$log" | tail -1 | cut -d: -f1)
  last_call=$(grep -n '^cuMemcpy 64$' "$log" | tail -1 | cut -d: -f1)
  [ "$cache_alloc" -lt "$first_call" ] || { echo "FAIL: the cache is made in a call (line $cache_alloc), not before the first (line $first_call)"; exit 1; }
  [ "$last_htod" -lt "$first_call" ] || { echo "FAIL: an upload during a call (line $last_htod)"; exit 1; }
  if [ "$4" -gt 0 ]; then
    back=$(grep -n '^cuMemcpyDtoH 1024$' "$log" | cut -d: -f1)
    [ "$back" -gt "$last_call" ] || { echo "FAIL: the cache is read back (line $back) before the last call ended (line $last_call)"; exit 1; }
  fi
}

LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log1" \
  "$2" bundle --input k=k.npy --input positions=pos.npy --ctx 16 \
  --output res --iterations 3
test -f res/y.npy
check log1 64 1 1
# The cache written by --output: the device's zero fill (no kernel runs).
python3 - <<'PY'
data = open("res/cache_key_0.npy", "rb").read()
assert len(data) >= 1024 and data[-1024:] == bytes(1024), "cache is not the device's zeros"
PY

# No --output (the outputs go to .): the cache is never copied back.
LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log2" \
  "$2" bundle --input k=k.npy --input positions=pos.npy --ctx 16 \
  --iterations 3
test -f y.npy
test ! -f cache_key_0.npy
check log2 64 1 0

# An initial state: uploaded once (64 weight + 1024 cache bytes), before the
# first call; its file fixes the context (16).
LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log3" \
  "$2" bundle --input k=k.npy --input positions=pos.npy \
  --input cache_key_0=cache.npy --output res3 --iterations 3
check log3 $((64 + 1024)) 1 1

# A position outside the cache is refused before any call.
python3 - <<'PY'
import struct
hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
open("far.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<q", 16))
PY
if LOOM_CUDA_DRIVER="$3" "$2" bundle --input k=k.npy --input positions=far.npy \
    --ctx 16 --output res4 2> far.err; then
  echo "FAIL: position 16 in a cache of 16 positions ran"; exit 1
fi
grep -q "do not fit in the KV cache of 16 positions" far.err || { cat far.err; echo "FAIL: message"; exit 1; }
# A context the device's memory cannot hold (the fake has 16 GiB) is
# refused at load, before any call.
if LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log5" "$2" bundle \
    --input k=k.npy --input positions=pos.npy --ctx 1000000000000 \
    --output res5 2> big.err; then
  echo "FAIL: a 61 TiB cache ran"; exit 1
fi
grep -q "pass a smaller --ctx (at most [0-9]*) (on the CUDA device)" big.err || { cat big.err; echo "FAIL: message"; exit 1; }
! grep -q '^cuStreamCreate' log5 || { echo "FAIL: a call ran"; exit 1; }
echo "PASS"
