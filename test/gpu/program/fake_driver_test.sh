#!/usr/bin/env bash
# Runs the MLP's generated host program against the recording fake driver
# and checks the calls it made (order and sizes, not numbers).
# usage: fake_driver_test.sh <host-program> <fake-libcuda.so> <FileCheck> <checks>
set -euo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LOOM_CUDA_DRIVER="$2" LOOM_FAKE_CUDA_LOG="$log" "$1" --no-check
"$3" --input-file="$log" "$4"
echo "PASS: $(wc -l < "$log") driver calls in the expected order"
