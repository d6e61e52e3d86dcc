//===- Passes.td - the GPU lower phase's passes ------------*- tablegen -*-===//
//
// The lower phase for `loomc --target=cuda` (buildGpuLowerPassPipeline):
// the CPU lowering's loom -> linalg conversion and bufferization, then
// these passes take the program onto one CUDA device (docs/GPU.md,
// "Whole programs on the GPU").
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_GPU_PASSES_TD
#define LOOM_PASSES_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def GpuActivationDtypePass
    : Pass<"loom-gpu-activation-dtype", "mlir::ModuleOp"> {
  let summary = "f16/bf16 tensors where products read or write them, f32 math";
  let description = [{
    On the loom program (after loom-prepare-entry-points): products
    (loom.matmul that goes to cuBLAS, loom.qmatmul with f16, the fused
    attention and its KV cache) take and give `dtype` tensors and
    accumulate in f32; data movement and collectives keep the type of what
    they move; every other op computes in f32, its narrow operands widened
    by a loom.cast that the elementwise fusion puts into the consuming
    kernel. Entry inputs and outputs keep their types; `loom.state`
    arguments (KV caches) take `dtype`. `dtype=f32` changes nothing
    (loomc --gpu-dtype; docs/GPU.md "Activation dtype").
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"f16\"",
           "f16, bf16 or f32 (no change)">,
    Option<"cublas", "cublas", "bool", /*default=*/"true",
           "rank-2 matmuls go to cuBLAS (else they compute in f32)">,
    Option<"fusedAttention", "fused-attention", "bool", /*default=*/"true",
           "attention is lowered fused (else it computes in f32)">,
  ];
}

def GpuFuseElementwisePass
    : Pass<"loom-gpu-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse elementwise chains, never into a contraction";
  let description = [{
    linalg's elementwise fusion (producer into consumer) with one rule
    more than the CPU pipeline's: nothing is fused into a contraction
    (`linalg` matmul-like ops), so that loom-gpu-matmuls-to-cublas still
    finds every matmul as a plain product and gives it to cuBLAS. Each
    chain of elementwise ops (a bias add, an activation, a residual add)
    becomes one linalg.generic, i.e. one kernel.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def GpuMatmulsToCublasPass
    : Pass<"loom-gpu-matmuls-to-cublas", "mlir::ModuleOp"> {
  let summary = "Rank-2 contractions on device buffers become cuBLAS calls";
  let description = [{
    On buffers (after bufferization): every linalg contraction
    `c[m, n] += a[m, k] * b[k, n]` (either operand transposed) of f32, f16
    or bf16 with identity layouts, whose output was filled with zero by the
    op just before, becomes a call
    `loom_cuda_mgpu_gemm(stream, dtype, trans_a, trans_b, m, n, k, a, b, c)`
    (`include/loom/runtime/cuda.h`: cuBLAS, f32 accumulation) and the fill
    is erased. The stream operand is a null placeholder until
    loom-gpu-host-program puts the call on the program's stream. Other
    contractions (batched, strided, mixed types) stay loops: generated
    kernels, correct but slow.
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

def GpuMapParallelLoopsPass
    : Pass<"loom-gpu-map-parallel-loops", "mlir::ModuleOp"> {
  let summary = "Map each outermost scf.parallel onto blocks x threads";
  let description = [{
    Every outermost scf.parallel of a host function is collapsed into one
    dimension, tiled by `block-size` and mapped: tiles to `block_x`,
    elements of a tile to `thread_x` (consecutive threads take consecutive
    elements of the innermost dimension, so loads coalesce), with a guard
    for the last partial tile. convert-parallel-loops-to-gpu then makes
    one gpu.launch of each. Reductions stay sequential loops inside a
    thread. A memref.copy with a strided side (a KV cache's new rows
    written into a subview of the cache) becomes such a loop first.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "threads per block">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::gpu::GPUDialect",
                           "mlir::affine::AffineDialect"];
}

def GpuHostProgramPass : Pass<"loom-gpu-host-program", "mlir::ModuleOp"> {
  let summary = "Device buffers, one stream and the memory plan of each entry";
  let description = [{
    In each entry point (`loom.entry`) after kernel outlining: every
    `memref.alloc` becomes a view of the entry's workspace at an offset
    computed here, `memref.dealloc` disappears, `memref.copy` becomes a
    `gpu.memcpy`; memref inputs are copied into their places in the
    workspace when the function starts, weights and constants made
    resident, and returned buffers are copied back to fresh host buffers.
    All of it, the kernel launches and the cuBLAS calls are chained on one
    stream (one `gpu.async.token` chain, which gpu-to-llvm lowers onto one
    CUDA stream), synchronised once before the return.

    The memory plan: each buffer of a call is live from its alloc (an
    input: the start) to the last top-level op that uses it or a value made
    from it (views, casts, its pointer); buffers are placed greedily
    (largest first, first fit, 256-byte aligned) so that two buffers live
    at once never overlap. The entry gets its workspace from
    `loom_cuda_mgpu_workspace(key, bytes)` once per call (allocated by the
    runtime at the first call and kept), and records
    `loom_gpu_workspace_bytes`, `loom_gpu_peak_bytes` (workspace + resident
    weights), `loom_gpu_upload_bytes` and `loom_gpu_resident_bytes`.
    Dynamic dimensions of the
    inputs are run-time sizes (views of run-time sizes, copies
    of them); every one is assumed at most `max-dim` for the plan (which is
    then a bound, recorded as `loom_gpu_max_dim`), and a buffer whose size
    has no bound from it (or `max-dim` = 0) is refused by name, as is host
    code reading device memory. In kernels, `math.fma`,
    `sqrt`, `rsqrt`, `absf`, `floor`, `ceil` and `trunc` become LLVM/NVPTX
    intrinsics (NVVM would call
    libdevice, which is not linked).
  }];
  let options = [
    Option<"maxDim", "max-dim", "int64_t", /*default=*/"0",
           "largest size of each dynamic input dimension (0: none, refused)">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::LLVM::LLVMDialect", "mlir::math::MathDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuLinkFatbinPass : Pass<"loom-gpu-link-fatbin", "mlir::ModuleOp"> {
  let summary = "One fatbin of the cubins of every chip of each gpu.binary";
  let description = [{
    gpu-module-to-binary{format=bin} leaves one cubin object per
    `#nvvm.target` in each gpu.binary; the host code loads one object.
    This pass runs `fatbinary` (the CUDA toolkit's, from `toolkit` or
    PATH; loomc gives $CUDA_HOME as `toolkit`) to put
    them into one fatbin, which the driver loads choosing the cubin of the
    device's architecture (a chip that is not there: the load fails with
    the runtime's message).
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "CUDA toolkit folder (empty: fatbinary from PATH; loomc gives $CUDA_HOME)">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def GpuSyncCollectivesPass
    : Pass<"loom-gpu-sync-collectives", "mlir::ModuleOp"> {
  let summary = "Collective calls on device buffers, the stream synchronised";
  let description = [{
    After bufferization a collective is a call of the runtime's ABI
    (`loom_rt_all_reduce(ctx, dtype, op, in, out, count, mask)`, ...) on
    the pointers of its buffers, which `loom-gpu-host-program` puts on the
    device. Such a call runs on the host with device pointers: the device
    communicators of the runtime (runtime/cuda/DeviceComm.h; loom-run
    --backend cuda) take them, wait for the rank's stream and return with
    the result complete. This pass marks every such call
    (`loom_gpu_host_sync`), after checking that each pointer operand is a
    buffer's address; `loom-gpu-host-program` then keeps it on the host
    and synchronises the program's stream before it (the input complete)
    and starts the chain again after it.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def GpuDeviceIndexCheckPass
    : Pass<"loom-gpu-device-index-check", "mlir::ModuleOp"> {
  let summary = "Index checks (embedding ids, gather indices) as a kernel "
                "and a check after the step";
  let description = [{
    On tensors, after `loom-convert-loom-to-linalg`: the CPU lowering's
    host loop over an embedding's ids or a `loom.gather`'s run-time indices
    (`loom_rt_index_error` on the first id out of range) would read device
    memory on the host. It becomes a
    kernel that finds the first bad id (position and value, -1 when none),
    the ids clamped for the gather (a bad id reads row 0 / index 0: no read
    outside the table or input), and a `loom_gpu_index_check` call on the
    two values, which
    `loom-gpu-host-program` turns into a 16-byte copy back to the host and,
    after the step's synchronisation, `loom_rt_index_error` (the CPU's
    one-line error) when an id was bad. Such a step returns no output.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect"];
}

def GpuExportUploadConstantsPass
    : Pass<"loom-gpu-export-upload-constants", "mlir::ModuleOp"> {
  let summary = "Exports loom_gpu_upload_constants from the bundle's library";
  let description = [{
    After `loom-pack-entry-points` (which makes every function but the
    `loom_entry_*` wrappers internal): `loom_gpu_upload_constants`, built by
    `loom-gpu-host-program`, is given external linkage again, so that the
    executor can find it with `dlsym` and upload the constants when it
    opens a CUDA bundle instead of at the first call.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def GpuQMatmulsPass : Pass<"loom-gpu-qmatmuls", "mlir::ModuleOp"> {
  let summary = "Quantized matmuls as calls that become generated-kernel launches";
  let description = [{
    On tensors, before `loom-convert-loom-to-linalg`: every `loom.qmatmul`
    becomes a destination-style `loom_cpu.kernel` over (weight bytes, x, y)
    whose body calls a private declaration carrying the kernel spec
    (`loom_gpu_qmatmul`: format, block, mode, scale, activation type, N, K
    and the batch M); the weight argument takes its storage type (the
    GGUF / Loom blocks as they are: device-resident, never dequantized).
    A qmatmul with no generated kernel (bf16 activations, K not a multiple
    of 32, ...), a dynamic K, or a quantized weight also read by another
    op is refused by name at the op. Rows of x that are run-time sizes
    give M = -1 (a run-time M).
  }];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "mlir::tensor::TensorDialect",
                           "loom::lowering::LoomCpuDialect"];
}

def GpuQMatmulLaunchesPass
    : Pass<"loom-gpu-qmatmul-launches", "mlir::ModuleOp"> {
  let summary = "The qmatmul calls become launches of the generated kernels";
  let description = [{
    On buffers, after kernel outlining: each call of a `loom_gpu_qmatmul`
    declaration becomes a `gpu.launch_func` of
    `@loom_qmatmul_kernels::@<base>_gemv<M>` (M <= 8: 128 threads, one
    block per 8 weight rows) or `@<base>_tiled` (256 threads, 64x64
    outputs per block) on the addresses of (w, x, y) and M, as the
    runtime's `loom_cuda_qmatmul` picks them; a run-time M takes
    `@<base>_tiled` with M and the grid's y computed on the host from x's
    sizes; the kernels of every spec
    (lib/Target/GpuTarget/QMatmulKernelGen.cpp) are appended as
    `gpu.module @loom_qmatmul_kernels`.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::math::MathDialect",
                           "mlir::cf::ControlFlowDialect"];
}

def GpuDedupKernelsPass
    : Pass<"loom-gpu-dedup-kernels", "mlir::ModuleOp"> {
  let summary = "Merge gpu.modules whose kernels are identical up to names";
  let description = [{
    After kernel outlining and everything that still edits kernels, before
    NVVM lowering and serialization: gpu.modules that are structurally
    identical (same ops, types, attributes such as `known_block_size`,
    constants and operand structure; locations and the symbol names of the
    module and of what it defines ignored) are merged. The first of each
    class in module order is kept, every `gpu.launch_func` of a duplicate
    is retargeted to the kept module's kernel at the same position, and
    the duplicates are erased, so each distinct kernel is compiled once
    (a model's inline layers outline the same norm, rotary and elementwise
    kernels once per layer). The hash of a name-normalised, location-free
    printed form buckets the modules; a merge needs that text equal and
    the normalised modules equivalent (OperationEquivalence), never the
    hash alone. A gpu.module used other than by launches is left alone.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def GpuEmulateKernelsPass
    : Pass<"loom-gpu-emulate-kernels", "mlir::ModuleOp"> {
  let summary = "Kernels as host functions, for running a CUDA program on a CPU";
  let description = [{
    The emulation target of the GPU lower phase (`format=emu`, `loomc
    --target=cuda --gpu-emulate`; docs/GPU.md, "Emulation"), in place of NVVM
    and serialization: every kernel of every gpu.module becomes a host
    `func.func @__loom_emu_body_<module>__<kernel>` with the kernel's
    arguments and one more, a pointer to twelve i64 (thread ids x, y, z,
    block ids, block sizes, grid sizes) that the emulating driver fills for
    each thread; `gpu.thread_id` and its siblings read it, `gpu.return`
    returns, the NVPTX intrinsics that loom-gpu-host-program put in kernels
    become their math ops again. Each gpu.module becomes a `gpu.binary` of
    the same name whose object is `LOOMEMU1\0<module>\0`: the host code
    loads it as it loads a fatbin, and the emulating driver
    (test/gpu/emu) finds the module's functions in the library holding that
    object. The generated quantized matmul kernels (`loom_qmm_*`, emulated
    thread by thread by the gpu.emulation tests) are not converted: the
    driver computes them from their name. A kernel with anything else of
    the gpu or nvvm dialects (barriers, shuffles, shared memory) is refused
    by name: this target runs threads one after the other.
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::math::MathDialect", "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect", "mlir::NVVM::NVVMDialect"];
}

def GpuEmulateLaunchersPass
    : Pass<"loom-gpu-emulate-launchers", "mlir::ModuleOp"> {
  let summary = "One launcher per emulated kernel, the CUDA parameter ABI";
  let description = [{
    After host code is LLVM (gpu-to-llvm): for every function that
    loom-gpu-emulate-kernels made, an exported
    `llvm.func @__loom_emu_<module>__<kernel>(ptr params, ptr ctx)` that
    reads each argument through `params` as cuLaunchKernel passes them (a
    pointer per parameter, memref descriptors expanded field by field: the
    same expansion as the kernel's) and calls the body for one thread.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // LOOM_PASSES_GPU_PASSES_TD
