//===- Passes.h - the partition phase's passes ------------------*- C++ -*-===//

#ifndef LOOM_PASSES_PARTITION_PASSES_H
#define LOOM_PASSES_PARTITION_PASSES_H

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace loom {

#define GEN_PASS_DECL
#include "passes/Partition/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Partition/Passes.h.inc"

/// The decide step (what loom-insert-explicit-reshards runs); fails after a
/// diagnostic. With `checkOnly`, changes nothing and refuses every change
/// of sharding that is not already a loom.shard (loom-partition's check of
/// its input).
mlir::LogicalResult makeReshardsExplicit(mlir::ModuleOp module,
                                         bool checkOnly = false);

/// The materialise step on a module that makeReshardsExplicit prepared
/// (loom-partition runs the check first).
mlir::LogicalResult materializeReshards(mlir::ModuleOp module);

} // namespace loom

#endif // LOOM_PASSES_PARTITION_PASSES_H
