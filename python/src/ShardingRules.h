//===- ShardingRules.h - custom sharding rules written in Python -*- C++
//-*-===//
//
// The shard phase's hook of the Python package (driver's
// CompileOptions::beforeShard): Python functions pin shardings of ops
// before the planner chooses the rest (docs/PYTHON.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PYTHON_SRC_SHARDINGRULES_H
#define LOOM_PYTHON_SRC_SHARDINGRULES_H

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm
namespace mlir {
class Operation;
} // namespace mlir

namespace loom::python {

/// A rule as python/loom adapts it: called with a dict describing an op,
/// returns None or {"operands": {index: [[axis, ...] per dim]},
/// "results": [[[axis, ...] per dim] per result]}.
struct Rule {
  std::string name;
  nanobind::object call;
};

/// Shows every op of `module` to `rules` (the GIL taken here) and pins the
/// first answer for each op; declares the mesh from `meshSpec` when the
/// program has none. False: an error was written to `diag`.
bool applyShardingRules(mlir::Operation *module, llvm::raw_ostream &diag,
                        const std::vector<Rule> &rules,
                        const std::string &meshSpec);

} // namespace loom::python

#endif // LOOM_PYTHON_SRC_SHARDINGRULES_H
