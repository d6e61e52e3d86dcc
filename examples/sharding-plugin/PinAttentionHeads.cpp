//===- PinAttentionHeads.cpp - an example custom sharding pass ------------===//
//
// A pass plugin that pins every loom.attention to heads-only sharding on one
// mesh axis: its query, key and value are resharded to split the head
// dimension (loom.shard) and its results are annotated the same way. The
// planner (loom-plan-sharding) keeps both as given and chooses everything
// else around them, so a model whose heads do not divide the axis gets the
// planner's error naming the op, the axis and the dimension.
//
// Build: CMake target LoomPinAttentionHeads (examples/sharding-plugin).
// Use:   loom-opt --load-pass-plugin=lib/LoomPinAttentionHeads.so \
//          --pass-pipeline='builtin.module(loom-pin-attention-heads{axis=tp},
//                           loom-plan-sharding)' model.mlir
//        loomc model.mlir --mesh tp=2 --plugin lib/LoomPinAttentionHeads.so \
//          --shard-passes='loom-pin-attention-heads{axis=tp}' -o out/
//
// The plugin sees Loom's ops through MLIR's generic Operation API (op names,
// attributes parsed from their textual form), so it links only against
// libMLIR.so, never against a second copy of the loom dialect. docs/SHARDING.md
// describes the API a plugin author uses.
//
//===----------------------------------------------------------------------===//

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

namespace {

struct PinAttentionHeadsPass
    : public PassWrapper<PinAttentionHeadsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PinAttentionHeadsPass)

  PinAttentionHeadsPass() = default;
  PinAttentionHeadsPass(const PinAttentionHeadsPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const override { return "loom-pin-attention-heads"; }
  StringRef getDescription() const override {
    return "Pin every loom.attention to heads-only sharding on one mesh axis";
  }

  Option<std::string> axis{*this, "axis",
                           llvm::cl::desc("Mesh axis that splits the heads"),
                           llvm::cl::init("tp")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // The mesh: the first loom.mesh of the module.
    StringRef mesh;
    for (Operation &op : module.getBody()->getOperations())
      if (op.getName().getStringRef() == "loom.mesh")
        if (auto name = op.getAttrOfType<StringAttr>("sym_name")) {
          mesh = name.getValue();
          break;
        }
    if (mesh.empty()) {
      module.emitError() << "loom-pin-attention-heads: the module has no "
                            "loom.mesh; give loomc --mesh";
      return signalPassFailure();
    }
    // [B, H, S, D] split on H.
    std::string text = "#loom.sharding<@" + mesh.str() + ", [{}, {" +
                       axis.getValue() + "}, {}, {}]>";
    Attribute heads = parseAttribute(text, ctx);
    if (!heads) {
      module.emitError() << "loom-pin-attention-heads: cannot build " << text;
      return signalPassFailure();
    }
    module.walk([&](Operation *op) {
      if (op->getName().getStringRef() != "loom.attention")
        return;
      OpBuilder b(op);
      for (unsigned i = 0; i < 3 && i < op->getNumOperands(); ++i) {
        Value v = op->getOperand(i);
        OperationState state(op->getLoc(), "loom.shard");
        state.addOperands(v);
        state.addAttribute("sharding", heads);
        state.addTypes(v.getType());
        op->setOperand(i, b.create(state)->getResult(0));
      }
      SmallVector<Attribute> results(op->getNumResults(), heads);
      op->setAttr("loom.sharding", results.size() == 1
                                       ? results.front()
                                       : ArrayAttr::get(ctx, results));
    });
  }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "LoomPinAttentionHeads", LLVM_VERSION_STRING,
          []() { PassRegistration<PinAttentionHeadsPass>(); }};
}
