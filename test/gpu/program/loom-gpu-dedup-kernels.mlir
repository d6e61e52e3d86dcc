// loom-gpu-dedup-kernels alone: gpu.modules identical up to their names
// (and locations) are merged into the first one, their launches
// retargeted; one constant, one attribute, one operand order or a device
// function's body apart keeps them apart. The output does not depend on
// anything but the input (run twice, the same text; run on its own output,
// nothing more to merge).
// RUN: loom-opt %s --split-input-file --loom-gpu-dedup-kernels | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-gpu-dedup-kernels > %t.1
// RUN: loom-opt %s --split-input-file --loom-gpu-dedup-kernels > %t.2
// RUN: diff %t.1 %t.2
// RUN: loom-opt %t.1 --split-input-file --loom-gpu-dedup-kernels > %t.3
// RUN: diff %t.1 %t.3
// Printing options do not decide identity (skipped regions, elided
// constants): what differs stays apart.
// RUN: loom-opt %S/Inputs/dedup-print-flags.mlir --loom-gpu-dedup-kernels --mlir-elide-elementsattrs-if-larger=1 --mlir-print-skip-regions --mlir-print-debuginfo --emit-bytecode | loom-opt | FileCheck %s --check-prefix=FLAGS
// FLAGS: gpu.launch_func @z_kernel::@z_kernel blocks
// FLAGS-NEXT: gpu.launch_func @z_kernel::@z_kernel blocks
// FLAGS-NEXT: gpu.launch_func @other_const::@other_const blocks
// FLAGS-NEXT: gpu.launch_func @v1::@v1 blocks
// FLAGS-NEXT: gpu.launch_func @v2::@v2 blocks
// FLAGS-NEXT: gpu.launch_func @v1::@v1 blocks
// FLAGS: gpu.module @z_kernel {
// FLAGS: gpu.module @other_const {
// FLAGS: gpu.module @v1 {
// FLAGS: gpu.module @v2 {
// FLAGS-NOT: gpu.module

// In the pipeline (loom-lower-gpu-pipeline): two identical layers inline,
// each a cuBLAS product (both: the second's zeros are a copy of the
// first's, CSE having merged the two fills) and a GELU kernel; the second
// layer's GELU kernel is the first's, so one kernel is compiled.
// RUN: loom-opt %S/Inputs/dedup-two-layers.mlir --loom-lower-gpu-pipeline="format=isa chips=sm_90" | FileCheck %s --check-prefix=PIPE
// PIPE: llvm.call @loom_cuda_mgpu_gemm(
// PIPE: gpu.launch_func {{.*}} @f_kernel::@f_kernel blocks
// PIPE: llvm.call @loom_cuda_mgpu_gemm(
// PIPE: gpu.launch_func {{.*}} @f_kernel::@f_kernel blocks
// PIPE-NOT: gpu.launch_func
// PIPE-COUNT-1: gpu.binary @f_kernel
// PIPE-NOT: gpu.binary

