// loom-gpu-emulate-kernels alone: each kernel becomes a private host
// function with one argument more (the thread's twelve i64: thread ids,
// block ids, block sizes, grid sizes), ids read from it, gpu.return a
// return, the NVPTX square root the math op again; each gpu.module a
// gpu.binary whose object names it ("LOOMEMU1\0<module>\0"). A quantized
// matmul module is not converted (the emulator computes it from its
// name). Barriers, shuffles and shared memory are refused by name.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-gpu-emulate-kernels | FileCheck %s
// The whole pipeline with format=emu: one exported launcher per kernel,
// reading its expanded parameters through cuLaunchKernel's array.
// RUN: loom-opt %S/Inputs/small-mlp.mlir --loom-lower-gpu-pipeline="format=emu cublas=false" | FileCheck %s --check-prefix=PIPE
// PIPE-NOT: gpu.module
// PIPE: llvm.func internal @__loom_emu_body_mlp_kernel__mlp_kernel(
// PIPE: gpu.binary @mlp_kernel [#gpu.object<#nvvm.target, bin = "LOOMEMU1\00mlp_kernel\00">]
// PIPE: llvm.func @__loom_emu_mlp_kernel__mlp_kernel(%[[P:.*]]: !llvm.ptr, %[[C:.*]]: !llvm.ptr) {
// PIPE: %[[A:.*]] = llvm.load %[[P]] : !llvm.ptr -> !llvm.ptr
// PIPE: llvm.load %[[A]] : !llvm.ptr -> i64
// PIPE: %[[S:.*]] = llvm.getelementptr %[[P]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// PIPE: %[[B:.*]] = llvm.load %[[S]] : !llvm.ptr -> !llvm.ptr
// PIPE: llvm.load %[[B]] : !llvm.ptr -> i64
// PIPE: llvm.call @__loom_emu_body_mlp_kernel__mlp_kernel({{.*}}, %[[C]])

// CHECK-LABEL: func.func private @__loom_emu_body_k__k(
// CHECK-SAME: %{{.*}}: memref<?xf32>, %{{.*}}: index, %[[CTX:.*]]: !llvm.ptr)
// CHECK-SAME: loom_gpu_emu_kernel
// CHECK: %[[B:.*]] = llvm.getelementptr %[[CTX]][3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: llvm.load %[[B]] : !llvm.ptr -> i64
// CHECK: %[[T:.*]] = llvm.getelementptr %[[CTX]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: llvm.load %[[T]] : !llvm.ptr -> i64
// CHECK: %[[D:.*]] = llvm.getelementptr %[[CTX]][6] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: math.sqrt
// CHECK-NOT: llvm.call_intrinsic
// CHECK: return
// CHECK: gpu.binary @k [#gpu.object<#nvvm.target, bin = "LOOMEMU1\00k\00">]
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  func.func @f(%x: memref<?xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%x : memref<?xf32>, %n : index)
    return
  }
  gpu.module @k {
    gpu.func @k(%x: memref<?xf32>, %n: index) kernel {
      %b = gpu.block_id x
      %t = gpu.thread_id x
      %d = gpu.block_dim x
      %0 = arith.muli %b, %d : index
      %i = arith.addi %0, %t : index
      %in = arith.cmpi slt, %i, %n : index
      scf.if %in {
        %v = memref.load %x[%i] : memref<?xf32>
        %r = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%v) : (f32) -> f32
        memref.store %r, %x[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}

// -----

// CHECK-LABEL: module
// CHECK: gpu.binary @loom_qmatmul_kernels [#gpu.object<#nvvm.target, bin = "LOOMEMU1\00loom_qmatmul_kernels\00">]
// CHECK-NOT: __loom_emu_body
module attributes {gpu.container_module} {
  gpu.module @loom_qmatmul_kernels {
    gpu.func @loom_qmm_q8_0_n32_k64_f32_gemv1(%w: !llvm.ptr<1>) kernel {
      gpu.barrier
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @b {
    gpu.func @b(%x: memref<4xf32>) kernel {
      // expected-error @below {{kernel 'b' uses 'gpu.barrier', which the emulation (one thread after the other) cannot run}}
      gpu.barrier
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @s {
    // expected-error @below {{kernel 's' uses shared or private memory attributions}}
    gpu.func @s(%x: memref<4xf32>) workgroup(%w : memref<4xf32, #gpu.address_space<workgroup>>) kernel {
      gpu.return
    }
  }
}
