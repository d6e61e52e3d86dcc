//===- Passes.td - the lower phase's passes ----------------*- tablegen -*-===//

#ifndef LOOM_PASSES_LOWERING_PASSES_TD
#define LOOM_PASSES_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrepareEntryPointsPass : Pass<"loom-prepare-entry-points", "mlir::ModuleOp"> {
  let summary = "Give entry points the runtime ABI: context first, weights last";
  let description = [{
    Every public function with a body becomes an entry point of the bundle:
    its first argument becomes the rank's `loom_rt_ctx *` (an `!llvm.ptr`),
    every `loom.weight` it uses becomes a trailing argument carrying a
    `loom.weight` argument attribute (name and storage), and the function is
    marked `llvm.emit_c_interface`. Private functions must not use weights.

    A quantized weight whose every use is a `loom.qmatmul` kernel with int8
    activations, and that has at least 8 rows, is given the interleaved
    layout
    (docs/QUANTIZE.md): `interleave = {rows = 8, block_bytes, fields,
    field_bytes, unit_bytes}` in its `loom.weight` argument attribute. The
    bundle records it, the launcher repacks the weight at load and the
    lowering generates the kernels that read it.
  }];
  let options = [
    Option<"interleave", "interleave", "bool", /*default=*/"true",
           "give the weights of int8-activation qmatmul kernels the "
           "interleaved layout">,
    Option<"qmatmul", "qmatmul", "std::string", /*default=*/"\"\"",
           "how every loom.qmatmul lowers, overriding the op's "
           "quant_activations: f32, i8, i8x3 (generated kernels) or "
           "dequant (dequantize + f32 GEMM); give loom-convert-loom-to-linalg "
           "the same">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def OutlineRepeatedLayersPass
    : Pass<"loom-outline-repeated-layers", "mlir::ModuleOp"> {
  let summary = "One private function per distinct repeated layer";
  let description = [{
    In every entry point (`loom.entry`, after loom-prepare-entry-points),
    finds the run of consecutive, structurally identical op ranges that
    covers most ops (then the shortest range), outlines the range into a
    private function marked `loom.layer` and LLVM `noinline` (the
    `passthrough` attribute that func-to-llvm keeps), and replaces each
    repeat by a `func.call`; then looks again in what is left, so layers of
    several kinds each get their function. Equal layer functions of two
    entry points are one function.

    Two ranges are repeats when their ops match one for one: op names,
    attributes and properties (constant values, shapes, quantization,
    meshes and axes of collectives), operand and result types; and their
    dataflow matches: an operand made inside the range comes from the same
    op and result in both, values from outside appear in the same pattern
    of first uses, constants from outside are equal (they are
    rematerialised in the function), and weight arguments carry the same
    `interleave` layout of their `loom.weight` attribute. Ops with regions
    never take part. The function takes the runtime context first (the
    caller's argument 0), then the values from outside the range in order
    of first use (weight arguments keep their `loom.weight` attribute), and
    returns the values used after any repeat. Only ranges of consecutive
    ops are found: a layer whose ops are interleaved with another's is left
    as it is.
  }];
  let options = [
    Option<"minOps", "min-ops", "unsigned", /*default=*/"6",
           "the fewest ops of a range worth a function of its own">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def ConvertLoomToLinalgPass
    : Pass<"loom-convert-loom-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower loom primitives to linalg, tensor and arith on tensors";
  let description = [{
    Elementwise ops with numpy broadcasting, reductions, matmuls, data
    movement and casts become linalg.generic / tensor ops; composite ops
    (softmax, rms_norm, layer_norm, rotary, attention with grouped KV heads,
    masks and caches) become sequences of them. Collectives and
    point-to-point ops are checked (a runtime context, usable mesh axes and
    dtypes) and stay, `loom.all_to_all` in its contiguous form (split and
    concat on dimension 0, between reshapes and transposes): loom-bufferize
    turns them into runtime calls on buffers. Needs
    loom-prepare-entry-points (the context argument).

    The quantized matmul kernels use the instructions of the module's
    `loom.target` (`#loom.cpu_target`): AVX512-VNNI when it has
    `avx512vnni` and `avx512vl`, else AVX2's byte dot products when it has
    `avx2`, else generic vector code (also without the attribute). The
    output depends only on the input and the options, never on the host.
  }];
  let options = [
    Option<"qmatmul", "qmatmul", "std::string", /*default=*/"\"\"",
           "how every loom.qmatmul lowers, overriding the op's "
           "quant_activations: f32, i8, i8x3 (generated kernels) or "
           "dequant (dequantize + f32 GEMM); give loom-prepare-entry-points "
           "the same">,
    Option<"gemm", "gemm", "bool", /*default=*/"true",
           "call the runtime's GEMM for large f32 matmuls (false: generate "
           "every matmul, for A/B measurements and debugging)">,
    Option<"fusedAttention", "fused-attention", "bool", /*default=*/"false",
           "each f32 loom.attention as two loop nests with an online "
           "softmax over key chunks (no scores buffer: the GPU lowering's "
           "choice) instead of products around a softmax">,
    Option<"qmmTile", "qmm-tile", "std::string", /*default=*/"\"\"",
           "register tile of the quantized matmul kernels, MRxNR2xNR1 "
           "(batched rows x batched columns x batch-1 columns; tuning; "
           "empty: the kernels' choice)">,
    Option<"qmmPrefetch", "qmm-prefetch", "std::string", /*default=*/"\"\"",
           "software prefetch of the quantized matmul kernels: bytes ahead "
           "in the weight row, 0: none, -N: N tiles ahead (tuning; empty: "
           "the kernels' choice)">,
  ];
  let dependentDialects = [
    "mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
    "mlir::arith::ArithDialect", "mlir::math::MathDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::memref::MemRefDialect", "mlir::LLVM::LLVMDialect",
    "mlir::func::FuncDialect", "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect", "loom::lowering::LoomCpuDialect"
  ];
}

def BufferizePass : Pass<"loom-bufferize", "mlir::ModuleOp"> {
  let summary = "One-shot bufferization; collectives become runtime calls "
                "on their buffers";
  let description = [{
    One-shot bufferization of the lowered module, function boundaries
    included (identity layouts, as the entry points' C interface expects),
    with the loom collectives' `BufferizableOpInterface` models: each
    collective becomes its runtime call (`include/loom/runtime/abi.h`) on the
    buffers the analysis gives it, so what a call reads and writes is seen
    by the analysis like any other op's accesses. An `loom.all_reduce` runs
    in place on its operand's buffer where that buffer may be overwritten;
    where the analysis would have to copy the operand first (it is read
    later, or not writable), the call reads the operand and writes a fresh
    buffer instead. `loom.all_gather`, `loom.reduce_scatter`,
    `loom.all_to_all` (in the contiguous form loom-convert-loom-to-linalg
    leaves) and `loom.recv` write fresh buffers; `loom.send` reads its
    operand. A buffer that is not row-major from its aligned pointer is
    copied into one that is. The `loom.mesh` ops are erased afterwards. Runs
    after loom-convert-loom-to-linalg (which checked every collective).
  }];
  let dependentDialects = [
    "mlir::bufferization::BufferizationDialect",
    "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
    "mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect"
  ];
}

def ApproximateMathPass : Pass<"loom-approximate-math", "mlir::ModuleOp"> {
  let summary = "Polynomial tanh/exp/erf/log... and fast-math arithmetic";
  let description = [{
    Replaces f32 transcendental functions by MLIR's polynomial approximations
    (a few ulp, vectorisable, no libm call per element), and marks float
    arithmetic `reassoc contract afn` so that LLVM vectorises reductions and
    fuses multiply-adds. No `nnan`/`ninf`: masks rely on -inf.
  }];
  let dependentDialects = ["mlir::math::MathDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::x86vector::X86VectorDialect"];
}

def LoopRepeatedLayersPass
    : Pass<"loom-loop-repeated-layers", "mlir::ModuleOp"> {
  let summary = "One loop over the layer index for the calls of a layer";
  let description = [{
    After bufferization, in every entry point (`loom.entry` with
    `llvm.emit_c_interface`, no caller), turns each run of two or more
    back-to-back calls of one `loom.layer` function into an `scf.for` over
    the layer index with one call in its body, so that neither the entry
    point nor its C-interface wrapper grows with the layer count. An
    operand equal in every call is passed as it is; one that is a result
    of the previous call is an iteration argument; one that is an entry
    argument at position `base + stride * i` in call `i` (a layer's
    weights and KV cache slices) is read in the loop from the launcher's
    argument array, `args[base + 1 + stride * i]` (a pointer to the memref
    descriptor, docs/BUNDLE.md), which becomes the entry point's last
    argument. A run whose calls differ otherwise, or whose results are
    used other than by the next call, stays as it is. The arguments only
    the loops read are removed, and `loom.arg_slots` on the entry point
    gives each remaining argument's slot in the array (-1: the array),
    for loom-pack-entry-points.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def PackEntryPointsPass : Pass<"loom-pack-entry-points", "mlir::ModuleOp"> {
  let summary = "Emit loom_entry_<name>(void **args) for every C interface";
  let description = [{
    After conversion to the LLVM dialect, wraps each `_mlir_ciface_<name>`
    (all of whose arguments are pointers) in `loom_entry_<name>(void **)`
    that loads the arguments from an array, so that the launcher can call
    any entry point without knowing its arity (docs/BUNDLE.md). An entry
    point with `loom.arg_slots` (loom-loop-repeated-layers) takes argument
    k from the array's slot k of that list, or the array itself for -1.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def RecordEntryPointsPass
    : Pass<"loom-record-entry-points", "mlir::ModuleOp"> {
  let summary = "Record the entry points' loom-level signatures on the module";
  let description = [{
    Runs after loom-prepare-entry-points, before anything is lowered: writes
    the module attribute `loom.entry_points`, one dictionary per entry
    point (`name`, `type`: the function type with its tensor and qtensor
    types, `arg_attrs`, `res_attrs`: the weights' storage, input names,
    state), and `loom.meshes`, the `#loom.mesh` of every `loom.mesh` op.
    The lowering erases the loom types and the mesh ops; the bundle writer
    reads these attributes from the lowered module instead (docs/BUNDLE.md).
  }];
}

def CheckedMallocPass : Pass<"loom-checked-malloc", "mlir::ModuleOp"> {
  let summary = "Allocate through loom_rt_malloc, which fails the job on OOM";
  let description = [{
    Generated code allocates through `loom_rt_malloc` (abi.h) instead of
    `malloc`: the same memory (freed with `free`), but an allocation that
    fails stops the job with its size instead of returning null to code
    that would write through it. Renames the `malloc` declaration that
    finalize-memref-to-llvm made, and so every call of it.
  }];
}

def OutlineParallelLoopsPass
    : Pass<"loom-outline-parallel-loops", "mlir::ModuleOp"> {
  let summary = "Run the outermost scf.parallel loops on the rank's threads";
  let description = [{
    After bufferization (on memrefs): every `scf.parallel` that is not
    inside another loop, has no reductions, and calls nothing but LLVM
    intrinsics becomes a call of `loom_rt_parallel_for` (abi.h): its body
    is outlined into a private function `<func>_par<N>(closure, begin,
    end)` that runs the linear indices [begin, end) of the loop's
    iteration space, and the values it uses from above are packed into a
    closure on the caller's stack (memrefs as their LLVM descriptors, index
    as i64; constants, vector splats included, are made again inside the
    body). All dimensions are linearised, except the innermost of a body
    without inner loops (kept as an inner loop so that it vectorises as
    before). Each index computes what it computed serially, in the same
    order: results do not depend on the thread count.

    The grain (the fewest indices worth a thread) is the op's
    `loom.parallel_grain` attribute if it has one, else `min-work` divided
    by an estimate of one index's work (the body's operations times the
    trip counts of its inner loops), computed at run time; the runtime runs
    the loop on one thread when it has fewer than two grains. The context
    passed is null: the rank running on the calling thread, so the pass
    works in any function, with or without a context argument.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"32768",
           "Operations (estimated) below which a loop stays on one thread">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::scf::SCFDialect"];
}

#endif // LOOM_PASSES_LOWERING_PASSES_TD
