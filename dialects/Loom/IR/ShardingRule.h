//===- ShardingRule.h - how an op may be split over a mesh ------*- C++ -*-===//
//
// The iteration space of an op as the sharding planner and the partitioner
// see it (the idea of Shardy's OpShardingRule / upstream ShardingInterface):
// a list of loop dimensions, and for every operand and result dimension the
// loops it is made of (major first). A strategy assigns each mesh axis to
// at most one loop; the shardings of operands and results follow:
//   - a tensor dimension is split over the axes assigned to its major loop;
//   - an axis assigned to a `Sum` loop makes every result that lacks that
//     loop partial (a sum over the axis' group);
//   - a tensor that lacks an assigned loop is replicated along that axis.
// A loop can only be split when its size is static, divisible by the group,
// and each shard stays a multiple of `granule` (heads, quantization blocks).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_SHARDINGRULE_H
#define LOOM_DIALECT_LOOM_IR_SHARDINGRULE_H

#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace loom {

enum class LoopKind : uint8_t {
  /// Independent iterations: splitting gives independent shards.
  Parallel,
  /// A sum: splitting gives partial sums (a result that lacks this loop
  /// becomes partial over the axes assigned to it).
  Sum,
  /// Never split (a softmax or norm axis, a max, a gather's table rows).
  Opaque,
};

struct LoopDim {
  int64_t size = 1; ///< ShapedType::kDynamic when unknown
  LoopKind kind = LoopKind::Parallel;
  int64_t granule = 1; ///< each shard must be a multiple of this
};

/// For one tensor: per dimension, the loops it is made of, major first.
/// An empty list means the dimension is never split (broadcast size-1
/// dimensions, a dimension an op reads whole).
struct TensorLoops {
  llvm::SmallVector<llvm::SmallVector<int8_t, 2>, 4> dims;
};

struct ShardingRule {
  llvm::SmallVector<LoopDim, 6> loops;
  llvm::SmallVector<TensorLoops, 3> operands;
  llvm::SmallVector<TensorLoops, 1> results;
  /// Floating point operations of one execution (whole op, unsplit); 0 lets
  /// the planner use one per result element.
  double flops = 0;

  /// Adds a loop and returns its index.
  int8_t addLoop(int64_t size, LoopKind kind = LoopKind::Parallel,
                 int64_t granule = 1) {
    loops.push_back({size, kind, granule});
    return static_cast<int8_t>(loops.size() - 1);
  }
};

} // namespace loom

#endif // LOOM_DIALECT_LOOM_IR_SHARDINGRULE_H