// Identical kernels (different names, locations): the first kept (z_kernel,
// though later in alphabetical order), a_kernel's launch retargeted to it.
// Kernels differing in one constant (other_const), one attribute
// (other_block) or the order of operands (other_order) stay.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @f(
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: gpu.launch_func @z_kernel::@z_kernel blocks in (%[[C1]], %[[C1]], %[[C1]]) threads in (%[[C1]], %[[C1]], %[[C1]]) args(%{{.*}} : memref<256xf32>)
// CHECK-NEXT: gpu.launch_func @z_kernel::@z_kernel blocks
// CHECK-NEXT: gpu.launch_func @other_const::@other_const blocks
// CHECK-NEXT: gpu.launch_func @other_block::@other_block blocks
// CHECK-NEXT: gpu.launch_func @other_order::@other_order blocks
// CHECK-NEXT: gpu.launch_func @z_kernel::@z_kernel blocks
// CHECK-NEXT: return
// CHECK: gpu.module @z_kernel {
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK-NOT: gpu.module @a_kernel
// CHECK-NOT: gpu.module @b_kernel
// CHECK: gpu.module @other_const {
// CHECK: arith.constant 3.000000e+00 : f32
// CHECK: gpu.module @other_block {
// CHECK: gpu.module @other_order {
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  func.func @f(%x: memref<256xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @z_kernel::@z_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @a_kernel::@a_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @other_const::@other_const blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @other_block::@other_block blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @other_order::@other_order blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @b_kernel::@b_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    return
  }
  gpu.module @z_kernel {
    gpu.func @z_kernel(%arg0: memref<256xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %i = gpu.thread_id x
      %c = arith.constant 2.0 : f32
      %v = memref.load %arg0[%i] : memref<256xf32>
      %s = arith.subf %v, %c : f32
      memref.store %s, %arg0[%i] : memref<256xf32>
      gpu.return
    } loc("layer0.mlir":1:1)
  } loc("layer0.mlir":1:1)
  gpu.module @a_kernel {
    gpu.func @a_kernel(%arg0: memref<256xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %i = gpu.thread_id x loc("layer1.mlir":2:2)
      %c = arith.constant 2.0 : f32 loc("layer1.mlir":3:3)
      %v = memref.load %arg0[%i] : memref<256xf32>
      %s = arith.subf %v, %c : f32
      memref.store %s, %arg0[%i] : memref<256xf32>
      gpu.return
    } loc("layer1.mlir":1:1)
  } loc("layer1.mlir":1:1)
  gpu.module @other_const {
    gpu.func @other_const(%arg0: memref<256xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %i = gpu.thread_id x
      %c = arith.constant 3.0 : f32
      %v = memref.load %arg0[%i] : memref<256xf32>
      %s = arith.subf %v, %c : f32
      memref.store %s, %arg0[%i] : memref<256xf32>
      gpu.return
    }
  }
  gpu.module @other_block {
    gpu.func @other_block(%arg0: memref<256xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %i = gpu.thread_id x
      %c = arith.constant 2.0 : f32
      %v = memref.load %arg0[%i] : memref<256xf32>
      %s = arith.subf %v, %c : f32
      memref.store %s, %arg0[%i] : memref<256xf32>
      gpu.return
    }
  }
  gpu.module @other_order {
    gpu.func @other_order(%arg0: memref<256xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %i = gpu.thread_id x
      %c = arith.constant 2.0 : f32
      %v = memref.load %arg0[%i] : memref<256xf32>
      %s = arith.subf %c, %v : f32
      memref.store %s, %arg0[%i] : memref<256xf32>
      gpu.return
    }
  }
  gpu.module @b_kernel {
    gpu.func @b_kernel(%arg0: memref<256xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %i = gpu.thread_id x
      %c = arith.constant 2.0 : f32
      %v = memref.load %arg0[%i] : memref<256xf32>
      %s = arith.subf %v, %c : f32
      memref.store %s, %arg0[%i] : memref<256xf32>
      gpu.return
    }
  }
}

// -----

