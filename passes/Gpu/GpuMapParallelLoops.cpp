//===- GpuMapParallelLoops.cpp - scf.parallel onto blocks x threads -------===//
//
// convert-parallel-loops-to-gpu needs every scf.parallel mapped to
// processors. The greedy upstream mapper gives one thread per block to a
// single loop nest; here each outermost loop is collapsed into one
// dimension and tiled: tiles are blocks, the elements of a tile threads,
// so that neighbouring threads touch neighbouring elements of the
// innermost dimension (coalesced loads) whatever the rank.
//
// A memref.copy of host code with a strided side (the write of a KV
// cache's new rows into a subview of the cache argument at the position,
// docs/GPU.md "KV cache on the device") becomes such a loop first, hence a
// kernel: loom-gpu-host-program turns only contiguous copies into
// gpu.memcpy.
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

/// Each memref.copy of host code whose source or target is not contiguous
/// (a non-identity layout) as an scf.parallel of loads and stores over the
/// source's sizes.
void stridedCopiesToLoops(ModuleOp module) {
  SmallVector<memref::CopyOp> copies;
  module.walk([&](memref::CopyOp op) {
    if (op->getParentOfType<gpu::GPUModuleOp>() ||
        op->getParentOfType<gpu::LaunchOp>())
      return;
    auto src = cast<MemRefType>(op.getSource().getType());
    auto dst = cast<MemRefType>(op.getTarget().getType());
    if (!src.getLayout().isIdentity() || !dst.getLayout().isIdentity())
      copies.push_back(op);
  });
  for (memref::CopyOp op : copies) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto src = cast<MemRefType>(op.getSource().getType());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    if (src.getRank() == 0) {
      Value v = memref::LoadOp::create(b, loc, op.getSource(), ValueRange{});
      memref::StoreOp::create(b, loc, v, op.getTarget(), ValueRange{});
      op.erase();
      continue;
    }
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < src.getRank(); ++d) {
      lbs.push_back(zero);
      steps.push_back(one);
      ubs.push_back(
          src.isDynamicDim(d)
              ? Value(memref::DimOp::create(b, loc, op.getSource(), d))
              : Value(
                    arith::ConstantIndexOp::create(b, loc, src.getDimSize(d))));
    }
    Value from = op.getSource(), to = op.getTarget();
    scf::ParallelOp::create(b, loc, lbs, ubs, steps,
                            [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
                              Value v =
                                  memref::LoadOp::create(nb, nloc, from, ivs);
                              memref::StoreOp::create(nb, nloc, v, to, ivs);
                            });
    op.erase();
  }
}

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
    stridedCopiesToLoops(module);
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
