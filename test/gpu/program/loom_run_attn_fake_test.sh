#!/usr/bin/env bash
# A decode step's attention over the device KV cache (docs/GPU.md "KV cache
# on the device"): loomc --target=cuda --gpu-max-tokens 16 of an entry with
# S new rows at positions[0]; its scores span rows [0, positions[0] + S) of
# the cache, at most the cache's rows, so the memory plan bounds them at 16
# (4 heads x 16 x 16 x 4 bytes). loom-run against the recording fake driver
# (call order and sizes only, never numerics): 3 rows at position 0 with
# --ctx 16 make 4 x 3 x 3 score buffers, views in the entry's workspace
# (allocated once, at the bound); --ctx 32 is over the
# bound and refused at load (before any call); without --ctx the context
# is the bound.
# usage: loom_run_attn_fake_test.sh <loomc> <loom-run> <fake-libcuda.so> <attn-decode.mlir>
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$4" attn.mlir
"$1" attn.mlir --target=cuda --no-gemm --gpu-max-tokens 16 -v -o bundle 2> loomc.log
grep -q "memory plan of 'decode': peak [0-9]* device bytes .*KV cache resident: 128 bytes per context position, sized at load) at the bound 16" loomc.log ||
  { cat loomc.log; echo "FAIL: memory plan"; exit 1; }
python3 - <<'PY'
import struct
def npy(name, descr, shape, values, fmt):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    with open(name, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
npy("q.npy", "<f4", "(1, 4, 3, 8)", [0.5] * 96, "f")
npy("k.npy", "<f4", "(1, 2, 3, 8)", [0.25] * 48, "f")
npy("v.npy", "<f4", "(1, 2, 3, 8)", [1.0] * 48, "f")
npy("pos.npy", "<i8", "(3,)", [0, 1, 2], "q")
PY
fail() { echo "FAIL: $*"; echo "--- log:"; cat "${log:-/dev/null}"; exit 1; }
run() { # <log> [args...]
  log="$work/$1"; shift
  LOOM_CUDA_DRIVER="$FAKE" LOOM_FAKE_CUDA_LOG="$log" "$LOOMRUN" bundle \
    --input q=q.npy --input k=k.npy --input v=v.npy --input positions=pos.npy "$@"
}
FAKE=$3 LOOMRUN=$2
run log1 --ctx 16 --output res1
test -f res1/y.npy || fail "no output"
# The caches: 2 x 16 x 8 x 4 bytes each, allocated once.
[ "$(grep -c '^cuMemAlloc 1024$' "$log")" -eq 2 ] || fail "two 1024-byte caches"
# Scores (and the softmax's probabilities): 4 heads x 3 rows x 3 cache rows
# at run time, planned at the bound (16 x 16) in the entry's workspace,
# which is one allocation of the manifest's workspace_bytes.
ws=$(python3 -c 'import json; print(json.load(open("bundle/manifest.json"))["target"]["memory_plan"]["decode"]["workspace_bytes"])')
[ "$(grep -c "^cuMemAlloc $ws\$" "$log")" -eq 1 ] || fail "no $ws-byte workspace"
[ "$(grep -c '^cuMemAlloc' "$log")" -eq 3 ] || fail "more than the caches and the workspace allocated"
[ "$(grep -c '^cuMemAlloc' "$log")" -eq "$(grep -c '^cuMemFree' "$log")" ] || fail "allocations not freed"

# Over the bound the bundle was planned for: refused before any call.
if run log2 --ctx 32 --output res2 2> over.err; then
  fail "--ctx 32 ran with a plan bounded at 16"
fi
grep -q "a KV cache of 32 positions is over the bound 16 that entry 'decode' was compiled for" over.err ||
  { cat over.err; fail "message"; }
! grep -q '^cuStreamCreate' "$log" || fail "a call ran"
test ! -e res2 || fail "an output was written"

# No --ctx: the context is the bound (16 positions).
run log3 --output res3
[ "$(grep -c '^cuMemAlloc 1024$' "$log")" -eq 2 ] || fail "the default context is not the bound 16"
echo "PASS"
