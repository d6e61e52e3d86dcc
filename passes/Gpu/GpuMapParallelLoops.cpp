//===- GpuMapParallelLoops.cpp - scf.parallel onto blocks x threads -------===//
//
// convert-parallel-loops-to-gpu needs every scf.parallel mapped to
// processors. The greedy upstream mapper gives one thread per block to a
// single loop nest; here each outermost loop is collapsed into one
// dimension and tiled: tiles are blocks, the elements of a tile threads,
// so that neighbouring threads touch neighbouring elements of the
// innermost dimension (coalesced loads) whatever the rank.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"

#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "loom-gpu-map-parallel-loops"

namespace loom {
#define GEN_PASS_DEF_GPUMAPPARALLELLOOPSPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

/// The scf.parallel loops of host code that no other scf.parallel encloses.
SmallVector<scf::ParallelOp> outermostLoops(ModuleOp module) {
  SmallVector<scf::ParallelOp> loops;
  module.walk([&](scf::ParallelOp op) {
    if (!op->getParentOfType<scf::ParallelOp>() &&
        !op->getParentOfType<gpu::GPUModuleOp>() &&
        !op->getParentOfType<gpu::LaunchOp>())
      loops.push_back(op);
  });
  return loops;
}

struct GpuMapParallelLoopsPass
    : loom::impl::GpuMapParallelLoopsPassBase<GpuMapParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (blockSize < 1 || blockSize > 1024) {
      module.emitError() << "loom-gpu-map-parallel-loops: block-size "
                         << blockSize.getValue() << " is not in 1..1024";
      return signalPassFailure();
    }
    IRRewriter rewriter(ctx);
    // One dimension each (the collapse replaces the loop op).
    for (scf::ParallelOp loop : outermostLoops(module)) {
      unsigned rank = loop.getNumLoops();
      if (rank < 2)
        continue;
      std::vector<unsigned> all(rank);
      for (unsigned i = 0; i < rank; ++i)
        all[i] = i;
      rewriter.setInsertionPoint(loop);
      collapseParallelLoops(rewriter, loop, {all});
    }
    AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
    auto mapTo = [&](gpu::Processor p) {
      return gpu::ParallelLoopDimMappingAttr::get(ctx, p, id, id);
    };
    for (scf::ParallelOp loop : outermostLoops(module)) {
      auto [blocks, threads] =
          scf::tileParallelLoop(loop, {blockSize}, /*noMinMaxBounds=*/true);
      if (failed(
              gpu::setMappingAttr(blocks, {mapTo(gpu::Processor::BlockX)})) ||
          failed(
              gpu::setMappingAttr(threads, {mapTo(gpu::Processor::ThreadX)})))
        return signalPassFailure();
      // Anything parallel inside a thread runs sequentially.
      threads.getBody()->walk([&](scf::ParallelOp inner) {
        SmallVector<gpu::ParallelLoopDimMappingAttr> seq(
            inner.getNumLoops(), mapTo(gpu::Processor::Sequential));
        (void)gpu::setMappingAttr(inner, seq);
      });
    }
  }
};

} // namespace
