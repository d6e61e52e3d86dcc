//===- Reshard.h - Layouts and the collectives that change them -*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The one model of a reshard that the sharding planner prices and the
// partitioner materialises (docs/PARTITION.md, "One reshard model"):
//
//  * a Layout says which mesh axes split which tensor dimension (major axis
//    first) and over which axes the value holds partial sums;
//  * planReshard() chooses the steps that turn one layout into another:
//    reduce_scatter / all_reduce for the partial sums, all_to_all when an
//    axis moves between dimensions, all_gather for axes a dimension drops,
//    and one local slice (no communication) for what the target newly
//    splits;
//  * each step knows the buffer the cost model counts (stepBytes) and its
//    time on a mesh (stepTime, through collectiveTimeOnAxes).
//
// The planner (passes/Sharding) calls planReshard on its candidate layouts
// and adds up stepTime; the partitioner (passes/Partition) calls it on each
// loom.shard and creates one op per step. Both therefore agree op for op
// (test/python/partition/test_plan_matches_partition.py checks it).
//
// Axes are indices into the mesh (outermost first), so that this plain C++
// library needs neither MLIR nor the mesh's names; callers map names to
// indices. A layout change between two meshes (a pipeline stage boundary)
// composes from these parts: planReshard on the sending mesh to a layout
// both sides can cut from (e.g. whole), a send/recv of that buffer
// (Collective::SendRecv in CostModel.h), and planReshard on the receiving
// mesh from it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COST_RESHARD_H
#define LOOM_COST_RESHARD_H

#include "loom/Cost/CostModel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cost {

/// A sharding as data: for each tensor dimension the mesh axes splitting
/// it, major first (empty: whole); `partial` the axes over which the value
/// is a partial sum, in the order they were written.
struct Layout {
  std::vector<std::vector<int>> dims;
  std::vector<int> partial;

  /// The replicated layout of a rank-`rank` value.
  static Layout replicated(unsigned rank);
  bool isReplicated() const;
  /// How many pieces the value is cut into (the product of the sizes of
  /// the axes splitting its dimensions).
  int64_t parts(const std::vector<int64_t> &axisSizes) const;
  bool operator==(const Layout &o) const {
    return dims == o.dims && partial == o.partial;
  }
  bool operator!=(const Layout &o) const { return !(*this == o); }
};

/// One step of a reshard: a collective over a group of mesh axes, or the
/// local slice that cuts what the target newly splits.
struct ReshardStep {
  enum Kind { AllReduce, ReduceScatter, AllGather, AllToAll, LocalSlice };
  Kind kind;
  /// The group of a collective (mesh axis indices, in the order the
  /// runtime's group enumerates them).
  std::vector<int> axes;
  /// The gather / scatter dimension, or the all_to_all split dimension.
  int64_t dim = -1;
  /// The all_to_all concat dimension.
  int64_t concatDim = -1;
  /// LocalSlice: the axes newly splitting each dimension.
  std::vector<std::vector<int>> split;
  /// The layout of the buffer the cost model counts: the input of an
  /// all_reduce, reduce_scatter or all_to_all, the output of an all_gather
  /// (the larger side: see CostModel.h).
  Layout buffer;
};

/// The collectives (and at most one local slice, last) that turn a value
/// laid out as `src` into `dst` (the choice depends on the axes, not on
/// their sizes).
/// Fails (false, with `error` saying why) when `dst` holds partial sums
/// over an axis that `src` does not, or the ranks differ.
///
/// The choice: (1) partial axes the target drops are reduce-scattered onto
/// every dimension the target newly splits by exactly (some of) them, and
/// all-reduced otherwise; (2) an axis that ends a dimension's split and
/// starts the next free place of another dimension moves by all_to_all;
/// the rest that a dimension drops is all-gathered; (3) what the target
/// newly splits is a local slice. A group whose axes are not in mesh order
/// is one collective per axis (the runtime's groups follow mesh order).
bool planReshard(const Layout &src, const Layout &dst,
                 std::vector<ReshardStep> &steps, std::string &error);

/// The name of a step as the dialect spells the op (all_reduce,
/// reduce_scatter, all_gather, all_to_all, local_slice).
const char *stepName(ReshardStep::Kind kind);

/// The cost model's collective of a step (LocalSlice has none: false).
bool stepCollective(ReshardStep::Kind kind, Collective &out);

/// Bytes per rank of the buffer a step's cost counts (`globalBytes`: the
/// whole value).
double stepBytes(const ReshardStep &step, double globalBytes,
                 const std::vector<int64_t> &axisSizes);

/// Seconds of one step on `mesh`, whose axis `i` is called `axisNames[i]`
/// (a local slice is free).
double stepTime(const ReshardStep &step, double globalBytes,
                const std::vector<int64_t> &axisSizes,
                const std::vector<std::string> &axisNames, const MeshSpec &mesh,
                Algorithm algo = Algorithm::Auto);

} // namespace loom::cost

#endif // LOOM_COST_RESHARD_H
