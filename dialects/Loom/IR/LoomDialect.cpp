//===- LoomDialect.cpp - the loom dialect ---------------------------------===//
//
// Dialect registration and the verification of the discardable attributes
// `loom.sharding` and `loom.stage`, wherever they appear.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace loom;

#include "dialects/Loom/IR/LoomEnums.cpp.inc"
#include "dialects/Loom/IR/LoomOpsDialect.cpp.inc"

std::optional<ArrayRef<int64_t>> loom::getTensorShape(Type type) {
  if (auto q = dyn_cast<QTensorType>(type))
    return q.getShape();
  if (auto t = dyn_cast<RankedTensorType>(type))
    return t.getShape();
  return std::nullopt;
}

void LoomDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "dialects/Loom/IR/LoomOps.cpp.inc"
      >();
  attachShardingRules(getContext());
}

Operation *LoomDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

/// Checks a `loom.sharding` value (one sharding, or an array with one per
/// type) against `types`, resolving the mesh from `anchor`.
static LogicalResult verifyShardingAttrOn(Operation *anchor, Attribute attr,
                                          TypeRange types, StringRef what) {
  auto emitError = [&]() { return anchor->emitOpError(); };
  SmallVector<ShardingAttr> shardings;
  if (auto s = dyn_cast<ShardingAttr>(attr)) {
    shardings.push_back(s);
  } else if (auto arr = dyn_cast<ArrayAttr>(attr)) {
    for (Attribute a : arr) {
      auto s = dyn_cast<ShardingAttr>(a);
      if (!s)
        return emitError() << "'loom.sharding' on " << what
                           << " must hold #loom.sharding attributes";
      shardings.push_back(s);
    }
  } else {
    return emitError() << "'loom.sharding' on " << what
                       << " must be a #loom.sharding or an array of them";
  }
  if (shardings.size() != types.size())
    return emitError() << "'loom.sharding' on " << what << " has "
                       << shardings.size() << " shardings for " << types.size()
                       << " values; give one per value";
  for (auto [s, type] : llvm::zip(shardings, types)) {
    MeshOp mesh = lookupMesh(anchor, s.getMesh());
    if (!mesh)
      return emitError() << "sharding refers to unknown mesh " << s.getMesh()
                         << "; declare it with loom.mesh";
    if (failed(verifySharding(emitError, s, mesh.getMesh(), type)))
      return failure();
  }
  return success();
}

/// The pipeline phase's attributes (docs/PIPELINE.md): `loom.pipeline =
/// {axis = "pp", stages = p}` on the module, `loom.stage_of = {entry = "f",
/// stage = k}` on a stage function.
static LogicalResult verifyPipelineAttr(Operation *op, NamedAttribute attr) {
  auto d = dyn_cast<DictionaryAttr>(attr.getValue());
  bool module = attr.getName().getValue() == "loom.pipeline";
  StringRef key = module ? "axis" : "entry";
  StringRef count = module ? "stages" : "stage";
  auto n = d ? dyn_cast_or_null<IntegerAttr>(d.get(count)) : nullptr;
  if (!d || !isa_and_nonnull<StringAttr>(d.get(key)) || !n || n.getInt() < 0 ||
      (module ? !isa<ModuleOp>(op) : !isa<FunctionOpInterface>(op)))
    return op->emitOpError()
           << "'" << attr.getName().getValue() << "' is "
           << (module ? "{axis = \"pp\", stages = P : i64} on the module"
                      : "{entry = \"f\", stage = K : i64} on a function");
  return success();
}

/// `loom.boundary = j` / `loom.entry_arg = i` on a stage function's argument.
static LogicalResult verifyStageIndexAttr(Operation *op, StringRef what,
                                          unsigned index, NamedAttribute attr) {
  auto n = dyn_cast<IntegerAttr>(attr.getValue());
  if (!n || n.getInt() < 0)
    return op->emitOpError()
           << "'" << attr.getName().getValue() << "' on " << what << " "
           << index << " must be a non-negative integer";
  return success();
}

/// `loom.batch_dim = d` on an entry's argument or result: the dimension that
/// is the batch (its rows are independent sequences or samples; the runtime
/// splits and concatenates microbatches on it; docs/BUNDLE.md "batch_dim").
/// The name is spelled out where it is used, like `loom.boundary`.
static constexpr llvm::StringLiteral kBatchDimAttrName = "loom.batch_dim";

/// Checks `loom.batch_dim = d`: an integer in [0, rank) of its tensor
/// (lowered signatures, not tensors, pass).
static LogicalResult verifyBatchDimAttr(Operation *op, StringRef what,
                                        unsigned index, Type type,
                                        NamedAttribute attr) {
  auto n = dyn_cast<IntegerAttr>(attr.getValue());
  auto st = dyn_cast<ShapedType>(type);
  int64_t rank = st && st.hasRank() ? st.getRank() : -1;
  if (!n || n.getInt() < 0 || (rank >= 0 && n.getInt() >= rank))
    return op->emitOpError()
           << "'loom.batch_dim' on " << what << " " << index
           << " must be an integer dimension of its tensor"
           << (rank >= 0 ? " in [0, " + std::to_string(rank) + ")" : "");
  return success();
}

