//===- DynamicDims.h - run-time dims as symbols for the planner -*- C++ -*-===//
//
// The sharding planner splits a run-time (dynamic) dimension only over the
// data-parallel axis 'dp' (docs/SHARDING.md "Run-time dimensions"). To do so
// through the ops that carry run-time sizes (a loom.reshape with `sizes`, a
// loom.slice to the end), it tracks every dynamic dimension of
// a function as a monomial over symbols: c * b0^e0 * b1^e1 ..., where a
// symbol is a run-time size (an entry argument's dim, or an unknown one)
// and c a positive integer. Sharding rules equate dims (one loop, one
// size); `tensor.dim` and `arith.muli`/`divui` on the index values give
// the sizes a reshape is built with. From that, a reshape with sizes gets a
// sharding rule of its own (dims cut where the running products of both
// sides meet), instead of running replicated.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_SHARDING_DYNAMICDIMS_H
#define LOOM_PASSES_SHARDING_DYNAMICDIMS_H

#include "dialects/Loom/IR/ShardingRule.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <utility>

namespace loom {

/// The data-parallel mesh axis: the only one that splits a run-time dim.
inline constexpr llvm::StringLiteral kDataParallelAxis = "dp";

/// A size as c * prod(symbol^exponent), symbols sorted.
struct DimMono {
  int64_t coef = 1;
  llvm::SmallVector<std::pair<int, int>, 2> syms; ///< (symbol, exponent)
  bool operator==(const DimMono &o) const {
    return coef == o.coef && syms == o.syms;
  }
  bool isStatic() const { return syms.empty(); }
};

class DynamicDims {
public:
  /// Records what `op` says about run-time dims: the dims a rule gives one
  /// loop are equal; a reshape with sizes or a slice sets its result's.
  void visit(mlir::Operation *op, const ShardingRule *rule);
  /// A rule for an op that has none of its own but whose run-time dims are
  /// known: a loom.reshape with sizes, a loom.slice whose dynamic dims run
  /// to the end. std::nullopt: it runs replicated.
  std::optional<ShardingRule> fallbackRule(mlir::Operation *op);

  /// Walks `body` once (rules of ops, fallback rules) so every run-time
  /// dim has its size, then takes the batch: the symbol of dim 0 of each
  /// loom.attention's query, conv's or pool's input; with none of those,
  /// the symbol at dim 0 of every argument and result with a run-time dim
  /// 0, when they all agree.
  void analyse(mlir::Block &body);
  /// Per loop of `rule` (the rule of `op`): whether it is a run-time loop
  /// of the batch (c * batch), the only run-time loops 'dp' splits (a
  /// sequence length need not divide).
  llvm::SmallVector<bool> batchLoops(mlir::Operation *op,
                                     const ShardingRule &rule);
  /// Whether analyse found a run-time batch (else nothing here applies).
  bool hasBatch() const { return !batch.empty(); }

  /// The size of dim `d` of `v` (a fresh symbol the first time an unknown
  /// dynamic dim is asked for).
  DimMono dimOf(mlir::Value v, unsigned d);

private:
  std::optional<DimMono> ofIndex(mlir::Value idx);
  DimMono canonical(DimMono m);
  int find(int s);
  int fresh() {
    parent.push_back(static_cast<int>(parent.size()));
    return static_cast<int>(parent.size()) - 1;
  }
  std::optional<ShardingRule> reshapeRule(mlir::Operation *op);

  bool isBatch(const DimMono &m);

  llvm::DenseMap<std::pair<mlir::Value, unsigned>, DimMono> dims;
  /// The size of each loop of the reshape rules built here.
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<DimMono>> loopSizes;
  llvm::SmallVector<int> batch;  ///< batch symbols
  llvm::SmallVector<int> parent; ///< union-find over symbols
};

} // namespace loom

#endif // LOOM_PASSES_SHARDING_DYNAMICDIMS_H
