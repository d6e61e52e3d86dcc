// A decode-like step with a KV cache (`loom.state`, docs/GPU.md "KV cache on
// the device"): the new row `k` is written into the cache at positions[0],
// and the previous row of the updated cache plus `k` and a weight is the
// output. Prefix HOST, after loom-gpu-host-program: the cache is the device
// copy that loom_cuda_mgpu_state gives for the caller's buffer (its size from
// the caller's descriptor: the context is chosen at load), never allocated,
// copied in or copied out here; the write is a kernel into a subview of that
// device buffer at the position, which is read on the host from the caller's
// `positions` (not uploaded); the read of the previous row is the second
// kernel's operand over the same device buffer. The plan counts 64 cache
// bytes per context position beside a peak without the cache (the
// workspace: k's device copy at 0 and the output at 256, 320 bytes). Prefix FULL,
// the whole pipeline (PTX) with the state call on the runtime's ABI.
// RUN: loom-opt %s --loom-prepare-entry-points=interleave=false --loom-record-entry-points --loom-convert-loom-to-linalg=gemm=false --cse --canonicalize --loom-gpu-fuse-elementwise --loom-approximate-math --canonicalize --loom-bufferize --buffer-deallocation-pipeline --convert-bufferization-to-memref --canonicalize --loom-gpu-matmuls-to-cublas --convert-linalg-to-parallel-loops --loom-gpu-map-parallel-loops --convert-parallel-loops-to-gpu --canonicalize --gpu-kernel-outlining --loom-gpu-host-program --canonicalize | FileCheck %s --check-prefix=HOST
// RUN: loom-opt %s --loom-lower-gpu-pipeline="format=isa chips=sm_90" | FileCheck %s --check-prefix=FULL

// HOST-LABEL: func.func @step(
// HOST-SAME: %[[K:[a-z0-9]+]]: memref<1x2x1x8xf32>, %[[POS:[a-z0-9]+]]: memref<1xi64>, %[[CACHE:[a-z0-9]+]]: memref<1x2x?x8xf32>
// HOST-SAME: loom_gpu_peak_bytes = 384 : i64, loom_gpu_resident_bytes = 64 : i64, loom_gpu_state_bytes_per_position = 64 : i64, loom_gpu_upload_bytes = 64 : i64, loom_gpu_workspace_bytes = 320 : i64
// HOST-NOT: gpu.memcpy {{.*}}%[[CACHE]]
// HOST-NOT: gpu.memcpy {{.*}}%[[POS]]
// HOST: call @loom_cuda_mgpu_workspace(
// HOST: %[[DK:[a-z0-9_]+]] = builtin.unrealized_conversion_cast %{{.+}} to memref<1x2x1x8xf32>
// HOST: gpu.memcpy async [%{{.+}}] %[[DK]], %[[K]]
// HOST: %[[C:.+]] = memref.dim %[[CACHE]], %{{.+}} : memref<1x2x?x8xf32>
// HOST: %[[HOSTPTR:.+]] = memref.extract_aligned_pointer_as_index %[[CACHE]]
// HOST: %[[DEV:.+]] = call @loom_cuda_mgpu_state(%{{.+}}, %{{.+}}) : (!llvm.ptr, i64) -> !llvm.ptr
// HOST: llvm.insertvalue %[[DEV]], %{{.+}}[1]
// HOST: %[[DCACHE:.+]] = builtin.unrealized_conversion_cast %{{.+}} : !llvm.struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)> to memref<1x2x?x8xf32>
// HOST: call @loom_cuda_mgpu_resident(
// HOST: %[[P:.+]] = memref.load %[[POS]][%{{.+}}] : memref<1xi64>
// HOST: %[[P0:.+]] = arith.index_cast %[[P]] : i64 to index
// HOST: %[[ROW:.+]] = memref.subview %[[DCACHE]][0, 0, %[[P0]], 0] [1, 2, 1, 8] [1, 1, 1, 1]
// HOST: gpu.launch_func async [%{{.+}}] @step_kernel::@step_kernel {{.*}} args({{.*}}%[[DK]] : memref<1x2x1x8xf32>, {{.*}}%[[ROW]] : memref<1x2x1x8xf32, strided<[?, ?, 8, 1], offset: ?>>)
// HOST: %[[PREV:.+]] = memref.subview %[[DCACHE]][0, 0, %{{.+}}, 0] [1, 2, 1, 8] [1, 1, 1, 1]
// HOST: gpu.launch_func async [%{{.+}}] @step_kernel_0::@step_kernel {{.*}} args({{.*}}%[[PREV]] : memref<1x2x1x8xf32, strided<[?, ?, 8, 1], offset: ?>>
// HOST-NOT: gpu.alloc {{.*}}memref<1x2x?x8xf32>
// HOST-NOT: gpu.memcpy {{.*}}%[[DCACHE]]
// HOST-NOT: gpu.memcpy {{.*}}%[[CACHE]]
// HOST-NOT: gpu.dealloc {{.*}}%[[DCACHE]]
// HOST: gpu.wait [%{{.+}}]
// HOST-NEXT: return

// The write kernel: the new row stored through the cache subview.
// HOST: gpu.module @step_kernel
// HOST: gpu.func @step_kernel({{.*}}%{{.+}}: memref<1x2x1x8xf32>, %{{.+}}: index, %[[DST:.+]]: memref<1x2x1x8xf32, strided<[?, ?, 8, 1], offset: ?>>) kernel
// HOST: %[[V:.+]] = memref.load
// HOST: memref.store %[[V]], %[[DST]][

// FULL-LABEL: llvm.func internal @step(
// FULL-SAME: loom_gpu_state_bytes_per_position = 64 : i64
// FULL: llvm.call @loom_cuda_mgpu_state(
// FULL-COUNT-2: gpu.launch_func
// FULL: llvm.call @mgpuStreamSynchronize(
// FULL: llvm.func @loom_cuda_mgpu_state(!llvm.ptr, i64) -> !llvm.ptr
func.func @step(%k: tensor<1x2x1x8xf32> {loom.name = "k"},
                %pos: tensor<1xi64> {loom.name = "positions"},
                %cache: tensor<1x2x?x8xf32> {loom.name = "cache_key_0", loom.state = "kv_cache"})
    -> (tensor<1x2x1x8xf32> {loom.name = "y"}) {
  %w = loom.weight "w" : tensor<1x2x1x8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tensor.extract %pos[%c0] : tensor<1xi64>
  %p0 = arith.index_cast %p : i64 to index
  %u = tensor.insert_slice %k into %cache[0, 0, %p0, 0] [1, 2, 1, 8] [1, 1, 1, 1] : tensor<1x2x1x8xf32> into tensor<1x2x?x8xf32>
  %back = arith.subi %p0, %c1 : index
  %prev = arith.maxsi %back, %c0 : index
  %r = tensor.extract_slice %u[0, 0, %prev, 0] [1, 2, 1, 8] [1, 1, 1, 1] : tensor<1x2x?x8xf32> to tensor<1x2x1x8xf32>
  %s = loom.add %r, %k : tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  %y = loom.add %s, %w : tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32> -> tensor<1x2x1x8xf32>
  return %y : tensor<1x2x1x8xf32>
}
