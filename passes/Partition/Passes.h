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

/// The decide step on its own (what loom-explicit-reshards runs); fails
/// after a diagnostic. Also run by loom-partition.
mlir::LogicalResult makeReshardsExplicit(mlir::ModuleOp module);

/// The materialise step on a module that makeReshardsExplicit prepared.
mlir::LogicalResult materializeReshards(mlir::ModuleOp module);

} // namespace loom

#endif // LOOM_PASSES_PARTITION_PASSES_H