LogicalResult LoomDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kStageAttrName) {
    if (!isa<StageAttr>(attr.getValue()))
      return op->emitOpError()
             << "'loom.stage' must be a #loom.stage attribute, e.g. "
             << "#loom.stage<0>";
    return success();
  }
  if (name == kEntryAttrName || name == kLayerAttrName) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "'" << name << "' is a unit attribute of functions";
    return success();
  }
  if (name == kTargetAttrName) {
    if (!isa<CpuTargetAttr>(attr.getValue()) || !isa<ModuleOp>(op))
      return op->emitOpError()
             << "'loom.target' is a #loom.cpu_target attribute of the "
                "module, e.g. #loom.cpu_target<cpu = \"x86-64-v3\", "
                "features = [\"avx2\"]>";
    return success();
  }
  if (name == kEntryPointsAttrName || name == kMeshesAttrName) {
    auto list = dyn_cast<ArrayAttr>(attr.getValue());
    bool ok = list && isa<ModuleOp>(op);
    for (Attribute a : list ? list.getValue() : ArrayRef<Attribute>()) {
      if (name == kMeshesAttrName) {
        ok &= isa<MeshAttr>(a);
        continue;
      }
      auto d = dyn_cast<DictionaryAttr>(a);
      auto type = d ? dyn_cast_or_null<TypeAttr>(d.get("type")) : nullptr;
      auto fnType =
          type ? dyn_cast<FunctionType>(type.getValue()) : FunctionType();
      auto args = d ? dyn_cast_or_null<ArrayAttr>(d.get("arg_attrs")) : nullptr;
      auto res = d ? dyn_cast_or_null<ArrayAttr>(d.get("res_attrs")) : nullptr;
      ok &= d && isa_and_nonnull<StringAttr>(d.get("name")) && fnType && args &&
            res && args.size() == fnType.getNumInputs() &&
            res.size() == fnType.getNumResults();
    }
    if (!ok)
      return op->emitOpError()
             << "'" << name
             << "' is an array attribute of the module written by "
                "loom-record-entry-points ({name, type, arg_attrs, "
                "res_attrs} per entry point; #loom.mesh per mesh)";
    return success();
  }
  if (name == kShardingAttrName)
    return verifyShardingAttrOn(op, attr.getValue(), op->getResultTypes(),
                                "the op's results");
  if (name == "loom.sharding_candidates") {
    auto list = dyn_cast<ArrayAttr>(attr.getValue());
    if (!list || list.empty())
      return op->emitOpError()
             << "'loom.sharding_candidates' is a non-empty array of result "
                "shardings (a #loom.sharding, or an array of them per "
                "candidate)";
    for (auto [k, candidate] : llvm::enumerate(list))
      if (failed(verifyShardingAttrOn(op, candidate, op->getResultTypes(),
                                      "candidate #" + std::to_string(k) +
                                          " of the op's results")))
        return failure();
    return success();
  }
  if (name == "loom.sharding_rule") {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError() << "'loom.sharding_rule' is a string (the "
                                  "name of the rule that offered "
                                  "'loom.sharding_candidates')";
    return success();
  }
  if (name == "loom.pipeline" || name == "loom.stage_of")
    return verifyPipelineAttr(op, attr);
  if (name == kSplitAttrName) {
    // Set by the partitioner on a weight loaded split: the axes per
    // dimension and the global shape (#loom.split verifies itself).
    auto split = dyn_cast<SplitAttr>(attr.getValue());
    std::optional<ArrayRef<int64_t>> shape =
        op->getNumResults() == 1 ? getTensorShape(op->getResult(0).getType())
                                 : std::nullopt;
    if (!isa<WeightOp>(op) || !split)
      return op->emitOpError()
             << "'loom.split' is a #loom.split<[{axes}, ...], shape = [...]> "
                "on a loom.weight, one axes list per dimension";
    if (shape && shape->size() != split.getRank())
      return op->emitOpError()
             << "'loom.split' has " << split.getRank()
             << " dimensions but the weight has rank " << shape->size()
             << "; give one axes list per dimension of the weight";
    return success();
  }
  if (name == kGpuKernelAttrName) {
    // Set by loom-gpu-build-qmatmul-kernels: the base name of the kernels
    // (<base>_gemv<m>, <base>_tiled) that compute this qmatmul.
    auto base = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<QMatmulOp>(op) || !base || base.getValue().empty())
      return op->emitOpError()
             << "'loom.gpu_kernel' is the base name of a GPU kernel family "
                "(a non-empty string) on a loom.qmatmul";
    return success();
  }
  if (name == "loom.arg_slots") {
    // Set by loom-loop-repeated-layers on an entry point: each argument's
    // slot in the launcher's argument array, -1 for the array itself.
    if (!isa<DenseI64ArrayAttr>(attr.getValue()) ||
        !isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "'loom.arg_slots' is an array<i64: ...> attribute of an "
                "entry point, one slot per argument";
    return success();
  }
  if (name == "loom.parallel_grain") {
    // Set by the quantized kernels on their scf.parallel: the fewest
    // iterations worth a thread (loom-outline-parallel-loops).
    auto g = dyn_cast<IntegerAttr>(attr.getValue());
    if (!g || g.getInt() < 1 || op->getNumRegions() == 0)
      return op->emitOpError()
             << "'loom.parallel_grain' is a positive integer attribute of a "
                "loop, e.g. {loom.parallel_grain = 4 : i64}";
    return success();
  }
  return op->emitOpError() << "unknown loom attribute '" << name
                           << "'; expected loom.sharding or loom.stage (or "
                              "loom.entry, loom.layer on functions)";
}

