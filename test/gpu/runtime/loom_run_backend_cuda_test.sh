#!/usr/bin/env bash
# loom-run --backend cuda / --devices (docs/GPU.md, "Collectives on device
# buffers"), no GPU needed:
#  - a one-rank CUDA bundle runs through the single-device communicator
#    against the recording fake driver (call order only, never numerics):
#    the communicator's own stream is created and destroyed;
#  - the refusals, one line each, exit 1: a CPU bundle (ranks are not mixed
#    between CPU and GPU), several --devices without mpirun, no GPU.
# usage: loom_run_backend_cuda_test.sh <loomc> <loom-run> <fake-libcuda.so> <small-mlp.mlir>
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$4" mlp.mlir
head -c 2048 /dev/zero > fc1.bin
head -c 128 /dev/zero > fc1_bias.bin
head -c 2048 /dev/zero > fc2.bin
"$1" mlp.mlir --target=cuda --no-gemm -o cuda
"$1" mlp.mlir -o cpu
python3 - <<'PY'
import struct
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 16), }"
hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
with open("x.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<64f", *[0.5] * 64))
PY
fail() { echo "FAIL: $*"; exit 1; }

LOOM_CUDA_DRIVER="$3" LOOM_FAKE_CUDA_LOG="$work/log" \
  "$2" cuda --backend cuda --devices 0 --input x=x.npy --output res
test -f res/y.npy || fail "no output with --backend cuda"
streams=$(grep -c '^cuStreamCreate' log || true)
destroyed=$(grep -c '^cuStreamDestroy' log || true)
echo "--backend cuda on the fake driver: $streams stream(s) created, $destroyed destroyed"
[ "$streams" -ge 2 ] || fail "expected the rank's communicator stream besides the host program's"
[ "$streams" -eq "$destroyed" ] || fail "$streams streams created, $destroyed destroyed"

# expect_refusal <text> <loom-run args...>: exit 1, one line naming <text>.
expect_refusal() {
  local want="$1"; shift
  set +e
  out=$("$@" 2>&1)
  rc=$?
  set -e
  [ "$rc" -eq 1 ] || fail "exit $rc (expected 1): $*: $out"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "not one line: $out"
  case "$out" in *"$want"*) ;; *) fail "'$want' not in: $out" ;; esac
  echo "refused: $out"
}
expect_refusal "ranks are not mixed between CPU and GPU" \
  "$2" cpu --backend cuda --input x=x.npy --output r2
expect_refusal "one process per GPU is started by mpirun" \
  "$2" cuda --backend cuda --devices 0,1 --input x=x.npy --output r3
expect_refusal "add --backend cuda" \
  "$2" cuda --devices 0 --input x=x.npy --output r4
LOOM_CUDA_DRIVER=/nonexistent/libcuda.so.1 expect_refusal "needs a CUDA device: no CUDA device" \
  "$2" cuda --backend cuda --input x=x.npy --output r5
for d in r2 r3 r4 r5; do [ ! -e "$d" ] || fail "$d written by a refused run"; done
echo "PASS"
