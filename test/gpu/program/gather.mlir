// loom.gather (ONNX Gather) for CUDA. Run-time indices are checked as an
// embedding's ids are (embedding.mlir): the CPU lowering's check loop
// becomes a kernel finding the first index out of range of [-n, n) of the
// gathered dimension (position and value), the gather reads the indices
// clamped (a bad one reads index 0, so no kernel reads outside the input)
// and the host reports the CPU's one-line error after the step's
// synchronisation. A single index (the scf.if form) works the same, with
// i32 indices widened. Constant indices along a static dimension are
// checked at compile time and need no check at all; a negative index counts
// from the end in the gather kernel itself.
// RUN: loom-opt %s --pass-pipeline='builtin.module(loom-prepare-entry-points{interleave=false},loom-record-entry-points,loom-convert-loom-to-linalg{gemm=false},canonicalize,loom-gpu-device-index-check)' | FileCheck %s --check-prefix=CHECKS
// RUN: loom-opt %s --loom-lower-gpu-pipeline="format=isa chips=sm_90" | FileCheck %s

// On tensors: no host loop and no host read of the indices.
// CHECKS-LABEL: func.func @gather(
// CHECKS-SAME: %[[X:[^:]+]]: tensor<8x16xf32>, %[[I:[^:]+]]: tensor<2x3xi64>, %[[J:[^:]+]]: tensor<1xi32>
// CHECKS-NOT: scf.for
// CHECKS-NOT: scf.if
// CHECKS-NOT: tensor.extract %[[I]]
// CHECKS-NOT: tensor.extract %[[J]]
// The run-time indices %i: first bad one of [-8, 8), clamped, checked.
// CHECKS: %[[FIRST:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction"]{{.*}} ins(%[[I]] : tensor<2x3xi64>)
// CHECKS: arith.cmpi uge
// CHECKS: %[[CLAMPED:.+]] = linalg.generic {{.*}} ins(%[[I]] : tensor<2x3xi64>)
// CHECKS: arith.select
// CHECKS: %[[POS:.+]] = tensor.extract %[[FIRST]]#0
// CHECKS: %[[ID:.+]] = tensor.extract %[[FIRST]]#1
// CHECKS: call @loom_gpu_index_check(%arg0, %{{.+}}, %[[POS]], %[[ID]], %c-8_i64{{.*}}, %c8_i64
// CHECKS: linalg.generic {{.*}} ins(%[[CLAMPED]] : tensor<2x3xi64>)
// CHECKS: arith.cmpi slt
// CHECKS: tensor.extract %[[X]]
// The constant indices [-1, 0] along dimension 1: no check.
// CHECKS: linalg.generic {{.*}} ins(%{{.*}} : tensor<2xi64>) outs(%{{.*}} : tensor<8x2xf32>)
// CHECKS-NOT: loom_gpu_index_check
// CHECKS: tensor.extract %[[X]]
// CHECKS-NOT: tensor.extract %[[J]]
// The single i32 index %j along dimension -1 ([-16, 16)).
// CHECKS: %[[FIRSTJ:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[J]] : tensor<1xi32>)
// CHECKS: arith.extsi
// CHECKS: %[[CLAMPEDJ:.+]] = linalg.generic {{.*}} ins(%[[J]] : tensor<1xi32>)
// CHECKS: call @loom_gpu_index_check(%arg0, %{{.+}}, %{{.+}}, %{{.+}}, %c-16_i64{{.*}}, %c16_i64
// CHECKS: linalg.generic {{.*}} ins(%[[CLAMPEDJ]] : tensor<1xi32>)
// CHECKS-NOT: loom_rt_index_error(

// Host code: the constant indices resident (16 bytes), each check's two
// values copied back after its kernels, the synchronisation, then one
// check per run-time gather naming its input ("i", "j") and bound.
// CHECK-DAG: llvm.mlir.global internal constant @[[$STRI:.+]]("i\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[$STRJ:.+]]("j\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[$STROP:.+]]("loom.gather\00")
// CHECK-LABEL: llvm.func internal @gather(
// CHECK-SAME: loom_gpu_resident_bytes = 16 : i64
// CHECK-DAG: %[[LOI:.+]] = llvm.mlir.constant(-8 : i64) : i64
// CHECK-DAG: %[[HII:.+]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-DAG: %[[LOJ:.+]] = llvm.mlir.constant(-16 : i64) : i64
// CHECK-DAG: %[[HIJ:.+]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-DAG: %[[NAMEI:.+]] = llvm.mlir.addressof @[[$STRI]]
// CHECK-DAG: %[[NAMEJ:.+]] = llvm.mlir.addressof @[[$STRJ]]
// CHECK-DAG: %[[OP:.+]] = llvm.mlir.addressof @[[$STROP]]
// CHECK: llvm.call @loom_cuda_mgpu_resident(
// CHECK: gpu.launch_func
// CHECK: llvm.call @loom_rt_malloc(
// CHECK: llvm.call @mgpuMemcpy(
// CHECK: llvm.call @loom_rt_malloc(
// CHECK: llvm.call @mgpuMemcpy(
// CHECK: gpu.launch_func
// CHECK: llvm.call @loom_rt_malloc(
// CHECK: llvm.call @mgpuMemcpy(
// CHECK: llvm.call @loom_rt_malloc(
// CHECK: llvm.call @mgpuMemcpy(
// CHECK: gpu.launch_func
// CHECK: llvm.call @mgpuStreamSynchronize(
// CHECK: llvm.cond_br
// CHECK: llvm.call @loom_rt_index_error(%arg0, %[[NAMEI]], %{{.+}}, %[[LOI]], %[[HII]], %[[OP]])
// CHECK: llvm.cond_br
// CHECK: llvm.call @loom_rt_index_error(%arg0, %[[NAMEJ]], %{{.+}}, %[[LOJ]], %[[HIJ]], %[[OP]])
// CHECK-COUNT-4: llvm.call @free(
// CHECK: llvm.return
// CHECK-NOT: loom_gpu_index_check
func.func @gather(%x: tensor<8x16xf32> {loom.name = "x"}, %i: tensor<2x3xi64> {loom.name = "i"}, %j: tensor<1xi32> {loom.name = "j"}) -> (tensor<2x3x16xf32>, tensor<8x2xf32>, tensor<8x1xf32>) {
  %0 = loom.gather %x, %i axis = 0 : tensor<8x16xf32>, tensor<2x3xi64> -> tensor<2x3x16xf32>
  %c = loom.constant dense<[-1, 0]> : tensor<2xi64>
  %1 = loom.gather %x, %c axis = 1 : tensor<8x16xf32>, tensor<2xi64> -> tensor<8x2xf32>
  %2 = loom.gather %x, %j axis = -1 : tensor<8x16xf32>, tensor<1xi32> -> tensor<8x1xf32>
  return %0, %1, %2 : tensor<2x3x16xf32>, tensor<8x2xf32>, tensor<8x1xf32>
}
