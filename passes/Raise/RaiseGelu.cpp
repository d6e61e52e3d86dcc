//===- RaiseGelu.cpp - erf/tanh GELU formulas -> loom.gelu ----------------===//
//
// torch exports GELU (before opset 20) as Div, Erf, Add, Mul, Mul and the
// tanh approximation as Pow, Mul, Add, Mul, Tanh, Add, Mul, Mul. The three
// factors 0.5, x and (1 + erf/tanh(...)) appear in any association, so the
// product is flattened before matching.
//
//===----------------------------------------------------------------------===//

#include "passes/Raise/Passes.h"
#include "passes/Raise/RaiseUtils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "loom-raise-gelu"

namespace loom {
#define GEN_PASS_DEF_RAISEGELUPASS
#include "passes/Raise/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::raise;

namespace {

/// Whether `v` is x / sqrt(2) or x * (1/sqrt(2)).
bool isXOverSqrt2(Value v, Value x) {
  if (auto d = v.getDefiningOp<DivOp>())
    return d.getLhs() == x && isScalar(d.getRhs(), std::sqrt(2.0));
  if (auto m = v.getDefiningOp<MulOp>())
    return otherOperand(m, x) && isScalar(otherOperand(m, x), M_SQRT1_2);
  return false;
}

/// Whether `v` is sqrt(2/pi) * (x + 0.044715 * x^3), in any order.
bool isTanhArgument(Value v, Value x) {
  SmallVector<Value> f;
  collectFactors(v, f);
  if (f.size() != 2)
    return false;
  for (int i = 0; i < 2; ++i) {
    if (!isScalar(f[i], std::sqrt(2.0 / M_PI)))
      continue;
    auto add = f[1 - i].getDefiningOp<AddOp>();
    if (!add)
      return false;
    Value cubic = otherOperand(add, x);
    if (!cubic)
      return false;
    SmallVector<Value> g;
    collectFactors(cubic, g);
    bool hasC = false, hasCube = false;
    SmallVector<Value> xs;
    for (Value h : g) {
      if (isScalar(h, 0.044715))
        hasC = true;
      else if (auto p = h.getDefiningOp<PowOp>();
               p && p.getLhs() == x && isScalar(p.getRhs(), 3.0))
        hasCube = true;
      else
        xs.push_back(h);
    }
    // x^3 as a Pow, or as x * x * x.
    return hasC && ((hasCube && xs.empty()) ||
                    (!hasCube && xs.size() == 3 &&
                     llvm::all_of(xs, [&](Value h) { return h == x; })));
  }
  return false;
}

struct GeluPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rw) const override {
    SmallVector<Value> f;
    collectFactors(op.getResult(), f);
    if (f.size() != 3)
      return failure();
    for (Value onePlus : f) {
      auto add = onePlus.getDefiningOp<AddOp>();
      if (!add)
        continue;
      Value inner;
      for (int i = 0; i < 2; ++i)
        if (isScalar(add->getOperand(i), 1.0))
          inner = add->getOperand(1 - i);
      if (!inner)
        continue;
      // The other two factors are x and 0.5.
      SmallVector<Value> rest;
      for (Value g : f)
        if (g != onePlus)
          rest.push_back(g);
      if (rest.size() != 2)
        continue;
      for (int i = 0; i < 2; ++i) {
        Value x = rest[i];
        if (!isScalar(rest[1 - i], 0.5) || x.getType() != op.getType())
          continue;
        if (auto erf = inner.getDefiningOp<ErfOp>();
            erf && isXOverSqrt2(erf.getInput(), x)) {
          rw.replaceOpWithNewOp<GeluOp>(op, x.getType(), x,
                                        GeluApproximation::none);
          return success();
        }
        if (auto th = inner.getDefiningOp<TanhOp>();
            th && isTanhArgument(th.getInput(), x)) {
          rw.replaceOpWithNewOp<GeluOp>(op, x.getType(), x,
                                        GeluApproximation::tanh);
          return success();
        }
      }
    }
    return failure();
  }
};

struct RaiseGeluPass : loom::impl::RaiseGeluPassBase<RaiseGeluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GeluPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
