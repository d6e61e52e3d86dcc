// loom-gpu-host-program alone, on an entry point after kernel outlining
// (x @ w^T + x: one cuBLAS call and one kernel). The entry's workspace is
// got once (loom_cuda_mgpu_workspace: 512 bytes, the input's device copy at
// offset 0 and the alloc at 256, both live to the end); the input is
// copied into its place, the weight (an argument with loom.weight in
// loom.entry_points) made resident, the alloc a view of the workspace, the
// GEMM's stream placeholder and the launch chained on one token, the
// result copied back to a fresh host buffer and the stream waited for once
// before the return; nothing is allocated or freed on the device per call.
// The memory plan is on the function (peak = workspace + weights). In
// kernels, math ops that NVVM would send to libdevice become intrinsics.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-gpu-host-program | FileCheck %s

// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[CTX:[a-z0-9]+]]: !llvm.ptr, %[[X:[a-z0-9]+]]: memref<4x16xf32>, %[[W:[a-z0-9]+]]: memref<16x16xf32>
// CHECK-SAME: loom_gpu_peak_bytes = 1536 : i64, loom_gpu_resident_bytes = 1024 : i64, loom_gpu_upload_bytes = 256 : i64, loom_gpu_workspace_bytes = 512 : i64
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[KEY:.*]] = llvm.mlir.addressof @__loom_gpu_workspace_f : !llvm.ptr
// CHECK: %[[C512:.*]] = llvm.mlir.constant(512 : i64) : i64
// CHECK: %[[BASE:.*]] = call @loom_cuda_mgpu_workspace(%[[KEY]], %[[C512]]) : (!llvm.ptr, i64) -> !llvm.ptr
// CHECK: llvm.insertvalue %[[BASE]], %{{.*}}[1]
// CHECK: %[[DX:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<4x16xf32>
// CHECK: %[[T1:.*]] = gpu.memcpy async [%[[T0]]] %[[DX]], %[[X]]
// CHECK: memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: %[[C1024:.*]] = arith.constant 1024 : i64
// CHECK: call @loom_cuda_mgpu_resident(%{{.*}}, %[[C1024]]) : (!llvm.ptr, i64) -> !llvm.ptr
// CHECK: %[[C256:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK: %[[PY:.*]] = llvm.getelementptr %[[BASE]][%[[C256]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.insertvalue %[[PY]], %{{.*}}[1]
// CHECK: %[[DY:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<4x16xf32>
// CHECK: %[[STREAM:.*]] = builtin.unrealized_conversion_cast %[[T1]] : !gpu.async.token to !llvm.ptr
// CHECK: call @loom_cuda_mgpu_gemm(%[[STREAM]],
// CHECK: %[[T2:.*]] = gpu.launch_func async [%[[T1]]] @f_kernel::@f_kernel {{.*}} args({{.*}}%[[DY]] : memref<4x16xf32>, %[[DX]] : memref<4x16xf32>)
// CHECK: %[[Y:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
// CHECK: %[[T3:.*]] = gpu.memcpy async [%[[T2]]] %[[Y]], %[[DY]]
// CHECK-NEXT: gpu.wait [%[[T3]]]
// CHECK-NEXT: return %[[Y]] : memref<4x16xf32>
// CHECK: gpu.func @f_kernel(
// CHECK-NOT: math.
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK: llvm.intr.fma
// CHECK: gpu.return
// CHECK: llvm.mlir.global internal @__loom_gpu_workspace_f(0 : i8)
// CHECK: func.func private @loom_cuda_mgpu_workspace(!llvm.ptr, i64) -> !llvm.ptr
// CHECK: func.func private @loom_cuda_mgpu_resident(!llvm.ptr, i64) -> !llvm.ptr
module attributes {gpu.container_module, loom.entry_points = [{arg_attrs = [{}, {}, {loom.weight = #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 0>>}], name = "f", res_attrs = [{}], type = (!llvm.ptr, tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>}], loom.meshes = []} {
  func.func @f(%arg0: !llvm.ptr, %arg1: memref<4x16xf32>, %arg2: memref<16x16xf32>) -> memref<4x16xf32> attributes {llvm.emit_c_interface, loom.entry} {
    %c256 = arith.constant 256 : index
    %c64 = arith.constant 64 : index
    %c16 = arith.constant 16 : index
    %c1 = arith.constant 1 : index
    %c16_i64 = arith.constant 16 : i64
    %c4_i64 = arith.constant 4 : i64
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %0 = llvm.mlir.zero : !llvm.ptr
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
    %intptr = memref.extract_aligned_pointer_as_index %arg1 : memref<4x16xf32> -> index
    %1 = arith.index_cast %intptr : index to i64
    %2 = llvm.inttoptr %1 : i64 to !llvm.ptr
    %intptr_0 = memref.extract_aligned_pointer_as_index %arg2 : memref<16x16xf32> -> index
    %3 = arith.index_cast %intptr_0 : index to i64
    %4 = llvm.inttoptr %3 : i64 to !llvm.ptr
    %intptr_1 = memref.extract_aligned_pointer_as_index %alloc : memref<4x16xf32> -> index
    %5 = arith.index_cast %intptr_1 : index to i64
    %6 = llvm.inttoptr %5 : i64 to !llvm.ptr
    call @loom_cuda_mgpu_gemm(%0, %c0_i32, %c0_i32, %c1_i32, %c4_i64, %c16_i64, %c16_i64, %2, %4, %6) : (!llvm.ptr, i32, i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
    gpu.launch_func  @f_kernel::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)  args(%c64 : index, %c16 : index, %alloc : memref<4x16xf32>, %arg1 : memref<4x16xf32>)
    return %alloc : memref<4x16xf32>
  }
  gpu.module @f_kernel {
    gpu.func @f_kernel(%arg0: index, %arg1: index, %arg2: memref<4x16xf32>, %arg3: memref<4x16xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %thread_id_x = gpu.thread_id  x
      %0 = arith.cmpi ult, %thread_id_x, %arg0 : index
      scf.if %0 {
        %1 = arith.remsi %thread_id_x, %arg1 : index
        %2 = arith.divsi %thread_id_x, %arg1 : index
        %3 = memref.load %arg2[%2, %1] : memref<4x16xf32>
        %4 = memref.load %arg3[%2, %1] : memref<4x16xf32>
        %5 = math.sqrt %4 : f32
        %6 = math.fma %3, %5, %4 : f32
        memref.store %6, %arg2[%2, %1] : memref<4x16xf32>
      }
      gpu.return
    }
  }
  func.func private @loom_cuda_mgpu_gemm(!llvm.ptr, i32, i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
}

// -----

// Host code that would read device memory is refused by name (a buffer the
// program computes lives on the device; a read of an input argument, which
// is the caller's host memory, stays on the host: kv-cache.mlir).
func.func @reads(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %b = memref.alloc() : memref<4xf32>
  memref.copy %x, %b : memref<4xf32> to memref<4xf32>
  // expected-error @below {{'memref.load' has no GPU lowering (it would run on the host and read device memory)}}
  %v = memref.load %b[%c0] : memref<4xf32>
  return %v : f32
}

// -----

// A call that is not a kernel, cuBLAS or collective call (a layer call).
func.func private @layer(memref<4xf32>)
func.func @calls(%x: memref<4xf32>) {
  // expected-error @below {{'func.call' has no GPU lowering (it would run on the host and read device memory): calls 'layer'; layer calls are not built for CUDA yet (collectives go through loom-gpu-sync-collectives)}}
  call @layer(%x) : (memref<4xf32>) -> ()
  return
}

// -----

// Control flow on the host.
// expected-error @below {{'branches' has control flow on the host: the GPU lowering needs straight-line host code}}
func.func @branches(%c: i1) {
  cf.cond_br %c, ^a, ^b
^a:
  return
^b:
  return
}
