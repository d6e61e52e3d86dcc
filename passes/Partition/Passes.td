//===- Passes.td - the partition phase's passes ------------*- tablegen -*-===//
//
// The partition phase turns a program in plan form (a loom.mesh, shardings
// on values, explicit loom.shard reshards) into the program each rank runs:
// local shapes and collectives. As in Shardy, one pass decides every
// reshard (loom-insert-explicit-reshards), the next materialises them
// (loom-partition) with the collectives lib/Cost's reshard model chooses
// (the model the planner prices); loom-optimize-collectives then improves
// the collectives. docs/PARTITION.md describes the contract and the rules.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PARTITION_PASSES_TD
#define LOOM_PASSES_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

def InsertExplicitReshardsPass
    : Pass<"loom-insert-explicit-reshards", "mlir::ModuleOp"> {
  let summary = "Check the plan form and make every reshard a loom.shard";
  let description = [{
    The decide step of the partitioner. Checks that the module is in plan
    form (shardings on one mesh that divide the values, operand shardings
    consistent with each op's result sharding, partial sums only through
    linear ops), then makes every implicit change of sharding an explicit
    `loom.shard`: sharded arguments of public functions (every rank receives
    the whole value) and sharded `loom.weight`s are resharded from
    replicated; values returned are resharded to the function's result
    sharding; call operands to the callee's argument sharding. A module
    without any sharding is left as written.
  }];
}

def PartitionPass : Pass<"loom-partition", "mlir::ModuleOp"> {
  let summary = "Rewrite a program in plan form per rank, with collectives";
  let description = [{
    The materialise step, on a module that loom-insert-explicit-reshards
    prepared (it checks the plan form again and refuses, naming the place,
    a change of sharding that is not a `loom.shard`). Rewrites every
    function to per-rank local shapes (each dimension divided by the product
    of the sizes of its axes) and materialises every `loom.shard` into the
    steps of lib/Cost's reshard model (include/loom/Cost/Reshard.h, the one
    the planner prices), on any subset of the mesh axes: `reduce_scatter` or
    `all_reduce` for partial sums, `all_to_all` for an axis moving between
    dimensions, `all_gather` for dropped axes, `loom.local_slice` for newly
    split dimensions. Sharding attributes are removed: the result is the
    program of one rank.
  }];
  let dependentDialects = ["loom::LoomDialect"];
}

def OptimizeCollectivesPass
    : Pass<"loom-optimize-collectives", "mlir::ModuleOp"> {
  let summary = "Cheaper collective sequences after partitioning";
  let description = [{
    - `all_reduce` whose only use is a `loom.local_slice` of one dimension
      over the same axes becomes a `reduce_scatter` (half the bytes);
    - `all_reduce` followed by row-wise ops (a sequence-parallel norm and
      elementwise ops with replicated operands) whose result is gathered
      back becomes `reduce_scatter` on the rows, the row-wise ops on the
      shard, and an `all_gather` (same bytes, 1/p of the norm's work);
    - two `all_reduce`s of the same axes and reduction, neither depending on
      the other, are left as they are (merging is not implemented).
  }];
}

#endif // LOOM_PASSES_PARTITION_PASSES_TD
