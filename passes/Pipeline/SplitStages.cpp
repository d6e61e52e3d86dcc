//===- SplitStages.cpp - the loom-split-stages pass -----------------------===//
//
// The materialise step of the pipeline phase: each public function becomes
// one public function per stage (docs/PIPELINE.md, "materialised form").
// The values that cross a stage boundary are those defined in a stage
// before k and used in k or later; stage k receives them all (loom.boundary
// = their index in stage k-1's results) and returns those stage k+1 needs,
// so a value skipping a stage passes through it. Floating ops (StageUtils.h)
// are cloned into every stage that uses them instead.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipeline/Passes.h"
#include "passes/Pipeline/StageUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "loom-split-stages"

namespace loom {
#define GEN_PASS_DEF_SPLITSTAGESPASS
#include "passes/Pipeline/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::pipeline;

namespace {

/// The values `op` reads: its operands and, for an op with regions, the
/// values its regions use from outside.
SmallVector<Value> usedValues(Operation *op) {
  SmallVector<Value> used(op->getOperands());
  if (op->getNumRegions()) {
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(op->getRegions(), above);
    used.append(above.begin(), above.end());
  }
  return used;
}

class StageSplitter {
public:
  StageSplitter(func::FuncOp fn, int64_t p) : fn(fn), p(p) {}
  LogicalResult run();

private:
  func::FuncOp fn;
  int64_t p;
  llvm::DenseSet<Operation *> floating;
  llvm::DenseMap<Operation *, int64_t> stage; ///< non-floating ops
  /// Reshards of a computed value: a later stage that needs the reshard
  /// receives the value and reshards it again (the planner keeps e.g. the
  /// residual both split and gathered: only the split form is sent).
  llvm::DenseSet<Operation *> remat;
  /// Values received by stage k (k >= 1), in program order.
  std::vector<SmallVector<Value>> boundary;

