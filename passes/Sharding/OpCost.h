//===- OpCost.h - the predicted time of one op on one device ----*- C++ -*-===//
//
// The one price of an op that the sharding planner (each strategy of each
// op) and the pipeline phase (the time of each stage) both add up, so a
// stage split and a sharding plan are chosen on the same numbers
// (docs/COST-MODEL.md "The price of one op").
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_SHARDING_OPCOST_H
#define LOOM_PASSES_SHARDING_OPCOST_H

#include "dialects/Loom/IR/ShardingRule.h"
#include "loom/Cost/Device.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace loom {

/// An operand or result as one device holds it (its local shard), dynamic
/// dimensions at the assumed size.
struct LocalTensor {
  double bytes = 0;
  double elements = 0;
};

/// The rule's FLOPs with every dynamic loop at `dynamicSize`: the rules
/// (ShardingRules.cpp) count a dynamic size as 1, and each loop enters their
/// formulas once, as a factor of its size (a matmul's m, n, k; attention's
/// query and key lengths). 0 when the rule gives none.
double ruleFlops(const ShardingRule &rule, int64_t dynamicSize);

/// The roofline (cost::rooflineTime, in the element type of `op`'s first
/// result) of `op` on one device:
///  - FLOPs: ruleFlops(*rule) over the `split` devices that share the op's
///    loops, or without a rule's count one per local element of the first
///    result;
///  - bytes: every operand and result moved once, except the table of a
///    gather (loom.embedding), which moves only the rows it reads: its local
///    bytes times the first result's local elements over its own (at most
///    all of it). A matmul's weight (a tied LM head) is moved whole.
double opTime(const cost::DeviceSpec &dev, mlir::Operation *op,
              const ShardingRule *rule, llvm::ArrayRef<LocalTensor> operands,
              llvm::ArrayRef<LocalTensor> results, double split,
              int64_t dynamicSize);

} // namespace loom

#endif // LOOM_PASSES_SHARDING_OPCOST_H
