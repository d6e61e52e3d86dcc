//===- Planner.h - automatic sharding: search and plan ----------*- C++ -*-===//
//
// The sharding planner: every op offers strategies (ShardingRuleOpInterface:
// each mesh axis to one of its loops, or none), and a search picks one per
// op minimising predicted time (lib/Cost roofline per op + the collectives
// every change of sharding between ops needs) under a memory limit per
// device. User annotations (`loom.sharding` on op results and function
// arguments/results, `loom.shard` ops) are kept as given.
//
// Search: a dynamic programme over the ops in order whose state is the
// sharding of every live value (the frontier), pruned to the best `beam`
// states; exact when the beam holds every state. Memory enters as a
// Lagrangian price on bytes per device, raised by bisection until the plan
// fits. The outcome is written back as `loom.sharding` attributes and
// explicit `loom.shard` reshards (the "decide" step the partitioner's
// materialisation consumes).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_SHARDING_PLANNER_H
#define LOOM_PASSES_SHARDING_PLANNER_H

#include "loom/Cost/Mesh.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace loom {

/// On ops, read by the planner: result shardings it chooses among (each a
/// #loom.sharding, or an array of them for several results), and who
/// offered them (a Python sharding rule's name, for its diagnostics);
/// replaced by the chosen loom.sharding (docs/SHARDING.md).
inline constexpr llvm::StringLiteral kShardingCandidatesAttrName =
    "loom.sharding_candidates";
inline constexpr llvm::StringLiteral kShardingRuleAttrName =
    "loom.sharding_rule";

struct PlannerOptions {
  std::string mesh;           ///< "dp=2,tp=4": declare this mesh if none
  std::string device = "cpu"; ///< lib/Cost device name
  std::string meshJson;       ///< a JSON mesh spec file (links); optional
  int64_t devicesPerNode = 0; ///< 0: the device's default
  double memoryLimit = 0;     ///< bytes per device; 0: device capacity
  int64_t beam = 64;          ///< frontier states kept per step
  int64_t dynamicSize = 128;  ///< assumed size of dynamic dimensions (cost)
  int64_t vectorWidth = 8;    ///< a split innermost dim keeps whole vectors
  std::string planFile;       ///< where to write plan JSON ("" = nowhere)
  bool printSummary = false;  ///< print the readable summary to stderr
};

/// One collective the plan needs, as predicted.
struct PlannedCollective {
  std::string kind; ///< all_reduce, all_gather, reduce_scatter, all_to_all
  std::vector<std::string> axes;
  double bytes = 0;       ///< buffer bytes (the collective's full size)
  double time = 0;        ///< seconds
  std::string at;         ///< the op that needs it
  int64_t dim = -1;       ///< gather / scatter / all_to_all split dimension
  int64_t concatDim = -1; ///< all_to_all concat dimension
};

/// The strategy chosen for one op.
struct PlannedOp {
  std::string op, loc;
  std::vector<std::string> results, operands; ///< shardings, as text
  double time = 0;                            ///< predicted compute seconds
};

struct FunctionPlan {
  std::string name;
  double computeTime = 0, commTime = 0;
  double weightBytes = 0, inputBytes = 0; ///< per device
  /// Per device: state arguments (KV caches) at the model's context length.
  double stateBytes = 0;
  double replicatedBytes = 0; ///< per device, nothing split
  std::vector<PlannedCollective> collectives;
  std::vector<PlannedOp> ops;
};

struct Plan {
  std::string meshDescription;
  std::string device;
  double memoryLimit = 0;
  double price = 0; ///< the memory price that made the plan fit (s/byte)
  double planSeconds = 0;
  /// The mesh's 'pp' stages: the functions' memory is then the whole
  /// model's over the other axes (a device holds one stage's part; the
  /// pipeline phase gives each stage's).
  int64_t stages = 1;
  std::vector<FunctionPlan> functions;
};

/// Plans every function of `module` that has a body, on the module's
/// loom.mesh, and writes the plan back into the IR. Errors are emitted as
/// diagnostics at the op concerned (illegal or conflicting annotations) or
/// the module (a model that does not fit: need, capacity and the smallest
/// mesh that fits).
mlir::FailureOr<Plan> planSharding(mlir::ModuleOp module,
                                   const PlannerOptions &options);

/// The plan as JSON (docs/SHARDING.md describes the fields).
std::string planToJson(const Plan &plan);
/// The readable summary loomc prints.
std::string planSummary(const Plan &plan);

} // namespace loom

#endif // LOOM_PASSES_SHARDING_PLANNER_H