LogicalResult LoomDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName().getValue() == kNameAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError()
             << "'loom.name' on argument " << argIndex << " must be a string";
    return success();
  }
  if (attr.getName().getValue() == kStateAttrName) {
    auto kind = dyn_cast<StringAttr>(attr.getValue());
    if (!kind || kind.getValue() != "kv_cache")
      return op->emitOpError() << "'loom.state' on argument " << argIndex
                               << " must be \"kv_cache\" (the only kind of "
                                  "state)";
    Region &region = op->getRegion(regionIndex);
    Type t = region.empty()
                 ? cast<FunctionOpInterface>(op).getArgumentTypes()[argIndex]
                 : region.getArgument(argIndex).getType();
    // Checked on tensors and buffers; lowered (LLVM) signatures pass.
    auto rt = dyn_cast<ShapedType>(t);
    if (rt && (!rt.hasRank() || rt.getRank() != 4 || !rt.isDynamicDim(2)))
      return op->emitOpError()
             << "'loom.state' = \"kv_cache\" on argument " << argIndex
             << " needs a tensor [batch, kv_heads, ?, head_dim] (the context "
                "length, dimension 2, is chosen by the runtime)";
    return success();
  }
  if (attr.getName().getValue() == kWeightAttrName) {
    // Set by loom-prepare-entry-points on outlined weights.
    if (!isa<WeightAttr>(attr.getValue()))
      return op->emitOpError()
             << "'loom.weight' on argument " << argIndex
             << " must be a #loom.weight<name = \"...\"[, source = "
                "#loom.extern<...>][, split = #loom.split<...>][, interleave "
                "= #loom.interleave<...>][, gemm_b = \"kn\" | \"nk\"]>";
    return success();
  }
  if (attr.getName().getValue() == "loom.boundary" ||
      attr.getName().getValue() == "loom.entry_arg")
    return verifyStageIndexAttr(op, "argument", argIndex, attr);
  if (attr.getName().getValue() == kBatchDimAttrName) {
    Region &region = op->getRegion(regionIndex);
    Type t = region.empty()
                 ? cast<FunctionOpInterface>(op).getArgumentTypes()[argIndex]
                 : region.getArgument(argIndex).getType();
    return verifyBatchDimAttr(op, "argument", argIndex, t, attr);
  }
  if (attr.getName().getValue() != kShardingAttrName)
    return op->emitOpError() << "unknown loom argument attribute '"
                             << attr.getName().getValue() << "'";
  Region &region = op->getRegion(regionIndex);
  if (region.empty()) {
    // A declaration: take the type from the function signature.
    if (auto fn = dyn_cast<FunctionOpInterface>(op))
      return verifyShardingAttrOn(op, attr.getValue(),
                                  fn.getArgumentTypes()[argIndex],
                                  "argument " + std::to_string(argIndex));
    return success();
  }
  return verifyShardingAttrOn(op, attr.getValue(),
                              region.getArgument(argIndex).getType(),
                              "argument " + std::to_string(argIndex));
}

LogicalResult LoomDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  if (attr.getName().getValue() == kNameAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError()
             << "'loom.name' on result " << resultIndex << " must be a string";
    return success();
  }
  if (attr.getName().getValue() == kBatchDimAttrName) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    return verifyBatchDimAttr(op, "result", resultIndex,
                              fn ? fn.getResultTypes()[resultIndex] : Type(),
                              attr);
  }
  if (attr.getName().getValue() != kShardingAttrName)
    return op->emitOpError() << "unknown loom result attribute '"
                             << attr.getName().getValue() << "'";
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return success();
  return verifyShardingAttrOn(op, attr.getValue(),
                              fn.getResultTypes()[resultIndex],
                              "result " + std::to_string(resultIndex));
}
