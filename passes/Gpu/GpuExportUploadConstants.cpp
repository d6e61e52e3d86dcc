//===- GpuExportUploadConstants.cpp - the constants' upload, exported -----===//
//
// loom-pack-entry-points keeps only the loom_entry_* wrappers external, so
// that no function of a model interposes on the launcher's symbols. A CUDA
// bundle has one more function for the launcher: the upload of its constant
// globals, which the executor calls when it opens the bundle (docs/GPU.md,
// "Weights and constants device-resident"); those globals become hidden
// external symbols so that every function sees the same host address.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"

#define DEBUG_TYPE "loom-gpu-export-upload-constants"

namespace loom {
#define GEN_PASS_DEF_GPUEXPORTUPLOADCONSTANTSPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

struct GpuExportUploadConstantsPass
    : loom::impl::GpuExportUploadConstantsPassBase<
          GpuExportUploadConstantsPass> {
  void runOnOperation() override {
    ModuleOp m = getOperation();
    auto fn = m.lookupSymbol<LLVM::LLVMFuncOp>(loom::kGpuUploadConstantsFn);
    if (!fn || fn.isExternal())
      return;
    fn.setLinkage(LLVM::Linkage::External);
    // The runtime finds the device copies by host address, so the entries
    // and this function must see one copy of each constant: parallel code
    // generation copies internal constants into every part that uses them
    // (lib/Target/CpuTarget.cpp, splitModule), a hidden external one it
    // defines once.
    fn.walk([&](LLVM::AddressOfOp a) {
      if (auto g = m.lookupSymbol<LLVM::GlobalOp>(a.getGlobalNameAttr());
          g && g.getLinkage() == LLVM::Linkage::Private) {
        g.setLinkage(LLVM::Linkage::External);
        g.setVisibility_(LLVM::Visibility::Hidden);
      }
    });
  }
};

} // namespace
