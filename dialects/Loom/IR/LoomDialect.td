//===- LoomDialect.td - the loom dialect definition --------*- tablegen -*-===//
//
// The loom dialect expresses transformer inference graphs on global tensors,
// their sharding over a device mesh, and their distributed per-rank forms
// (collectives and point-to-point transfers on mesh axes).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMDIALECT_TD
#define LOOM_DIALECT_LOOM_IR_LOOMDIALECT_TD

include "mlir/IR/OpBase.td"

def Loom_Dialect : Dialect {
  let name = "loom";
  let cppNamespace = "::loom";
  let summary = "Model graphs, their sharding on a device mesh, and collectives";
  let description = [{
    The `loom` dialect is the IR of the Loom compiler. A model imported from
    ONNX, GGUF or safetensors becomes `loom` compute ops on global tensors;
    weights are `loom.weight` references into external storage, never inline.
    The sharding phase annotates values with `#loom.sharding` on a
    `loom.mesh`; the partition phase rewrites the program per rank with
    `loom.all_reduce`, `loom.all_gather`, `loom.reduce_scatter`,
    `loom.all_to_all`, `loom.send` and `loom.recv`.

    Discardable attributes understood by the dialect:
    - `loom.sharding`: a `#loom.sharding` (or an array of them, one per
      result) on any op, or on a function argument or result;
    - `loom.stage`: a `#loom.stage` on any op (its pipeline stage);
    - `loom.pipeline`: `{axis = "pp", stages = P : i64}` on a pipelined
      module; `loom.stage_of`: `{entry = "f", stage = K : i64}` on its stage
      functions; `loom.boundary = j : i64` / `loom.entry_arg = i : i64` on
      their arguments (a value received from the previous stage / the
      entry's own argument i; docs/PIPELINE.md);
    - `loom.name`: a string on a function argument or result (the model's
      input or output name, used by the bundle);
    - `loom.weight`: a `#loom.weight` on an entry point's argument that
      holds an outlined weight (set by loom-prepare-entry-points);
    - `loom.split`: a `#loom.split` on a `loom.weight` op loaded split
      (set by loom-insert-explicit-reshards);
    - `loom.gpu_kernel`: a string on a `loom.qmatmul`, the base name of its
      GPU kernel family (set by loom-gpu-build-qmatmul-kernels; read and
      written through QMatmulOp::getGpuKernelAttr / setGpuKernel);
    - `loom.entry`: a unit attribute on an entry point prepared for the
      runtime ABI;
    - `loom.layer`: a unit attribute on a private function outlined from
      repeated layers of entry points (set by
      loom-outline-repeated-layers): its argument 0 is the caller's
      runtime context, like an entry point's;
    - `loom.target`: a `#loom.cpu_target` on the module, the CPU that code
      is generated for (set by `loomc`; none: generic x86-64-v2 code).
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// Names of the discardable attributes understood by the dialect.
    static constexpr llvm::StringLiteral kShardingAttrName = "loom.sharding";
    static constexpr llvm::StringLiteral kStageAttrName = "loom.stage";
    /// On entry-point arguments: an outlined weight (a #loom.weight).
    static constexpr llvm::StringLiteral kWeightAttrName = "loom.weight";
    /// On loom.weight ops: a weight loaded split (a #loom.split).
    static constexpr llvm::StringLiteral kSplitAttrName = "loom.split";
    /// On loom.qmatmul: the base name of its GPU kernel family (a string).
    static constexpr llvm::StringLiteral kGpuKernelAttrName =
        "loom.gpu_kernel";
    /// On functions: an entry point prepared for the runtime ABI.
    static constexpr llvm::StringLiteral kEntryAttrName = "loom.entry";
    /// On functions: a layer outlined from entry points; argument 0 is the
    /// runtime context (loom-outline-repeated-layers).
    static constexpr llvm::StringLiteral kLayerAttrName = "loom.layer";
    /// On function arguments and results: the name of a model input/output.
    static constexpr llvm::StringLiteral kNameAttrName = "loom.name";
    /// On entry-point arguments: state the runtime owns and passes to every
    /// call, updated in place by the entry ("kv_cache": a KV cache whose
    /// dimension 2 is the context length; docs/DIALECT.md).
    static constexpr llvm::StringLiteral kStateAttrName = "loom.state";
    /// On the module: the #loom.cpu_target that code is generated for.
    static constexpr llvm::StringLiteral kTargetAttrName = "loom.target";
    /// On the module, from loom-record-entry-points: each entry point's
    /// loom-level signature ({name, type, arg_attrs, res_attrs}) and every
    /// mesh, which the bundle writer reads after lowering.
    static constexpr llvm::StringLiteral kEntryPointsAttrName =
        "loom.entry_points";
    static constexpr llvm::StringLiteral kMeshesAttrName = "loom.meshes";

  private:
    void registerAttributes();
    void registerTypes();
  public:
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMDIALECT_TD
