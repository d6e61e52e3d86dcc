//===- DeclareMesh.cpp - the loom-declare-mesh pass -----------------------===//
//
// Declares the mesh given as an option (loomc --mesh / --mesh-json) in the
// module, so that the passes of the shard phase that run before the planner
// (plugins) can name it. A module that already declares a mesh keeps it when
// its axes are the ones asked for and is refused otherwise.
//
//===----------------------------------------------------------------------===//

#include "passes/Sharding/DeclareMesh.h"
#include "passes/Sharding/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "loom-declare-mesh"

using namespace mlir;

namespace loom {
#define GEN_PASS_DEF_DECLAREMESHPASS
#include "passes/Sharding/Passes.h.inc"

FailureOr<std::optional<cost::MeshSpec>> readMeshJson(ModuleOp module,
                                                      StringRef path) {
  if (path.empty())
    return std::optional<cost::MeshSpec>();
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return module.emitError() << "cannot read mesh spec '" << path << "'";
  auto spec = cost::parseMeshJson((*buf)->getBuffer().str());
  if (!spec)
    return module.emitError() << path << ": " << spec.error().message;
  return std::optional<cost::MeshSpec>(*spec);
}

/// Declares `loom.mesh @name` with the axes of `spec` or else `json`.
static FailureOr<MeshOp> declareMesh(ModuleOp module, StringRef name,
                                     StringRef spec,
                                     const cost::MeshSpec *json) {
  // Only the axes' names and sizes are declared; their links are the cost
  // model's business (the planner reads them from the same options).
  cost::MeshSpec parsed;
  if (!spec.empty()) {
    auto r = cost::parseMeshSpec(spec, cost::DeviceSpec());
    if (!r)
      return module.emitError() << "--mesh: " << r.error().message;
    parsed = *r;
  } else {
    parsed = *json;
  }
  MLIRContext *ctx = module.getContext();
  SmallVector<StringAttr> axisNames;
  SmallVector<int64_t> axisSizes;
  for (const cost::MeshAxis &a : parsed.axes) {
    axisNames.push_back(StringAttr::get(ctx, a.name));
    axisSizes.push_back(a.size);
  }
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  return MeshOp::create(b, module.getLoc(), name,
                        MeshAttr::get(ctx, axisNames, axisSizes));
}

FailureOr<MeshOp> findOrDeclareMesh(ModuleOp module, StringRef name,
                                    StringRef spec,
                                    const cost::MeshSpec *json) {
  MeshOp mesh;
  for (MeshOp m : module.getOps<MeshOp>())
    if (!mesh || m.getSymName() == name)
      mesh = m;
  MeshAttr attr;
  if (mesh) {
    // "dp=2,tp=4", as --mesh writes it, to compare with what was asked for.
    attr = mesh.getMesh();
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleave(
        llvm::zip(attr.getAxisNames(), attr.getAxisSizes()), os,
        [&](auto axis) {
          os << cast<StringAttr>(std::get<0>(axis)).getValue() << "="
             << std::get<1>(axis);
        },
        ",");
    std::string want = spec.str();
    llvm::erase(want, ' ');
    if (!spec.empty() && text != want)
      return mesh.emitError()
             << "the program declares mesh " << text << " but --mesh says "
             << spec << "; drop --mesh or the program's loom.mesh";
  } else if (spec.empty() && !json) {
    return MeshOp();
  } else {
    auto declared = declareMesh(module, name, spec, json);
    if (failed(declared))
      return failure();
    mesh = *declared;
    attr = mesh.getMesh();
  }
  // The links come from the JSON spec: it must describe the same axes (also
  // when --mesh declared them).
  if (json)
    for (auto [n, s] : llvm::zip(attr.getAxisNames(), attr.getAxisSizes())) {
      StringRef axis = cast<StringAttr>(n).getValue();
      if (json->axisSize(axis) != s)
        return mesh.emitError()
               << "the JSON mesh spec's axis '" << axis << "' has size "
               << json->axisSize(axis) << " but the program's mesh says " << s;
    }
  return mesh;
}

namespace {
struct DeclareMeshPass : public impl::DeclareMeshPassBase<DeclareMeshPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto json = readMeshJson(module, meshJson);
    if (failed(json) || failed(findOrDeclareMesh(module, meshName, mesh,
                                                 *json ? &**json : nullptr)))
      signalPassFailure();
  }
};
} // namespace
} // namespace loom
