// A whole MLIR GPU program (host + kernel) lowered with upstream passes
// only: gpu-to-llvm turns the host side into calls to mgpu* functions, which
// Loom's runtime provides (runtime/cuda/Mgpu.cpp) instead of upstream's
// libmlir_cuda_runtime.so. main() returns 0 when the kernel added 1 to every
// element. See test/gpu/CMakeLists.txt (loom-gpu-mlir-host).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add_one(%p: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %p[%i] : memref<256xf32>
      %c = arith.constant 1.0 : f32
      %r = arith.addf %v, %c : f32
      memref.store %r, %p[%i] : memref<256xf32>
      gpu.return
    }
  }
  func.func @main() -> i32 {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %h = memref.alloc() : memref<256xf32>
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%h : memref<256xf32>)
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] () : memref<256xf32>
    %t2 = gpu.memcpy async [%t1] %d, %h : memref<256xf32>, memref<256xf32>
    %t3 = gpu.launch_func async [%t2] @kernels::@add_one blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%d : memref<256xf32>)
    %t4 = gpu.memcpy async [%t3] %h, %d : memref<256xf32>, memref<256xf32>
    %t5 = gpu.dealloc async [%t4] %d : memref<256xf32>
    gpu.wait [%t5]
    %c255 = arith.constant 255 : index
    %v = memref.load %h[%c255] : memref<256xf32>
    %one = arith.constant 1.0 : f32
    %ok = arith.cmpf oeq, %v, %one : f32
    %r0 = arith.constant 0 : i32
    %r1 = arith.constant 1 : i32
    %r = arith.select %ok, %r0, %r1 : i32
    return %r : i32
  }
}