// Modules of several symbols (the qmatmul kernels' shape; a device
// function called by a kernel): names are matched by position, so each
// launch of the duplicate goes to the kept module's kernel in the same
// place, and the helper's name does not matter. A helper with another
// body keeps its module apart.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @g(
// CHECK: gpu.launch_func @two::@first blocks
// CHECK-NEXT: gpu.launch_func @two::@second blocks
// CHECK-NEXT: gpu.launch_func @two::@second blocks
// CHECK-NEXT: gpu.launch_func @two::@first blocks
// CHECK-NEXT: gpu.launch_func @two_other_helper::@x blocks
// CHECK: gpu.module @two {
// CHECK: gpu.module @two_other_helper {
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  func.func @g(%x: memref<256xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @two::@first blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @two::@second blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @two_copy::@y blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @two_copy::@x blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @two_other_helper::@x blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    return
  }
  gpu.module @two {
    func.func @helper(%v: f32) -> f32 {
      %s = arith.mulf %v, %v : f32
      return %s : f32
    }
    gpu.func @first(%arg0: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<256xf32>
      %s = func.call @helper(%v) : (f32) -> f32
      memref.store %s, %arg0[%i] : memref<256xf32>
      gpu.return
    }
    gpu.func @second(%arg0: memref<256xf32>) kernel {
      %i = gpu.thread_id y
      %v = memref.load %arg0[%i] : memref<256xf32>
      memref.store %v, %arg0[%i] : memref<256xf32>
      gpu.return
    }
  }
  gpu.module @two_copy {
    func.func @sq(%v: f32) -> f32 {
      %s = arith.mulf %v, %v : f32
      return %s : f32
    }
    gpu.func @x(%arg0: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<256xf32>
      %s = func.call @sq(%v) : (f32) -> f32
      memref.store %s, %arg0[%i] : memref<256xf32>
      gpu.return
    }
    gpu.func @y(%arg0: memref<256xf32>) kernel {
      %i = gpu.thread_id y
      %v = memref.load %arg0[%i] : memref<256xf32>
      memref.store %v, %arg0[%i] : memref<256xf32>
      gpu.return
    }
  }
  gpu.module @two_other_helper {
    func.func @helper(%v: f32) -> f32 {
      %s = arith.addf %v, %v : f32
      return %s : f32
    }
    gpu.func @x(%arg0: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %arg0[%i] : memref<256xf32>
      %s = func.call @helper(%v) : (f32) -> f32
      memref.store %s, %arg0[%i] : memref<256xf32>
      gpu.return
    }
    gpu.func @y(%arg0: memref<256xf32>) kernel {
      %i = gpu.thread_id y
      %v = memref.load %arg0[%i] : memref<256xf32>
      memref.store %v, %arg0[%i] : memref<256xf32>
      gpu.return
    }
  }
}

// -----

// A gpu.module named by anything but a launch (here an attribute of the
// host function) is left alone, duplicate or not; a module nobody launches
// is merged like any other.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @h(%{{.*}}: memref<256xf32>) attributes {ref = @pinned}
// CHECK-NEXT: arith.constant
// CHECK-NEXT: gpu.launch_func @first::@first blocks
// CHECK-NEXT: gpu.launch_func @pinned::@pinned blocks
// CHECK: gpu.module @first {
// CHECK: gpu.module @pinned {
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  func.func @h(%x: memref<256xf32>) attributes {ref = @pinned} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @first::@first blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    gpu.launch_func @pinned::@pinned blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    return
  }
  gpu.module @first {
    gpu.func @first(%arg0: memref<256xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @pinned {
    gpu.func @pinned(%arg0: memref<256xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @unlaunched {
    gpu.func @unlaunched(%arg0: memref<256xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// Constants of many elements (which printing may elide) differing in one
// element stay apart; equal ones merge.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.launch_func @v1::@v1 blocks
// CHECK-NEXT: gpu.launch_func @v2::@v2 blocks
// CHECK-NEXT: gpu.launch_func @v1::@v1 blocks
// CHECK: gpu.module @v1 {
// CHECK: gpu.module @v2 {
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  func.func @v(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @v1::@v1 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @v2::@v2 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @v3::@v3 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @v1 {
    gpu.func @v1(%arg0: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %t = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
      vector.store %t, %arg0[%c0] : memref<4xf32>, vector<4xf32>
      gpu.return
    }
  }
  gpu.module @v2 {
    gpu.func @v2(%arg0: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %t = arith.constant dense<[1.0, 2.0, 3.0, 5.0]> : vector<4xf32>
      vector.store %t, %arg0[%c0] : memref<4xf32>, vector<4xf32>
      gpu.return
    }
  }
  gpu.module @v3 {
    gpu.func @v3(%arg0: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %t = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
      vector.store %t, %arg0[%c0] : memref<4xf32>, vector<4xf32>
      gpu.return
    }
  }
}
