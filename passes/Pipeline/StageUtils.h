//===- StageUtils.h - what the pipeline passes share ------------*- C++ -*-===//
//
// The decide step (loom-assign-stages) and the materialise step
// (loom-split-stages) must agree on two things: which ops are "floating"
// (cloned into every stage that uses them instead of living in one), and
// how a value's sharding is read back from the planner's annotations.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PIPELINE_STAGEUTILS_H
#define LOOM_PASSES_PIPELINE_STAGEUTILS_H

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace loom::pipeline {

/// The mesh axis that stages layers.
constexpr llvm::StringLiteral kAxis = "pp";
constexpr llvm::StringLiteral kPipelineAttr = "loom.pipeline";
constexpr llvm::StringLiteral kStageOfAttr = "loom.stage_of";
constexpr llvm::StringLiteral kBoundaryAttr = "loom.boundary";
constexpr llvm::StringLiteral kEntryArgAttr = "loom.entry_arg";

/// The ops of `fn`'s body that compute nothing of a decoder layer: they
/// read only weights, constants, entry arguments (no KV cache) and other
/// floating ops, and no weight of a layer (except to reshard it): weights,
/// constants, the embedding gather, rotary tables, masks, reshards of
/// weights. A stage clones the ones it uses, so no such value crosses a
/// stage boundary (a tied embedding / LM head weight is in both stages).
llvm::DenseSet<mlir::Operation *> floatingOps(mlir::func::FuncOp fn);

/// The layer index a weight name carries: its first all-digit component
/// ("blk.7.attn_q.weight", "model.layers.7.mlp.up_proj.weight",
/// "transformer.h.7.attn.c_attn.weight" -> 7); nullopt for the embedding,
/// final norm, LM head.
std::optional<int64_t> layerOfWeightName(llvm::StringRef name);

/// The sharding the planner gave `v` (a loom.shard's target, the defining
/// op's `loom.sharding`, an argument's), or null when replicated.
ShardingAttr shardingOf(mlir::Value v);

/// The module's mesh axis `pp`: its size, 1 when there is none.
int64_t pipelineStages(mlir::ModuleOp module, MeshOp *mesh = nullptr);

} // namespace loom::pipeline

#endif // LOOM_PASSES_PIPELINE_STAGEUTILS_H
