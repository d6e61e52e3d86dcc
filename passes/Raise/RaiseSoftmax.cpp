//===- RaiseSoftmax.cpp - exp / sum(exp) -> loom.softmax ------------------===//
//
// Hand-written and older exports spell softmax out; the stable form
// subtracts the maximum first. Both are softmax over the reduced axis.
//
//===----------------------------------------------------------------------===//

#include "passes/Raise/Passes.h"
#include "passes/Raise/RaiseUtils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "loom-raise-softmax"

namespace loom {
#define GEN_PASS_DEF_RAISESOFTMAXPASS
#include "passes/Raise/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::raise;

namespace {

struct SoftmaxPattern : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DivOp op, PatternRewriter &rw) const override {
    auto exp = op.getLhs().getDefiningOp<ExpOp>();
    if (!exp)
      return failure();
    Value e = lastAxisReduce(op.getRhs(), ReduceKind::sum);
    if (e != exp.getResult())
      return failure();
    Value x = exp.getInput();
    // The stable form: x - max(x) over the same axis.
    if (auto sub = x.getDefiningOp<SubOp>())
      if (lastAxisReduce(sub.getRhs(), ReduceKind::max) == sub.getLhs())
        x = sub.getLhs();
    if (x.getType() != op.getType())
      return failure();
    rw.replaceOpWithNewOp<SoftmaxOp>(op, x, rw.getI64IntegerAttr(-1));
    return success();
  }
};

struct RaiseSoftmaxPass : loom::impl::RaiseSoftmaxPassBase<RaiseSoftmaxPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SoftmaxPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
