//===- GpuDedupKernels.cpp - one gpu.module per distinct kernel -----------===//
//
// gpu-kernel-outlining makes one gpu.module per gpu.launch, so a model whose
// layers are inline in the host code (SmolLM2: 30 layers) has each layer's
// norm, rotary, softmax and elementwise kernels outlined separately, all
// identical up to their names, and every one of them is compiled (NVVM,
// ptxas for each chip). This pass merges the gpu.modules that are
// structurally identical up to their symbol names: the first of each class
// (in module order) is kept, every gpu.launch_func of a duplicate is
// retargeted to the kept one, and the duplicates are erased.
//
// Identity: the module with its own name and the names of the symbols
// defined directly in it replaced by position (`@m`, `@__loom_dedup_<i>`)
// and printed without locations (generic form, nothing elided); the hash of
// that text buckets the modules, the text is then compared exactly and the
// two normalised copies once more with OperationEquivalence (locations
// ignored). Everything else is part of the identity: ops, types, constants,
// attributes (known_block_size, ...), operand structure. A gpu.module used
// by anything other than gpu.launch_func (or defining a symbol with the
// normalised prefix) is left alone.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <memory>
#include <optional>

#define DEBUG_TYPE "loom-gpu-dedup-kernels"

namespace loom {
#define GEN_PASS_DEF_GPUDEDUPKERNELSPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kNormalPrefix = "__loom_dedup_";

/// The symbols defined directly in a gpu.module, in order.
SmallVector<Operation *> nestedSymbols(gpu::GPUModuleOp m) {
  SmallVector<Operation *> syms;
  for (Operation &op : m.getBody()->getOperations())
    if (op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
      syms.push_back(&op);
  return syms;
}

/// A gpu.module's normalised copy (names replaced by position) and its
/// location-free printed form.
struct Normalised {
  gpu::GPUModuleOp original;
  SmallVector<Operation *> symbols; // of `original`, in order
  std::unique_ptr<Operation, void (*)(Operation *)> copy{
      nullptr, [](Operation *op) { op->destroy(); }};
  std::string text;
  llvm::hash_code hash;
};

/// Normalises `m`; fails (the module is left alone) when one of its
/// symbols already has the normalised prefix or a use cannot be renamed.
FailureOr<Normalised> normalise(gpu::GPUModuleOp m) {
  Normalised n;
  n.original = m;
  n.symbols = nestedSymbols(m);
  for (Operation *op : n.symbols)
    if (SymbolTable::getSymbolName(op).getValue().starts_with(kNormalPrefix))
      return failure();
  Operation *copy = m->clone();
  n.copy.reset(copy);
  MLIRContext *ctx = m.getContext();
  SmallVector<Operation *> copySymbols =
      nestedSymbols(cast<gpu::GPUModuleOp>(copy));
  for (auto [i, op] : llvm::enumerate(copySymbols)) {
    StringAttr from = SymbolTable::getSymbolName(op);
    StringAttr to = StringAttr::get(ctx, kNormalPrefix + Twine(i));
    if (failed(SymbolTable::replaceAllSymbolUses(from, to, copy)))
      return failure();
    SymbolTable::setSymbolName(op, to);
  }
  SymbolTable::setSymbolName(copy, StringAttr::get(ctx, "m"));

  // Every flag set explicitly: command-line printing options (elided
  // constants, skipped regions, locations) must not make two different
  // modules print alike.
  OpPrintingFlags flags;
  flags.enableDebugInfo(false)
      .printGenericOpForm()
      .skipRegions(false)
      .useLocalScope(false)
      .printValueUsers(false)
      .printUniqueSSAIDs(false)
      .elideLargeElementsAttrs(std::numeric_limits<int64_t>::max())
      .elideLargeResourceString(std::numeric_limits<int64_t>::max());
  llvm::raw_string_ostream os(n.text);
  copy->print(os, flags);
  n.hash = llvm::hash_value(n.text);
  return n;
}

/// The position of the symbol `name` among the module's symbols.
std::optional<size_t> kernelIndex(const Normalised &n, StringAttr name) {
  for (auto [i, op] : llvm::enumerate(n.symbols))
    if (SymbolTable::getSymbolName(op) == name)
      return i;
  return std::nullopt;
}

bool sameKernels(const Normalised &a, const Normalised &b) {
  return a.symbols.size() == b.symbols.size() && a.text == b.text &&
         OperationEquivalence::isEquivalentTo(
             a.copy.get(), b.copy.get(),
             OperationEquivalence::Flags::IgnoreLocations);
}

struct GpuDedupKernelsPass
    : loom::impl::GpuDedupKernelsPassBase<GpuDedupKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    if (gpuModules.size() < 2)
      return;

    // Every use of a gpu.module in the host code; a module used by
    // anything but a launch is never merged.
    llvm::DenseMap<StringAttr, gpu::GPUModuleOp> byName;
    for (gpu::GPUModuleOp m : gpuModules)
      byName[m.getSymNameAttr()] = m;
    llvm::DenseSet<Operation *> pinned;
    llvm::MapVector<Operation *, SmallVector<gpu::LaunchFuncOp>> launches;
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(&module.getBodyRegion());
    if (!uses)
      return; // unknown symbol uses: nothing can be retargeted safely
    for (const SymbolTable::SymbolUse &use : *uses) {
      auto it = byName.find(use.getSymbolRef().getRootReference());
      if (it == byName.end())
        continue;
      auto launch = dyn_cast<gpu::LaunchFuncOp>(use.getUser());
      if (launch && launch.getKernel() == use.getSymbolRef())
        launches[it->second].push_back(launch);
      else
        pinned.insert(it->second);
    }

    // Buckets by hash, the first module of each class kept.
    std::vector<Normalised> kept;
    llvm::DenseMap<llvm::hash_code, SmallVector<size_t, 1>> buckets;
    SmallVector<std::pair<Normalised, size_t>> duplicates;
    for (gpu::GPUModuleOp m : gpuModules) {
      if (pinned.contains(m))
        continue;
      FailureOr<Normalised> n = normalise(m);
      if (failed(n))
        continue;
      // Each launch must name a kernel the module defines (the verifier's
      // business; such a module is left as it is).
      if (!llvm::all_of(launches.lookup(m), [&](gpu::LaunchFuncOp launch) {
            return kernelIndex(*n, launch.getKernelName()).has_value();
          }))
        continue;
      SmallVector<size_t, 1> &bucket = buckets[n->hash];
      auto same = llvm::find_if(
          bucket, [&](size_t k) { return sameKernels(kept[k], *n); });
      if (same != bucket.end()) {
        duplicates.emplace_back(std::move(*n), *same);
        continue;
      }
      bucket.push_back(kept.size());
      kept.push_back(std::move(*n));
    }

    // Launches retargeted (kernel i of the duplicate is kernel i of the
    // kept module), duplicates erased.
    for (auto &[dup, k] : duplicates) {
      const Normalised &target = kept[k];
      gpu::GPUModuleOp keptModule = target.original;
      StringAttr targetModule = keptModule.getSymNameAttr();
      for (gpu::LaunchFuncOp launch : launches.lookup(dup.original)) {
        size_t i = *kernelIndex(dup, launch.getKernelName());
        StringAttr targetKernel = SymbolTable::getSymbolName(target.symbols[i]);
        launch.setKernelAttr(SymbolRefAttr::get(
            targetModule, {FlatSymbolRefAttr::get(targetKernel)}));
      }
    }
    for (auto &[dup, k] : duplicates)
      dup.original.erase();
  }
};

} // namespace
