//===- RecordEntryPoints.cpp - entry signatures that survive lowering -----===//
//
// The bundle needs each entry point's loom-level signature (tensor and
// qtensor types, the weights' storage, input names, state) and the mesh.
// The lowering turns the types into pointers and erases the mesh ops, so
// this pass records both on the module first; the bundle writer reads them
// from the lowered module (lib/Bundle, docs/BUNDLE.md).
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"

#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "loom-record-entry-points"

namespace loom {
#define GEN_PASS_DEF_RECORDENTRYPOINTSPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// `attrs` (one dictionary per argument or result, possibly absent) as an
/// array of `n` dictionaries.
ArrayAttr dictionaries(Builder &b, ArrayAttr attrs, unsigned n) {
  if (attrs)
    return attrs;
  return b.getArrayAttr(SmallVector<Attribute>(n, b.getDictionaryAttr({})));
}

struct RecordEntryPointsPass
    : loom::impl::RecordEntryPointsPassBase<RecordEntryPointsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(&getContext());
    SmallVector<Attribute> entries;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn->hasAttr(LoomDialect::kEntryAttrName))
        continue;
      entries.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", fn.getSymNameAttr()),
           b.getNamedAttr("type", TypeAttr::get(fn.getFunctionType())),
           b.getNamedAttr("arg_attrs", dictionaries(b, fn.getArgAttrsAttr(),
                                                    fn.getNumArguments())),
           b.getNamedAttr("res_attrs", dictionaries(b, fn.getResAttrsAttr(),
                                                    fn.getNumResults()))}));
    }
    SmallVector<Attribute> meshes;
    for (MeshOp mesh : module.getOps<MeshOp>())
      meshes.push_back(mesh.getMesh());
    module->setAttr(LoomDialect::kEntryPointsAttrName, b.getArrayAttr(entries));
    module->setAttr(LoomDialect::kMeshesAttrName, b.getArrayAttr(meshes));
  }
};

} // namespace
