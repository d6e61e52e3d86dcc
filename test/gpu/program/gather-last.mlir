// A constant index along a dimension of run-time size: an LLM decode step
// taking the last position (-1) of a run-time sequence length (SmolLM2's
// `decode`). The index and the bound are both host values, so the host
// decides (the CPU's scf.if condition), and reports through the same
// `loom_gpu_index_check` call a device check makes after the step's
// synchronisation; no check kernel, no copy back. The gather reads the
// constant index (-1 counts from the end in the kernel itself).
// RUN: loom-opt %s --pass-pipeline='builtin.module(loom-prepare-entry-points{interleave=false},loom-record-entry-points,loom-convert-loom-to-linalg{gemm=false},canonicalize,loom-gpu-device-index-check)' | FileCheck %s --check-prefix=CHECKS
// RUN: loom-opt %s --loom-lower-gpu-pipeline="format=isa chips=sm_90 max-dim=8" | FileCheck %s

// CHECKS-LABEL: func.func @last(
// CHECKS-NOT: scf.if
// CHECKS-NOT: loom_rt_index_error
// CHECKS: %[[N:.+]] = arith.index_cast %{{.+}} : index to i64
// CHECKS: %[[BAD:.+]] = arith.cmpi uge
// CHECKS: %[[POS:.+]] = arith.select %[[BAD]], %{{.+}}, %{{.+}} : i64
// CHECKS: call @loom_gpu_index_check(%arg0, %{{.+}}, %[[POS]], %c-1_i64, %{{.+}}, %[[N]], %{{.+}})
// CHECKS: linalg.generic

// Host code: two copies (the input up, the result down: no check values
// come back), then after the synchronisation the host's decision, the
// CPU's error call when the index is out of range.
// CHECK-LABEL: llvm.func internal @last(
// CHECK-COUNT-2: llvm.call @mgpuMemcpy
// CHECK-NOT: llvm.call @mgpuMemcpy
// CHECK: llvm.call @mgpuStreamSynchronize
// CHECK-NOT: llvm.call @mgpuMemcpy
// CHECK: llvm.call @loom_rt_index_error(%arg0
func.func @last(%x: tensor<1x?x4xf32> {loom.name = "x"}) -> tensor<1x1x4xf32> {
  %i = arith.constant dense<-1> : tensor<1xi64>
  %0 = loom.gather %x, %i axis = 1 : tensor<1x?x4xf32>, tensor<1xi64> -> tensor<1x1x4xf32>
  return %0 : tensor<1x1x4xf32>
}
