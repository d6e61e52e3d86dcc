//===- RaiseNorms.cpp - mean/variance formulas -> layer_norm, rms_norm ----===//
//
// Exporters before opset 17 (and every hand-written RMSNorm) spell the
// normalisation out in ReduceMean, Sub, Pow, Add, Sqrt, Div / Reciprocal,
// Mul. The statistic must be taken over the last axis, which is what
// loom.rms_norm supports and what layer_norm with axis = -1 means. A
// following scale multiplication and bias addition of the normalised shape
// are folded into the op afterwards, so the planner sees one norm op with
// its weights.
//
//===----------------------------------------------------------------------===//

#include "passes/Raise/Passes.h"
#include "passes/Raise/RaiseUtils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "loom-raise-norms"

namespace loom {
#define GEN_PASS_DEF_RAISENORMSPASS
#include "passes/Raise/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::raise;

namespace {

/// If `v` is stat + eps (eps a scalar constant), returns stat.
Value statPlusEps(Value v, float &eps) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add)
    return {};
  for (int i = 0; i < 2; ++i)
    if (std::optional<double> e = scalarOf(add->getOperand(i))) {
      eps = float(*e);
      return add->getOperand(1 - i);
    }
  return {};
}

/// If `v` is 1 / sqrt(stat + eps) in one of its spellings, returns stat.
Value inverseStd(Value v, float &eps) {
  if (auto r = v.getDefiningOp<RsqrtOp>())
    return statPlusEps(r.getInput(), eps);
  Value s;
  if (auto r = v.getDefiningOp<ReciprocalOp>())
    s = r.getInput();
  else if (auto d = v.getDefiningOp<DivOp>(); d && isScalar(d.getLhs(), 1.0))
    s = d.getRhs();
  if (!s)
    return {};
  auto sq = s.getDefiningOp<SqrtOp>();
  return sq ? statPlusEps(sq.getInput(), eps) : Value();
}

/// (x - mean x) / sqrt(mean((x - mean x)^2) + eps) -> layer_norm.
struct LayerNormPattern : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DivOp op, PatternRewriter &rw) const override {
    auto sub = op.getLhs().getDefiningOp<SubOp>();
    auto sq = op.getRhs().getDefiningOp<SqrtOp>();
    if (!sub || !sq)
      return failure();
    Value x = sub.getLhs();
    if (lastAxisReduce(sub.getRhs(), ReduceKind::mean) != x)
      return failure();
    float eps = 0;
    Value var = statPlusEps(sq.getInput(), eps);
    if (!var ||
        squareOf(lastAxisReduce(var, ReduceKind::mean)) != sub.getResult())
      return failure();
    if (x.getType() != op.getType())
      return failure();
    rw.replaceOpWithNewOp<LayerNormOp>(op, x.getType(), x, Value(), Value(),
                                       rw.getI64IntegerAttr(-1),
                                       rw.getF32FloatAttr(eps));
    return success();
  }
};

/// x * rsqrt(mean(x^2) + eps) [* w], or x / sqrt(mean(x^2) + eps) -> rms_norm.
struct RmsNormPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rw) const override {
    SmallVector<Value> f;
    collectFactors(op.getResult(), f);
    if (f.size() != 2)
      return failure();
    for (int i = 0; i < 2; ++i) {
      float eps = 0;
      Value stat = inverseStd(f[i], eps);
      if (!stat)
        continue;
      Value x = f[1 - i];
      if (squareOf(lastAxisReduce(stat, ReduceKind::mean)) != x ||
          x.getType() != op.getType())
        continue;
      rw.replaceOpWithNewOp<RmsNormOp>(op, x.getType(), x, Value(),
                                       rw.getF32FloatAttr(eps));
      return success();
    }
    return failure();
  }
};

struct RmsNormDivPattern : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DivOp op, PatternRewriter &rw) const override {
    auto sq = op.getRhs().getDefiningOp<SqrtOp>();
    if (!sq)
      return failure();
    float eps = 0;
    Value stat = statPlusEps(sq.getInput(), eps);
    Value x = op.getLhs();
    if (!stat || squareOf(lastAxisReduce(stat, ReduceKind::mean)) != x ||
        x.getType() != op.getType())
      return failure();
    rw.replaceOpWithNewOp<RmsNormOp>(op, x.getType(), x, Value(),
                                     rw.getF32FloatAttr(eps));
    return success();
  }
};

/// Whether `w` has exactly the shape of the innermost dimension of `x`
/// (false for a scalar or unranked `x`: `x * 0.5` with a 0-D constant).
bool isLastDimVector(Value w, Value x) {
  auto wt = dyn_cast<RankedTensorType>(w.getType());
  auto xt = dyn_cast<RankedTensorType>(x.getType());
  return wt && xt && xt.getRank() >= 1 && wt.getRank() == 1 &&
         !xt.isDynamicDim(xt.getRank() - 1) &&
         wt.getDimSize(0) == xt.getDimSize(xt.getRank() - 1) &&
         wt.getElementType() == xt.getElementType();
}

/// norm * w -> norm scale(w); layer_norm + b -> layer_norm bias(b).
struct FoldScale : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rw) const override {
    for (int i = 0; i < 2; ++i) {
      Value n = op->getOperand(i), w = op->getOperand(1 - i);
      if (!n.hasOneUse() || !isLastDimVector(w, n) ||
          n.getType() != op.getType())
        continue;
      if (auto rms = n.getDefiningOp<RmsNormOp>(); rms && !rms.getScale()) {
        rw.replaceOpWithNewOp<RmsNormOp>(op, rms.getType(), rms.getInput(), w,
                                         rms.getEpsilonAttr());
        return success();
      }
      if (auto ln = n.getDefiningOp<LayerNormOp>();
          ln && !ln.getScale() && !ln.getBias() &&
          static_cast<int64_t>(ln.getAxis()) == -1) {
        rw.replaceOpWithNewOp<LayerNormOp>(op, ln.getType(), ln.getInput(), w,
                                           Value(), ln.getAxisAttr(),
                                           ln.getEpsilonAttr());
        return success();
      }
    }
    return failure();
  }
};

struct FoldBias : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rw) const override {
    for (int i = 0; i < 2; ++i) {
      Value n = op->getOperand(i), bias = op->getOperand(1 - i);
      auto ln = n.getDefiningOp<LayerNormOp>();
      if (!ln || ln.getBias() || !n.hasOneUse() ||
          static_cast<int64_t>(ln.getAxis()) != -1 ||
          !isLastDimVector(bias, n) || n.getType() != op.getType())
        continue;
      rw.replaceOpWithNewOp<LayerNormOp>(op, ln.getType(), ln.getInput(),
                                         ln.getScale(), bias, ln.getAxisAttr(),
                                         ln.getEpsilonAttr());
      return success();
    }
    return failure();
  }
};

struct RaiseNormsPass : loom::impl::RaiseNormsPassBase<RaiseNormsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LayerNormPattern, RmsNormPattern, RmsNormDivPattern, FoldScale,
                 FoldBias>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
