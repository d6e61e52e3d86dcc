//===- RaiseSilu.cpp - x * sigmoid(x) -> loom.silu ------------------------===//
//
// Exporters write SiLU (Swish) as Mul(x, Sigmoid(x)); loom.silu keeps it one
// op so that the MLP is visible to the planner.
//
//===----------------------------------------------------------------------===//

#include "passes/Raise/Passes.h"
#include "passes/Raise/RaiseUtils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "loom-raise-silu"

namespace loom {
#define GEN_PASS_DEF_RAISESILUPASS
#include "passes/Raise/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct SiluPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rw) const override {
    for (int i = 0; i < 2; ++i) {
      Value x = op->getOperand(i);
      auto sig = op->getOperand(1 - i).getDefiningOp<SigmoidOp>();
      if (!sig || sig.getInput() != x || x.getType() != op.getType())
        continue;
      rw.replaceOpWithNewOp<SiluOp>(op, x);
      return success();
    }
    return failure();
  }
};

struct RaiseSiluPass : loom::impl::RaiseSiluPassBase<RaiseSiluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SiluPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
