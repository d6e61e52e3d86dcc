// Input of loom-gpu-sync-collectives.mlir's ALONE run: runtime collective
// calls on buffer addresses, as loom-bufferize emits them.

// Every communication call is marked; other calls are not.
// ALONE-LABEL: func.func @marked(
// ALONE: call @loom_rt_all_reduce({{.*}}) {loom_gpu_host_sync} :
// ALONE: call @loom_rt_all_gather({{.*}}) {loom_gpu_host_sync} :
// ALONE: call @other(%{{.*}}) :
// ALONE-NOT: loom_gpu_host_sync
// ALONE: return
func.func private @loom_rt_all_reduce(!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, i64, i64)
func.func private @loom_rt_all_gather(!llvm.ptr, i32, !llvm.ptr, !llvm.ptr, i64, i64, i64)
func.func private @other(!llvm.ptr)
func.func @marked(%ctx: !llvm.ptr, %x: memref<4x16xf32>) -> memref<4x16xf32> {
  %out = memref.alloc() : memref<4x16xf32>
  %g = memref.alloc() : memref<8x16xf32>
  %pi = memref.extract_aligned_pointer_as_index %x : memref<4x16xf32> -> index
  %po = memref.extract_aligned_pointer_as_index %out : memref<4x16xf32> -> index
  %pg = memref.extract_aligned_pointer_as_index %g : memref<8x16xf32> -> index
  %ii = arith.index_cast %pi : index to i64
  %io = arith.index_cast %po : index to i64
  %ig = arith.index_cast %pg : index to i64
  %in = llvm.inttoptr %ii : i64 to !llvm.ptr
  %o = llvm.inttoptr %io : i64 to !llvm.ptr
  %go = llvm.inttoptr %ig : i64 to !llvm.ptr
  %dt = arith.constant 0 : i32
  %op = arith.constant 0 : i32
  %n = arith.constant 64 : i64
  %mask = arith.constant 1 : i64
  %dim = arith.constant 0 : i64
  call @loom_rt_all_reduce(%ctx, %dt, %op, %in, %o, %n, %mask) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
  call @loom_rt_all_gather(%ctx, %dt, %o, %go, %n, %mask, %dim) : (!llvm.ptr, i32, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
  call @other(%o) : (!llvm.ptr) -> ()
  memref.dealloc %g : memref<8x16xf32>
  return %out : memref<4x16xf32>
}

// -----

// A pointer that comes in as an argument is host memory: refused.
func.func private @loom_rt_all_reduce(!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, i64, i64)
func.func @host_pointer(%ctx: !llvm.ptr, %in: !llvm.ptr, %out: !llvm.ptr) {
  %dt = arith.constant 0 : i32
  %n = arith.constant 64 : i64
  // expected-error @below {{'loom_rt_all_reduce' operand 3 is not the address of a buffer of the program: no GPU lowering}}
  call @loom_rt_all_reduce(%ctx, %dt, %dt, %in, %out, %n, %n) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, i64, i64) -> ()
  return
}

// -----

// A call that does not match the ABI's row is refused by name.
func.func private @loom_rt_all_reduce(!llvm.ptr, i32)
func.func @wrong_arity(%ctx: !llvm.ptr) {
  %dt = arith.constant 0 : i32
  // expected-error @below {{'loom_rt_all_reduce' does not match the runtime ABI's row}}
  call @loom_rt_all_reduce(%ctx, %dt) : (!llvm.ptr, i32) -> ()
  return
}
