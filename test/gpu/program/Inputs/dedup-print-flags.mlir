// loom-gpu-dedup-kernels under printing options that would hide the
// difference (loom-gpu-dedup-kernels.mlir's FLAGS run): other_const differs
// from z_kernel in a scalar constant (hidden by skipped regions), v2 from
// v1 in one element of a vector constant (hidden by elided constants); a
//_kernel and v3 are duplicates.
module attributes {gpu.container_module} {
  func.func @f(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @z_kernel::@z_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @a_kernel::@a_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @other_const::@other_const blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @v1::@v1 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @v2::@v2 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @v3::@v3 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @z_kernel {
    gpu.func @z_kernel(%arg0: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %c = arith.constant 2.0 : f32
      memref.store %c, %arg0[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @a_kernel {
    gpu.func @a_kernel(%arg0: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %c = arith.constant 2.0 : f32
      memref.store %c, %arg0[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @other_const {
    gpu.func @other_const(%arg0: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %c = arith.constant 3.0 : f32
      memref.store %c, %arg0[%i] : memref<4xf32>
      gpu.return
    }
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
