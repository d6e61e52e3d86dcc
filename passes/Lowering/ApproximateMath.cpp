//===- ApproximateMath.cpp - fast transcendental functions ----------------===//
//
// Generated loops call no libm function per element: tanh, exp, erf, log and
// friends become MLIR's polynomial approximations, and float arithmetic may
// be reassociated so that LLVM vectorises the reductions of norms, softmax
// and attention.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "loom-approximate-math"

namespace loom {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

struct ApproximateMathPass
    : loom::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathF32ExpansionPatterns(patterns, [](StringRef) { return true; });
    populateMathPolynomialApproximationPatterns(patterns,
                                                [](StringRef) { return true; });
    // bf16 conversions as integer arithmetic (round to nearest even, NaN
    // kept): LLVM lowers an f32 -> bf16 truncation on x86 to a call of
    // __truncsfbf2, which GCC 12's libgcc lacks (a bundle with a bf16 cast
    // failed to load), and a handful of integer ops is nothing beside the
    // memory traffic of the kernels that convert.
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    auto flags = arith::FastMathFlags::reassoc |
                 arith::FastMathFlags::contract | arith::FastMathFlags::afn;
    // Arithmetic only: a cast pair (f32 -> f16 -> f32) must keep rounding.
    getOperation().walk([&](Operation *op) {
      if (!isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
               arith::MaximumFOp, arith::MinimumFOp, arith::NegFOp>(op))
        return;
      auto fm = cast<arith::ArithFastMathInterface>(op);
      op->setAttr(fm.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(&getContext(), flags));
    });
  }
};

} // namespace
