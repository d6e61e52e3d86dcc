#!/usr/bin/env bash
# Runs the MLIR-generated GPU program linked against Loom's mgpu* wrappers.
# With a GPU it must compute the right answer (exit 0); without one it must
# stop with the runtime's message, not crash.
# usage: mlir_host_test.sh <loom-gpu-mlir-host>
out=$("$1" 2>&1)
rc=$?
echo "$out"
if [[ $rc == 0 ]]; then
  echo "PASS: the kernel ran and the result is right"
  exit 0
fi
if [[ $rc == 1 && "$out" =~ loom-cuda:\ mgpu[A-Za-z]+\ failed:\ no\ CUDA\ device:\  ]]; then
  echo "PASS: no GPU here, and the generated host code stopped with the message"
  exit 0
fi
echo "FAIL: exit status $rc"
exit 1
