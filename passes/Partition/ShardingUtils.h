//===- ShardingUtils.h - shardings as data, local types, reshards -*- C++ -*-=//
//
// Helpers shared by the partition passes: a sharding as an editable layout
// (axes per dimension, partial axes), the sharding of a value in plan form,
// local types, and the bridge to lib/Cost's reshard model (which
// collectives turn one layout into another).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PARTITION_SHARDINGUTILS_H
#define LOOM_PASSES_PARTITION_SHARDINGUTILS_H

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Cost/Reshard.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace loom::partition {

/// A sharding as plain data. An empty `dims` entry is a replicated
/// dimension; axes are listed major to minor, as in #loom.sharding.
struct Layout {
  llvm::SmallVector<llvm::SmallVector<llvm::StringRef, 2>> dims;
  llvm::SmallVector<llvm::StringRef, 2> partial;

  /// The layout of `s` for a value of rank `rank` (replicated when `s` is
  /// null).
  static Layout of(ShardingAttr s, unsigned rank);
  /// The layout of `v` (its sharding, replicated without one).
  static Layout of(mlir::Value v);
  bool isReplicated() const;
  bool operator==(const Layout &o) const {
    return dims == o.dims && partial == o.partial;
  }
  /// `{tp}` / `[{tp}, {}]` style text for diagnostics.
  std::string str() const;
};

/// The rank of a shaped type or a `!loom.qtensor` (0 for anything else).
unsigned rankOf(mlir::Type t);

/// The `loom.sharding` of result `i` of `op` (one attribute or an array),
/// or null.
ShardingAttr getResultSharding(mlir::Operation *op, unsigned i);

/// Sets (or with null, removes) the sharding of result `i` of `op`.
void setResultSharding(mlir::Operation *op, unsigned i, ShardingAttr s);

/// The sharding of `v` in plan form: the `to` sharding of a loom.shard, the
/// `loom.sharding` of the defining op or of the function argument; null
/// (replicated) when absent.
ShardingAttr getValueSharding(mlir::Value v);

/// Whether the module carries any sharding (an annotation or loom.shard).
bool hasShardings(mlir::ModuleOp module);

/// The size of a dimension of global size `global` split over `axes`
/// (dynamic stays dynamic).
int64_t localSize(int64_t global, llvm::ArrayRef<llvm::StringRef> axes,
                  MeshAttr mesh);

/// The per-device type of a value of global type `type` laid out as
/// `layout`; null when `type` is neither a ranked tensor nor a qtensor.
mlir::Type getLocalType(mlir::Type type, const Layout &layout, MeshAttr mesh);

/// `l` with mesh axis indices instead of names (lib/Cost's reshard model).
cost::Layout toCostLayout(const Layout &l, MeshAttr mesh);

/// The names of mesh axes given by index.
llvm::SmallVector<llvm::StringRef, 2> axisNames(llvm::ArrayRef<int> axes,
                                                MeshAttr mesh);

/// The steps that turn a value laid out as `src` into `dst` on `mesh`:
/// lib/Cost's planReshard (include/loom/Cost/Reshard.h), the one model the
/// sharding planner prices. Fails, with a message in `error`, when `dst` is
/// partial over an axis that `src` is not.
mlir::FailureOr<std::vector<cost::ReshardStep>> planReshard(const Layout &src,
                                                            const Layout &dst,
                                                            MeshAttr mesh,
                                                            std::string &error);

/// Whether `axes` are in increasing mesh order (then the runtime's group
/// order over their mask is their listed order).
bool inMeshOrder(llvm::ArrayRef<llvm::StringRef> axes, MeshAttr mesh);

/// A StrArrayAttr of axis names.
mlir::ArrayAttr axesAttr(mlir::MLIRContext *ctx,
                         llvm::ArrayRef<llvm::StringRef> axes);

} // namespace loom::partition

#endif // LOOM_PASSES_PARTITION_SHARDINGUTILS_H
