//===- PrepareEntryPoints.cpp - runtime ABI for entry points --------------===//
//
// Entry points get the rank's runtime context as their first argument and
// their weights as trailing arguments, so that generated code never looks a
// weight up: the launcher passes each rank's mapped slice (docs/BUNDLE.md).
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"
#include "passes/Lowering/QuantKernels.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#define DEBUG_TYPE "loom-prepare-entry-points"

namespace loom {
#define GEN_PASS_DEF_PREPAREENTRYPOINTSPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct PrepareEntryPointsPass
    : loom::impl::PrepareEntryPointsPassBase<PrepareEntryPointsPass> {
  using Base::Base;

  /// Whether a quantized weight gets the interleaved layout: every use a
  /// qmatmul kernel with int8 activations, or the table of a loom.embedding
  /// (a tied LM head: the gather reads its rows through the layout), at
  /// least one qmatmul, and at least one full group of rows. Those kernels
  /// read a group's 8 rows in the 8 lanes of their dot products (decode:
  /// one stream; prefill: each unit unpacked once for 4 rows of x); the
  /// f32-activation kernels keep the rows as stored (docs/QUANTIZE.md).
  bool interleaves(MutableArrayRef<WeightOp> uses) const {
    auto q = dyn_cast<QTensorType>(uses.front().getType());
    if (!interleave || !q || !q.getStorageType() || q.getShape().size() != 2 ||
        q.getShape()[0] < kQWeightInterleaveRows)
      return false;
    bool matmul = false;
    for (WeightOp w : uses)
      for (OpOperand &use : w->getUses()) {
        if (auto emb = dyn_cast<EmbeddingOp>(use.getOwner());
            emb && use.get() == emb.getTable())
          continue;
        auto mm = dyn_cast<QMatmulOp>(use.getOwner());
        if (!mm || use.get() != mm.getWeight())
          return false;
        QMatmulLowering how = chooseQMatmulLowering(mm, q, qmatmul);
        if (!how.kernel || !activationLevels(how.act))
          return false;
        matmul = true;
      }
    return matmul;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (!isQMatmulMode(qmatmul)) {
      module.emitError() << "loom-prepare-entry-points: qmatmul=" << qmatmul
                         << ": expected f32, i8, i8x3 or dequant";
      return signalPassFailure();
    }
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      // Weights in order of first use, one argument per distinct name and
      // split: the planner may load one tensor in two layouts, one per use
      // (a tied LM head's vocabulary slice next to the embedding's whole
      // table, docs/SHARDING.md), each its own argument and slice.
      llvm::MapVector<std::pair<StringRef, Attribute>, SmallVector<WeightOp>>
          weights;
      fn.walk([&](WeightOp w) {
        weights[{w.getName(), w->getAttr("loom.split")}].push_back(w);
      });
      if (fn.isPrivate()) {
        if (!weights.empty()) {
          weights.front().second.front().emitOpError()
              << "weights may only be used in public functions (entry "
                 "points); pass the value as an argument instead";
          return signalPassFailure();
        }
        continue;
      }
      if (fn.getNumArguments() > 0 &&
          isa<LLVM::LLVMPointerType>(fn.getArgumentTypes().front()) &&
          fn->hasAttr(LoomDialect::kEntryAttrName)) {
        continue; // already prepared
      }
      if (failed(fn.insertArgument(0, ptrType, DictionaryAttr::get(ctx, {}),
                                   fn.getLoc()))) {
        fn.emitOpError() << "cannot add the runtime context argument";
        return signalPassFailure();
      }
      for (auto &[key, uses] : weights) {
        StringRef name = key.first;
        WeightOp first = uses.front();
        // A weight loaded split (partitioned) keeps its axes and global
        // shape; the kernels may read its blocks interleaved.
        InterleaveAttr interleave;
        if (interleaves(uses)) {
          QWeightInterleave il =
              interleaveOf(cast<QTensorType>(first.getType()).getQuant());
          interleave =
              InterleaveAttr::get(ctx, il.rows, il.blockBytes, il.fields,
                                  il.fieldBytes, il.unitBytes);
        }
        auto desc = WeightAttr::get(
            ctx, StringAttr::get(ctx, name), first.getSourceAttr(),
            first->getAttrOfType<SplitAttr>(LoomDialect::kSplitAttrName),
            interleave, StringAttr());
        for (WeightOp w : uses)
          if (w.getType() != first.getType()) {
            w.emitOpError() << "weight '" << name
                            << "' is used with two types: " << first.getType()
                            << " and " << w.getType();
            return signalPassFailure();
          }
        unsigned index = fn.getNumArguments();
        if (failed(fn.insertArgument(
                index, first.getType(),
                DictionaryAttr::get(
                    ctx, {NamedAttribute(
                             StringAttr::get(ctx, kWeightArgAttrName), desc)}),
                first.getLoc()))) {
          first.emitOpError() << "cannot add a weight argument";
          return signalPassFailure();
        }
        BlockArgument arg = fn.getArgument(index);
        for (WeightOp w : uses) {
          w.getResult().replaceAllUsesWith(arg);
          w.erase();
        }
      }
      fn->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
      fn->setAttr(LoomDialect::kEntryAttrName, UnitAttr::get(ctx));
    }
  }
};

} // namespace
