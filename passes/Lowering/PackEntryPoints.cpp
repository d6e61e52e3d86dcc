//===- PackEntryPoints.cpp - uniform entry points for the launcher --------===//
//
// `_mlir_ciface_<f>` takes only pointers (an optional pointer to the results,
// the runtime context, then one descriptor pointer per memref argument).
// `loom_entry_<f>(void **args)` loads them from an array laid out as in
// docs/BUNDLE.md, so the launcher calls every entry point the same way.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "loom-pack-entry-points"

namespace loom {
#define GEN_PASS_DEF_PACKENTRYPOINTSPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct PackEntryPointsPass
    : loom::impl::PackEntryPointsPassBase<PackEntryPointsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    auto ptrT = LLVM::LLVMPointerType::get(ctx);
    auto voidT = LLVM::LLVMVoidType::get(ctx);
    constexpr StringLiteral prefix = "_mlir_ciface_";
    SmallVector<LLVM::LLVMFuncOp> ifaces;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (fn.getName().starts_with(prefix) && !fn.isExternal())
        ifaces.push_back(fn);
    for (LLVM::LLVMFuncOp iface : ifaces) {
      StringRef name = iface.getName().drop_front(prefix.size());
      auto impl = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
      if (!impl) {
        iface.emitOpError() << "has no implementation @" << name;
        return signalPassFailure();
      }
      bool hasResults =
          !isa<LLVM::LLVMVoidType>(impl.getFunctionType().getReturnType());
      for (Type t : iface.getFunctionType().getParams())
        if (!isa<LLVM::LLVMPointerType>(t)) {
          iface.emitOpError() << "entry point arguments must all be "
                                 "pointers (memrefs and the context), got "
                              << t;
          return signalPassFailure();
        }
      b.setInsertionPointToEnd(module.getBody());
      Location loc = iface.getLoc();
      auto entry =
          LLVM::LLVMFuncOp::create(b, loc, ("loom_entry_" + name).str(),
                                   LLVM::LLVMFunctionType::get(voidT, {ptrT}));
      Block *body = entry.addEntryBlock(b);
      b.setInsertionPointToStart(body);
      Value argv = body->getArgument(0);
      SmallVector<Value> args;
      unsigned numParams = iface.getFunctionType().getNumParams();
      // The slots of the implementation's arguments, when
      // loom-loop-repeated-layers removed some (-1: the array itself).
      auto slots = impl->getAttrOfType<DenseI64ArrayAttr>(kArgSlotsAttrName);
      unsigned numArgs = numParams - (hasResults ? 1 : 0);
      if (slots && static_cast<unsigned>(slots.size()) != numArgs) {
        impl.emitOpError() << "has " << numArgs << " arguments but "
                           << slots.size() << " entries in "
                           << kArgSlotsAttrName;
        return signalPassFailure();
      }
      for (unsigned i = 0; i < numParams; ++i) {
        // args[0] is the results pointer; argument k is args[k + 1].
        int64_t slot = hasResults ? i : i + 1;
        if (slots && slot > 0)
          slot = slots[slot - 1];
        if (slot < 0) {
          args.push_back(argv);
          continue;
        }
        Value addr = LLVM::GEPOp::create(b, loc, ptrT, ptrT, argv,
                                         ArrayRef<LLVM::GEPArg>{int32_t(slot)});
        args.push_back(LLVM::LoadOp::create(b, loc, ptrT, addr));
      }
      LLVM::CallOp::create(b, loc, iface, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
    // Only loom_entry_* leave the library: a user function named `main` or
    // `free` must not interpose on the launcher's symbols (or vice versa).
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (!fn.isExternal() && !fn.getName().starts_with("loom_entry_"))
        fn.setLinkage(LLVM::Linkage::Internal);
  }
};

} // namespace
