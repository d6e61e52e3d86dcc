//===- StageUtils.cpp - what the pipeline passes share --------------------===//

#include "passes/Pipeline/StageUtils.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace loom::pipeline {

llvm::DenseSet<Operation *> floatingOps(func::FuncOp fn) {
  llvm::DenseSet<Operation *> floating;
  if (fn.isExternal())
    return floating;
  // Whether `v` is (a reshard of) a weight of a decoder layer.
  auto layerWeight = [](Value v) {
    Operation *def = v.getDefiningOp();
    while (def && isa<ShardOp>(def))
      def = def->getOperand(0).getDefiningOp();
    auto w = dyn_cast_or_null<WeightOp>(def);
    return w && layerOfWeightName(w.getName()).has_value();
  };
  for (Operation &op : fn.getBody().front()) {
    if (op.hasTrait<OpTrait::IsTerminator>() || op.getNumRegions() != 0)
      continue;
    bool free = llvm::all_of(op.getOperands(), [&](Value v) {
      // A state argument (KV cache) is written in place by its layer: an op
      // reading it runs once, where the layer is.
      if (auto arg = dyn_cast<BlockArgument>(v))
        return !fn.getArgAttr(arg.getArgNumber(), LoomDialect::kStateAttrName);
      // An op computing with a layer's weight is that layer's.
      if (!isa<ShardOp>(op) && layerWeight(v))
        return false;
      return floating.contains(v.getDefiningOp());
    });
    if (free)
      floating.insert(&op);
  }
  return floating;
}

std::optional<int64_t> layerOfWeightName(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (StringRef p : parts) {
    if (p.empty() || !llvm::all_of(p, llvm::isDigit))
      continue;
    int64_t n = 0;
    if (!p.getAsInteger(10, n))
      return n;
  }
  return std::nullopt;
}

ShardingAttr shardingOf(Value v) {
  ShardingAttr s;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      s = fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                            LoomDialect::kShardingAttrName);
  } else if (auto shard = v.getDefiningOp<ShardOp>()) {
    s = shard.getSharding();
  } else {
    Attribute a = v.getDefiningOp()->getAttr(LoomDialect::kShardingAttrName);
    if (auto arr = dyn_cast_or_null<ArrayAttr>(a))
      a = arr[cast<OpResult>(v).getResultNumber()];
    s = dyn_cast_or_null<ShardingAttr>(a);
  }
  if (!s)
    return s;
  bool split = !s.getPartial().empty();
  for (unsigned d = 0; d < s.getRank(); ++d)
    split |= !s.getDimAxes(d).empty();
  return split ? s : ShardingAttr();
}

int64_t pipelineStages(ModuleOp module, MeshOp *found) {
  for (auto mesh : module.getOps<MeshOp>()) {
    for (auto [n, s] : llvm::zip(mesh.getMesh().getAxisNames(),
                                 mesh.getMesh().getAxisSizes()))
      if (cast<StringAttr>(n).getValue() == kAxis) {
        if (found)
          *found = mesh;
        return s;
      }
  }
  return 1;
}

} // namespace loom::pipeline
