//===- GpuFuseElementwise.cpp - fusion that leaves products alone ---------===//
//
// The CPU pipeline fuses a bias add and an activation into the reduction
// of the next matmul (one loop nest, which LLVM vectorises). On the GPU a
// matmul goes to cuBLAS, which needs the plain product, so a producer is
// fused only into consumers that are not contractions.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "loom-gpu-fuse-elementwise"

namespace loom {
#define GEN_PASS_DEF_GPUFUSEELEMENTWISEPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

struct GpuFuseElementwisePass
    : loom::impl::GpuFuseElementwisePassBase<GpuFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *consumer = fused->getOwner();
      auto linalgOp = dyn_cast<linalg::LinalgOp>(consumer);
      if (linalgOp && linalg::isaContractionOpInterface(linalgOp))
        return false;
      // A producer with several users would be computed twice.
      Operation *producer = fused->get().getDefiningOp();
      return producer && producer->hasOneUse();
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
