//===- DeclareMesh.h - the mesh the shard phase plans on --------*- C++ -*-===//
//
// The shard phase needs the program's `loom.mesh` before anything annotates
// it: custom sharding passes (plugins, loomc --shard-passes) write
// `#loom.sharding<@mesh, ...>` and so run after loom-declare-mesh, and the
// planner finds the same mesh. Both go through findOrDeclareMesh, so a
// mesh given on the command line and one the program declares are checked
// against each other the same way wherever they meet.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_SHARDING_DECLAREMESH_H
#define LOOM_PASSES_SHARDING_DECLAREMESH_H

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Cost/Mesh.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace loom {

/// Reads the JSON mesh spec file `path` (docs/COST-MODEL.md); nullopt for an
/// empty path. Errors are emitted on `module`.
mlir::FailureOr<std::optional<cost::MeshSpec>>
readMeshJson(mlir::ModuleOp module, llvm::StringRef path);

/// The module's mesh: its `loom.mesh` called `name`, else its first one.
/// When `spec` ("dp=2,tp=4") or `json` is given, that mesh must have the
/// same axes (an error naming both and the fix otherwise), and a module
/// without a mesh gets `loom.mesh @name` declared from them. A null MeshOp
/// when there is neither a mesh nor a spec.
mlir::FailureOr<MeshOp> findOrDeclareMesh(mlir::ModuleOp module,
                                          llvm::StringRef name,
                                          llvm::StringRef spec,
                                          const cost::MeshSpec *json);

} // namespace loom

#endif // LOOM_PASSES_SHARDING_DECLAREMESH_H
