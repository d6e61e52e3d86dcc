//===- CheckedMalloc.cpp - allocations that fail the job on OOM -----------===//
//
// finalize-memref-to-llvm declares `malloc`; generated code calls
// `loom_rt_malloc` instead (include/loom/runtime/abi.h), which stops the job
// with the size that failed rather than returning null.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"

#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "loom-checked-malloc"

namespace loom {
#define GEN_PASS_DEF_CHECKEDMALLOCPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

struct CheckedMallocPass
    : loom::impl::CheckedMallocPassBase<CheckedMallocPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto malloc = module.lookupSymbol<LLVM::LLVMFuncOp>("malloc");
    if (!malloc)
      return;
    StringAttr checked = StringAttr::get(&getContext(), "loom_rt_malloc");
    if (module.lookupSymbol(checked)) {
      malloc.emitError("both malloc and loom_rt_malloc are declared");
      return signalPassFailure();
    }
    if (failed(SymbolTable::replaceAllSymbolUses(malloc, checked, module)))
      return signalPassFailure();
    SymbolTable::setSymbolName(malloc, checked);
  }
};

} // namespace
