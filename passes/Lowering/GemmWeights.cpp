//===- GemmWeights.cpp - weights that are GEMM right operands -------------===//
//
// See GemmWeights.h. Runs inside loom-convert-loom-to-linalg, after the
// conversion (the kernels exist, the layer calls are still func.call) and
// before the loom argument attributes are dropped.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/GemmWeights.h"
#include "dialects/Loom/IR/LoomDialect.h"
#include "passes/Lowering/KernelCall.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace loom::lowering {

namespace {

using Calls = llvm::DenseMap<Operation *, SmallVector<func::CallOp>>;
/// Orientations seen per entry weight argument: bit 0 [K, N], bit 1 [N, K].
using Uses = llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned>;

void trace(Value v, bool transB, const Calls &calls, Uses &uses,
           int depth = 0) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || depth > 8)
    return;
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!fn || arg.getOwner() != &fn.getBody().front())
    return;
  unsigned index = arg.getArgNumber();
  if (fn->hasAttr(LoomDialect::kEntryAttrName)) {
    if (fn.getArgAttrOfType<WeightAttr>(index, LoomDialect::kWeightAttrName))
      uses[{fn, index}] |= transB ? 2u : 1u;
    return;
  }
  if (!fn->hasAttr(LoomDialect::kLayerAttrName))
    return;
  auto it = calls.find(fn);
  if (it == calls.end())
    return;
  for (func::CallOp call : it->second)
    if (index < call.getNumOperands())
      trace(call.getOperand(index), transB, calls, uses, depth + 1);
}

} // namespace

void recordGemmWeights(ModuleOp module) {
  Calls calls;
  SymbolTable symbols(module);
  module.walk([&](func::CallOp call) {
    if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
      calls[callee].push_back(call);
  });
  Uses uses;
  module.walk([&](KernelOp kernel) {
    auto transB = kernel->getAttrOfType<BoolAttr>(kGemmRhsAttrName);
    if (!transB)
      return;
    kernel->removeAttr(kGemmRhsAttrName);
    if (kernel.getInputs().size() >= 2)
      trace(kernel.getInputs()[1], transB.getValue(), calls, uses);
  });
  llvm::StringMap<llvm::DenseMap<unsigned, StringRef>> byEntry;
  for (auto &[key, bits] : uses)
    if (bits != 3) // both orientations: packed on first use instead
      byEntry[cast<func::FuncOp>(key.first).getSymName()][key.second] =
          bits == 2 ? "nk" : "kn";
  auto records =
      module->getAttrOfType<ArrayAttr>(LoomDialect::kEntryPointsAttrName);
  if (byEntry.empty() || !records)
    return;
  MLIRContext *ctx = module.getContext();
  Builder b(ctx);
  SmallVector<Attribute> updated;
  for (Attribute a : records) {
    auto entry = dyn_cast<DictionaryAttr>(a);
    auto name = entry ? entry.getAs<StringAttr>("name") : nullptr;
    auto argAttrs = entry ? entry.getAs<ArrayAttr>("arg_attrs") : nullptr;
    auto it = name ? byEntry.find(name.getValue()) : byEntry.end();
    if (it == byEntry.end() || !argAttrs) {
      updated.push_back(a);
      continue;
    }
    SmallVector<Attribute> args(argAttrs.begin(), argAttrs.end());
    for (auto [index, layout] : it->second) {
      auto dict = index < args.size() ? dyn_cast<DictionaryAttr>(args[index])
                                      : DictionaryAttr();
      auto weight =
          dict ? dict.getAs<WeightAttr>(LoomDialect::kWeightAttrName) : nullptr;
      if (!weight)
        continue;
      NamedAttrList argList(dict);
      argList.set(LoomDialect::kWeightAttrName, weight.withGemmB(layout));
      args[index] = argList.getDictionary(ctx);
    }
    NamedAttrList entryList(entry);
    entryList.set("arg_attrs", b.getArrayAttr(args));
    updated.push_back(entryList.getDictionary(ctx));
  }
  module->setAttr(LoomDialect::kEntryPointsAttrName, b.getArrayAttr(updated));
}

} // namespace loom::lowering
