// The memory plan of loom-gpu-host-program: every buffer of a call (the
// device copy of the input and the allocations) at an offset of one
// workspace per entry, from the buffers' live intervals in program order.
// The input %x has a dynamic dimension bounded by max-dim=64 (4096 bytes at
// the bound); %a and %b are computed from it and %c is static:
//   upload  4096  live until k1        offset 0
//   %a      4096  alloc .. k2          offset 4096 (overlaps the upload)
//   %b      4096  alloc .. k3          offset 0    (the upload is dead)
//   %c       256  alloc .. the return  offset 4096 (%a is dead; %b is not)
// so the workspace is 8192 bytes, the peak that and no weights. Each
// buffer is a view at base + offset with its run-time sizes; the deallocs
// are gone and nothing is allocated or freed per call.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-gpu-host-program=max-dim=64 | FileCheck %s

// CHECK-LABEL: func.func @plan(
// CHECK-SAME: loom_gpu_max_dim = 64 : i64, loom_gpu_peak_bytes = 8192 : i64, loom_gpu_resident_bytes = 0 : i64, loom_gpu_upload_bytes = 4096 : i64, loom_gpu_workspace_bytes = 8192 : i64
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[KEY:.*]] = llvm.mlir.addressof @__loom_gpu_workspace_plan : !llvm.ptr
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(8192 : i64) : i64
// CHECK: %[[BASE:.*]] = call @loom_cuda_mgpu_workspace(%[[KEY]], %[[BYTES]]) : (!llvm.ptr, i64) -> !llvm.ptr
// The upload: at the base, with the input's run-time rows.
// CHECK: %[[N:.*]] = memref.dim %[[X:.*]], %c0
// CHECK: %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: llvm.insertvalue %[[BASE]], %{{.*}}[1]
// CHECK: llvm.insertvalue %[[NI]], %{{.*}}[3, 0]
// CHECK: %[[DX:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x16xf32>
// CHECK: gpu.memcpy async [%[[T0]]] %[[DX]], %[[X]]
// %a at 4096.
// CHECK: %[[O4096:.*]] = llvm.mlir.constant(4096 : i64) : i64
// CHECK: %[[PA:.*]] = llvm.getelementptr %[[BASE]][%[[O4096]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.insertvalue %[[PA]], %{{.*}}[1]
// CHECK: %[[A:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x16xf32>
// CHECK: gpu.launch_func async {{.*}} @k1::@k1 {{.*}} args(%[[DX]] : memref<?x16xf32>, %[[A]] : memref<?x16xf32>)
// %b at 0, the upload's place.
// CHECK-NOT: llvm.getelementptr
// CHECK: llvm.insertvalue %[[BASE]], %{{.*}}[1]
// CHECK: %[[B:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x16xf32>
// CHECK: gpu.launch_func async {{.*}} @k2::@k2 {{.*}} args(%[[A]] : memref<?x16xf32>, %[[B]] : memref<?x16xf32>)
// %c at 4096, %a's place.
// CHECK: %[[O4096C:.*]] = llvm.mlir.constant(4096 : i64) : i64
// CHECK: %[[PC:.*]] = llvm.getelementptr %[[BASE]][%[[O4096C]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.insertvalue %[[PC]], %{{.*}}[1]
// CHECK: %[[C:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<4x16xf32>
// CHECK: gpu.launch_func async {{.*}} @k3::@k3 {{.*}} args(%[[B]] : memref<?x16xf32>, %[[C]] : memref<4x16xf32>)
// CHECK-NOT: gpu.dealloc
// CHECK-NOT: gpu.alloc
// CHECK: %[[Y:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
// CHECK: %[[T:.*]] = gpu.memcpy async [%{{.*}}] %[[Y]], %[[C]]
// CHECK-NEXT: gpu.wait [%[[T]]]
// CHECK-NEXT: return %[[Y]] : memref<4x16xf32>
// CHECK: llvm.mlir.global internal @__loom_gpu_workspace_plan(0 : i8)
// CHECK: func.func private @loom_cuda_mgpu_workspace(!llvm.ptr, i64) -> !llvm.ptr
module attributes {gpu.container_module} {
  func.func @plan(%x: memref<?x16xf32>) -> memref<4x16xf32> attributes {loom.entry} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x16xf32>
    %a = memref.alloc(%n) : memref<?x16xf32>
    gpu.launch_func @k1::@k1 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<?x16xf32>, %a : memref<?x16xf32>)
    %b = memref.alloc(%n) : memref<?x16xf32>
    gpu.launch_func @k2::@k2 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?x16xf32>, %b : memref<?x16xf32>)
    %c = memref.alloc() : memref<4x16xf32>
    gpu.launch_func @k3::@k3 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<?x16xf32>, %c : memref<4x16xf32>)
    memref.dealloc %a : memref<?x16xf32>
    memref.dealloc %b : memref<?x16xf32>
    return %c : memref<4x16xf32>
  }
  gpu.module @k1 {
    gpu.func @k1(%p: memref<?x16xf32>, %q: memref<?x16xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @k2 {
    gpu.func @k2(%p: memref<?x16xf32>, %q: memref<?x16xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @k3 {
    gpu.func @k3(%p: memref<?x16xf32>, %q: memref<4x16xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// A buffer's pointer taken early (CSE may hoist it) keeps the buffer live
// until the call that uses the pointer: %p's pointer is taken before %q is
// allocated, so %q may not take %p's place although no op names %p after
// the pointer.
// CHECK-LABEL: func.func @pointer(
// CHECK-SAME: loom_gpu_workspace_bytes = 512 : i64
module attributes {gpu.container_module} {
  func.func @pointer() -> memref<4x16xf32> attributes {loom.entry} {
    %c1 = arith.constant 1 : index
    %c0_i32 = arith.constant 0 : i32
    %c4_i64 = arith.constant 4 : i64
    %z = llvm.mlir.zero : !llvm.ptr
    %p = memref.alloc() : memref<4x16xf32>
    %ip = memref.extract_aligned_pointer_as_index %p : memref<4x16xf32> -> index
    %i = arith.index_cast %ip : index to i64
    %pp = llvm.inttoptr %i : i64 to !llvm.ptr
    %q = memref.alloc() : memref<4x16xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%q : memref<4x16xf32>)
    call @loom_cuda_mgpu_gemm(%z, %c0_i32, %c0_i32, %c0_i32, %c4_i64, %c4_i64, %c4_i64, %pp, %pp, %pp) : (!llvm.ptr, i32, i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
    memref.dealloc %p : memref<4x16xf32>
    return %q : memref<4x16xf32>
  }
  gpu.module @k {
    gpu.func @k(%q: memref<4x16xf32>) kernel {
      gpu.return
    }
  }
  func.func private @loom_cuda_mgpu_gemm(!llvm.ptr, i32, i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
}

// -----

// A buffer with no bound from max-dim is refused by name.
module attributes {gpu.container_module} {
  func.func @unbounded(%x: memref<?xf32>, %s: memref<1xindex>) attributes {loom.entry} {
    %c0 = arith.constant 0 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %m = arith.muli %n, %n : index
    %r = arith.remui %m, %n : index
    // expected-error @+1 {{buffer of type 'memref<?xf32>' has a run-time size with no compile-time bound from the inputs' bound 64}}
    %a = memref.alloc(%r) : memref<?xf32>
    memref.dealloc %a : memref<?xf32>
    return
  }
}
