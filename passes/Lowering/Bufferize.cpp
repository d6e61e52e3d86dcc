//===- Bufferize.cpp - one-shot bufferization with the collectives -------===//
//
// The lowered module (linalg, tensor, arith on tensors, and the loom
// collectives that loom-convert-loom-to-linalg left) becomes code on
// buffers: upstream one-shot module bufferization with the options the
// entry points need, plus the BufferizableOpInterface models of the
// collectives (CollectivePatterns.cpp) and of loom_cpu.kernel (the GEMM and
// quantized-kernel calls, KernelCall.cpp), which emit their runtime calls on
// the buffers the analysis chose. The analysis therefore sees every read and
// write of a call: no buffer handed to a call is overwritten before the call,
// and a call's result is an ordinary buffer that later ops may overwrite in
// place.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"

#define DEBUG_TYPE "loom-bufferize"

namespace loom {
#define GEN_PASS_DEF_BUFFERIZEPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace mlir::bufferization;
using namespace loom;
using namespace loom::lowering;

namespace {

/// An entry point's inputs and weights belong to its caller (a numpy
/// array handed over without a copy, a weight mapped from its file and
/// shared by the ranks of a process): the analysis must not write them in
/// place, so where the code would, it writes a copy instead. Only state
/// arguments (KV caches) are the entry's to update in place. The bundle
/// records the guarantee (manifest `inputs_read_only`), and the executor
/// then passes inputs without copying them.
/// The conversion to linalg drops argument attributes, so an argument is
/// known to be state from the entry's signature that
/// loom-record-entry-points kept (or from the argument itself). A recorded
/// signature that does not fit the function fails: guessing could make a
/// KV cache read-only (its updates lost) or an input writable.
LogicalResult markInputsReadOnly(ModuleOp module) {
  auto readOnly = BoolAttr::get(module.getContext(), false);
  llvm::StringMap<ArrayAttr> recorded; // entry name -> its arg_attrs
  if (auto entries =
          module->getAttrOfType<ArrayAttr>(LoomDialect::kEntryPointsAttrName))
    for (auto e : entries.getAsRange<DictionaryAttr>())
      if (auto name = e.getAs<StringAttr>("name"))
        recorded[name.getValue()] = e.getAs<ArrayAttr>("arg_attrs");
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || !fn->hasAttr(LoomDialect::kEntryAttrName))
      continue;
    ArrayAttr argAttrs = recorded.lookup(fn.getSymName());
    if (argAttrs && argAttrs.size() != fn.getNumArguments())
      return fn.emitOpError()
             << "has " << fn.getNumArguments()
             << " arguments but its recorded signature (loom.entry_points) "
             << argAttrs.size()
             << "; run loom-record-entry-points after "
                "loom-prepare-entry-points";
    auto isState = [&](unsigned i) {
      if (fn.getArgAttr(i, LoomDialect::kStateAttrName))
        return true;
      auto d = argAttrs ? dyn_cast<DictionaryAttr>(argAttrs[i]) : nullptr;
      return d && d.get(LoomDialect::kStateAttrName);
    };
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (isa<TensorType>(fn.getArgument(i).getType()) && !isState(i))
        fn.setArgAttr(i, BufferizationDialect::kWritableAttrName, readOnly);
  }
  return success();
}

struct BufferizePass : loom::impl::BufferizePassBase<BufferizePass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerCollectiveBufferizationModels(registry);
    registerKernelDialect(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(
        LayoutMapOption::IdentityLayoutMap);
    if (failed(markInputsReadOnly(module)))
      return signalPassFailure();

    // An all_reduce reduces in place; where the analysis finds that its
    // operand must not be overwritten (read later, or not writable), it
    // would copy the operand first. The runtime reads one buffer and
    // writes another just as fast, so such an all_reduce is told to do
    // that instead, and the module is analysed again with it.
    SmallVector<AllReduceOp> reduces;
    module.walk([&](AllReduceOp op) { reduces.push_back(op); });
    if (!reduces.empty()) {
      OneShotAnalysisState analysis(module, options);
      if (failed(analyzeModuleOp(module, analysis)))
        return signalPassFailure();
      for (AllReduceOp op : reduces)
        if (!analysis.isInPlace(op->getOpOperand(0))) {
          LLVM_DEBUG(llvm::dbgs() << "out of place: " << op << "\n");
          markOutOfPlace(op);
        }
    }

    BufferizationState state;
    if (failed(runOneShotModuleBufferize(module, options, state)))
      return signalPassFailure();

    // Collectives now name ranks and axis masks: the meshes are consumed.
    for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
      mesh.erase();
  }
};

} // namespace