  LogicalResult readStages();
  void collectBoundaries();
  func::FuncOp build(int64_t k, OpBuilder &b);
};

LogicalResult StageSplitter::readStages() {
  floating = floatingOps(fn);
  for (Operation &op : fn.getBody().front()) {
    if (floating.contains(&op))
      continue;
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      stage[&op] = p - 1;
      continue;
    }
    auto s = op.getAttrOfType<StageAttr>(LoomDialect::kStageAttrName);
    if (!s)
      return op.emitError() << "has no loom.stage; run loom-assign-stages "
                               "before loom-split-stages";
    if (s.getIndex() >= p)
      return op.emitError() << "loom.stage = " << s.getIndex()
                            << " but the module has " << p << " stages";
    stage[&op] = s.getIndex();
    // Stages run in order: a value flows from a stage to itself or later.
    for (Value v : usedValues(&op)) {
      Operation *def = v.getDefiningOp();
      if (def && !floating.contains(def) && stage.lookup(def) > s.getIndex())
        return op.emitError()
               << "in stage " << s.getIndex() << " uses a value of stage "
               << stage.lookup(def) << " (" << def->getName() << " at "
               << def->getLoc() << "); stages must follow the program order";
    }
  }
  return success();
}

void StageSplitter::collectBoundaries() {
  Block &body = fn.getBody().front();
  for (Operation &op : body)
    if (auto shard = dyn_cast<ShardOp>(op))
      if (!floating.contains(&op) && shard.getInput().getDefiningOp())
        remat.insert(&op);
  // The last stage that needs each value, through the reshards of it that
  // later stages redo.
  llvm::DenseMap<Value, int64_t> last;
  for (Operation &op : llvm::reverse(body)) {
    if (floating.contains(&op) || op.hasTrait<OpTrait::IsTerminator>())
      continue;
    for (Value r : op.getResults()) {
      int64_t l = stage[&op];
      for (Operation *user : r.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        if (!top)
          continue;
        l = std::max(l, remat.contains(top) ? last.lookup(top->getResult(0))
                                            : stage.lookup(top));
      }
      last[r] = l;
    }
  }
  boundary.assign(p, {});
  for (Operation &op : body) {
    if (floating.contains(&op) || op.hasTrait<OpTrait::IsTerminator>() ||
        remat.contains(&op))
      continue;
    for (Value r : op.getResults())
      for (int64_t k = stage[&op] + 1; k <= last[r]; ++k)
        boundary[k].push_back(r);
  }
}

func::FuncOp StageSplitter::build(int64_t k, OpBuilder &b) {
  MLIRContext *ctx = fn.getContext();
  Block &body = fn.getBody().front();
  // The floating ops and entry arguments this stage needs.
  llvm::DenseSet<Operation *> needed;
  llvm::SetVector<unsigned> entryArgs;
  SmallVector<Value> work;
  for (Operation &op : body)
    if (!floating.contains(&op) && !remat.contains(&op) && stage[&op] == k)
      llvm::append_range(work, usedValues(&op));
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      entryArgs.insert(arg.getArgNumber());
      continue;
    }
    Operation *def = v.getDefiningOp();
    bool again = remat.contains(def) && stage[def] <= k;
    if ((floating.contains(def) || again) && needed.insert(def).second)
      llvm::append_range(work, def->getOperands());
  }
  SmallVector<unsigned> args(entryArgs.begin(), entryArgs.end());
  llvm::sort(args);

  // Signature: boundary values, then entry arguments.
  SmallVector<Type> argTypes, resTypes;
  SmallVector<DictionaryAttr> argAttrs, resAttrs;
  auto shardingAttrs = [&](Value v, SmallVector<NamedAttribute> extra) {
    if (ShardingAttr s = shardingOf(v))
      extra.push_back(NamedAttribute(
          StringAttr::get(ctx, LoomDialect::kShardingAttrName), s));
    return DictionaryAttr::get(ctx, extra);
  };
  for (auto [j, v] : llvm::enumerate(boundary[k])) {
    argTypes.push_back(v.getType());
    argAttrs.push_back(shardingAttrs(
        v, {NamedAttribute(StringAttr::get(ctx, kBoundaryAttr),
                           b.getI64IntegerAttr(static_cast<int64_t>(j)))}));
  }
  for (unsigned i : args) {
    argTypes.push_back(fn.getArgument(i).getType());
    NamedAttrList attrs(fn.getArgAttrDict(i));
    attrs.set(kEntryArgAttr, b.getI64IntegerAttr(i));
    argAttrs.push_back(attrs.getDictionary(ctx));
  }
  if (k + 1 < p) {
    for (Value v : boundary[k + 1]) {
      resTypes.push_back(v.getType());
      resAttrs.push_back(shardingAttrs(v, {}));
    }
  } else {
    llvm::append_range(resTypes, fn.getResultTypes());
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      resAttrs.push_back(fn.getResultAttrDict(i)
                             ? fn.getResultAttrDict(i)
                             : DictionaryAttr::get(ctx, {}));
  }
  std::string name = (fn.getSymName() + "__stage" + Twine(k)).str();
  auto stageFn = func::FuncOp::create(b, fn.getLoc(), name,
                                      b.getFunctionType(argTypes, resTypes));
  // The entry's own attributes (llm metadata, ...), then which stage it is.
  for (NamedAttribute a : fn->getDiscardableAttrs())
    stageFn->setAttr(a.getName(), a.getValue());
  stageFn->setAttr(
      kStageOfAttr,
      b.getDictionaryAttr({b.getNamedAttr("entry", fn.getSymNameAttr()),
                           b.getNamedAttr("stage", b.getI64IntegerAttr(k))}));
  stageFn.setAllArgAttrs(argAttrs);
  stageFn.setAllResultAttrs(resAttrs);

  Block *entry = stageFn.addEntryBlock();
  IRMapping map;
  for (auto [j, v] : llvm::enumerate(boundary[k]))
    map.map(v, entry->getArgument(j));
  for (auto [j, i] : llvm::enumerate(args))
    map.map(fn.getArgument(i), entry->getArgument(boundary[k].size() + j));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    // Floating ops and reshards that a stage redoes: where they are used.
    bool mine = floating.contains(&op) || remat.contains(&op)
                    ? needed.contains(&op)
                    : stage[&op] == k;
    if (!mine)
      continue;
    Operation *clone = b.clone(op, map);
    clone->removeAttr(LoomDialect::kStageAttrName);
  }
  SmallVector<Value> results;
  if (k + 1 < p) {
    for (Value v : boundary[k + 1])
      results.push_back(map.lookup(v));
  } else {
    for (Value v : body.getTerminator()->getOperands())
      results.push_back(map.lookupOrDefault(v));
  }
  func::ReturnOp::create(b, fn.getLoc(), results);
  return stageFn;
}

LogicalResult StageSplitter::run() {
  if (failed(readStages()))
    return failure();
  collectBoundaries();
  OpBuilder b(fn.getContext());
  b.setInsertionPointAfter(fn);
  for (int64_t k = 0; k < p; ++k) {
    func::FuncOp s = build(k, b);
    b.setInsertionPointAfter(s);
  }
  fn.erase();
  return success();
}

struct SplitStagesPass
    : public loom::impl::SplitStagesPassBase<SplitStagesPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto pipeline = module->getAttrOfType<DictionaryAttr>(kPipelineAttr);
    if (!pipeline)
      return;
    auto stages = pipeline.getAs<IntegerAttr>("stages");
    int64_t p = stages ? stages.getInt() : 0;
    if (p < 1 || p != pipelineStages(module)) {
      module.emitError() << "loom.pipeline says " << p
                         << " stages but the mesh's '" << kAxis << "' axis has "
                         << pipelineStages(module);
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> entries;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal() && !fn->hasAttr(kStageOfAttr))
        entries.push_back(fn);
    for (func::FuncOp fn : entries) {
      // A staged entry no longer exists as one function.
      if (auto uses = SymbolTable::getSymbolUses(fn, module);
          uses && !uses->empty()) {
        fn.emitError() << "'" << fn.getSymName()
                       << "' is called inside the module; a pipelined entry "
                          "cannot be called (make the callee private)";
        return signalPassFailure();
      }
      if (failed(StageSplitter(fn, p).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
