//===- GpuSyncCollectives.cpp - collectives on device buffers -------------===//
//
// After bufferization a collective of a partitioned program is a call of
// the runtime's ABI on its buffers' addresses (passes/Lowering/
// CollectivePatterns.cpp). For CUDA those buffers become device buffers
// (loom-gpu-host-program) and the call stays on the host: the runtime's
// device communicators (runtime/cuda/DeviceComm.h) take device pointers,
// wait for the rank's own stream and return with the output complete. What
// the host program owes them is its stream synchronised before the call;
// this pass marks the calls that need it, and loom-gpu-host-program
// inserts the synchronisation and restarts its chain after each.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"
#include "passes/Lowering/RuntimeABI.h"

#define DEBUG_TYPE "loom-gpu-sync-collectives"

namespace loom {
#define GEN_PASS_DEF_GPUSYNCCOLLECTIVESPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

/// The runtime's communication calls (collectives and point to point), the
/// ones whose buffers are device buffers on CUDA.
bool isCommunication(StringRef callee) {
  return llvm::is_contained(
      {StringRef("loom_rt_all_reduce"), StringRef("loom_rt_all_gather"),
       StringRef("loom_rt_reduce_scatter"), StringRef("loom_rt_all_to_all"),
       StringRef("loom_rt_send"), StringRef("loom_rt_recv")},
      callee);
}

struct GpuSyncCollectivesPass
    : loom::impl::GpuSyncCollectivesPassBase<GpuSyncCollectivesPass> {
  void runOnOperation() override {
    WalkResult r = getOperation().walk([&](func::CallOp call) {
      if (!isCommunication(call.getCallee()))
        return WalkResult::advance();
      const loom::rt_abi::RuntimeFunction *fn =
          loom::rt_abi::lookup(call.getCallee().str());
      if (!fn || fn->args.size() != call.getNumOperands()) {
        call.emitError() << "'" << call.getCallee()
                         << "' does not match the runtime ABI's row";
        return WalkResult::interrupt();
      }
      // Every pointer but the context must be a buffer's address made in
      // this function (host memory passed in would stay host memory).
      for (size_t i = 1; i < fn->args.size(); ++i)
        if (fn->args[i] == 'p' && isa<BlockArgument>(call.getOperand(i))) {
          call.emitError() << "'" << call.getCallee() << "' operand " << i
                           << " is not the address of a buffer of the "
                              "program: no GPU lowering";
          return WalkResult::interrupt();
        }
      call->setAttr(loom::kGpuHostSyncAttr, UnitAttr::get(call.getContext()));
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
