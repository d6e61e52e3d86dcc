//===- ShardingUtils.cpp - shardings as data, local types, reshards -------===//
//
// The reshard planner. A layout gives, per dimension, the axes it is split
// over (major to minor) and the axes holding partial sums. Turning `src`
// into `dst`:
//
//  1. partial axes of `src` that `dst` does not keep are summed: with a
//     reduce_scatter when `dst` newly splits one dimension (whose current
//     axes are a prefix of its target axes) on exactly those axes, else with
//     an all_reduce;
//  2. while some dimension's current axes are not a prefix of its target
//     axes, its minor-most axis must go: an all_to_all when that axis is the
//     next axis another dimension needs, else an all_gather of the whole
//     non-matching suffix (minor first, one collective when the suffix is in
//     mesh order);
//  3. every dimension's axes are now a prefix of the target: the missing
//     suffixes are cut locally (local_slice, no communication).
//
// Minor-most axes matter: a dimension split over [a, b] holds block
// (i_a * |b| + i_b), so gathering b gives the [a] layout but gathering a
// does not give the [b] layout. "Gather then slice" is what step 2 then 3
// do for every other change.
//
//===----------------------------------------------------------------------===//

#include "passes/Partition/ShardingUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace loom::partition {

unsigned rankOf(Type t) {
  if (auto st = dyn_cast<ShapedType>(t))
    return st.hasRank() ? st.getRank() : 0;
  if (auto q = dyn_cast<QTensorType>(t))
    return q.getRank();
  return 0;
}

Layout Layout::of(Value v) {
  return of(getValueSharding(v), rankOf(v.getType()));
}

Layout Layout::of(ShardingAttr s, unsigned rank) {
  Layout l;
  l.dims.resize(rank);
  if (!s)
    return l;
  for (unsigned d = 0; d < rank && d < s.getRank(); ++d)
    for (StringRef a : s.getDimAxes(d))
      l.dims[d].push_back(a);
  for (StringRef a : s.getPartialAxes())
    l.partial.push_back(a);
  return l;
}

bool Layout::isReplicated() const {
  return partial.empty() &&
         llvm::all_of(dims, [](const auto &d) { return d.empty(); });
}

std::string Layout::str() const {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (i)
      s += ", ";
    s += "{" + llvm::join(d, ", ") + "}";
  }
  s += "]";
  if (!partial.empty())
    s += ", partial = {" + llvm::join(partial, ", ") + "}";
  return s;
}

ShardingAttr getResultSharding(Operation *op, unsigned i) {
  Attribute a = op->getAttr(LoomDialect::kShardingAttrName);
  if (!a)
    return {};
  if (auto s = dyn_cast<ShardingAttr>(a))
    return op->getNumResults() == 1 ? s : ShardingAttr();
  if (auto arr = dyn_cast<ArrayAttr>(a))
    if (i < arr.size())
      return dyn_cast<ShardingAttr>(arr[i]);
  return {};
}

void setResultSharding(Operation *op, unsigned i, ShardingAttr s) {
  MLIRContext *ctx = op->getContext();
  if (op->getNumResults() == 1) {
    if (s)
      op->setAttr(LoomDialect::kShardingAttrName, s);
    else
      op->removeAttr(LoomDialect::kShardingAttrName);
    return;
  }
  SmallVector<Attribute> all;
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    ShardingAttr cur = r == i ? s : getResultSharding(op, r);
    if (!cur) {
      // An array needs an entry per result: replicated on the mesh of `s`
      // (or of another entry).
      ShardingAttr any = s;
      for (unsigned k = 0; !any && k < op->getNumResults(); ++k)
        if (k != i)
          any = getResultSharding(op, k);
      if (!any) {
        op->removeAttr(LoomDialect::kShardingAttrName);
        return;
      }
      unsigned rank = 0;
      if (auto st = dyn_cast<ShapedType>(op->getResult(r).getType()))
        rank = st.getRank();
      else if (auto qt = dyn_cast<QTensorType>(op->getResult(r).getType()))
        rank = qt.getRank();
      SmallVector<Attribute> dims(rank, ArrayAttr::get(ctx, {}));
      cur = ShardingAttr::get(ctx, any.getMesh(), ArrayAttr::get(ctx, dims),
                              ArrayAttr::get(ctx, {}));
    }
    all.push_back(cur);
  }
  op->setAttr(LoomDialect::kShardingAttrName, ArrayAttr::get(ctx, all));
}

ShardingAttr getValueSharding(Value v) {
  if (auto res = dyn_cast<OpResult>(v)) {
    if (auto shard = dyn_cast<ShardOp>(res.getOwner()))
      return shard.getSharding();
    return getResultSharding(res.getOwner(), res.getResultNumber());
  }
  auto arg = cast<BlockArgument>(v);
  auto fn =
      dyn_cast_or_null<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!fn || arg.getOwner() != &fn.getFunctionBody().front())
    return {};
  return fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                           LoomDialect::kShardingAttrName);
}

/// Whether the module carries any sharding at all.
bool hasShardings(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    if (isa<ShardOp>(op) || op->hasAttr(LoomDialect::kShardingAttrName))
      found = true;
    if (auto fn = dyn_cast<func::FuncOp>(op)) {
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (fn.getArgAttr(i, LoomDialect::kShardingAttrName))
          found = true;
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        if (fn.getResultAttr(i, LoomDialect::kShardingAttrName))
          found = true;
    }
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

int64_t localSize(int64_t global, ArrayRef<StringRef> axes, MeshAttr mesh) {
  if (ShapedType::isDynamic(global))
    return global;
  int64_t parts = 1;
  for (StringRef a : axes)
    parts *= mesh.getAxisSize(a);
  return global / parts;
}

Type getLocalType(Type type, const Layout &layout, MeshAttr mesh) {
  auto localShape = [&](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> out(shape);
    for (auto [d, axes] : llvm::enumerate(layout.dims))
      if (d < out.size())
        out[d] = localSize(out[d], axes, mesh);
    return out;
  };
  if (auto t = dyn_cast<RankedTensorType>(type))
    return RankedTensorType::get(localShape(t.getShape()), t.getElementType(),
                                 t.getEncoding());
  if (auto q = dyn_cast<QTensorType>(type))
    return QTensorType::get(q.getContext(), localShape(q.getShape()),
                            q.getQuant());
  return {};
}

bool inMeshOrder(ArrayRef<StringRef> axes, MeshAttr mesh) {
  for (size_t i = 1; i < axes.size(); ++i)
    if (*mesh.getAxisIndex(axes[i - 1]) > *mesh.getAxisIndex(axes[i]))
      return false;
  return true;
}

ArrayAttr axesAttr(MLIRContext *ctx, ArrayRef<StringRef> axes) {
  SmallVector<Attribute> out;
  for (StringRef a : axes)
    out.push_back(StringAttr::get(ctx, a));
  return ArrayAttr::get(ctx, out);
}

cost::Layout toCostLayout(const Layout &l, MeshAttr mesh) {
  cost::Layout out;
  for (const auto &d : l.dims) {
    std::vector<int> axes;
    for (StringRef a : d)
      axes.push_back(static_cast<int>(*mesh.getAxisIndex(a)));
    out.dims.push_back(std::move(axes));
  }
  for (StringRef a : l.partial)
    out.partial.push_back(static_cast<int>(*mesh.getAxisIndex(a)));
  return out;
}

SmallVector<StringRef, 2> axisNames(ArrayRef<int> axes, MeshAttr mesh) {
  SmallVector<StringRef, 2> out;
  for (int a : axes)
    out.push_back(cast<StringAttr>(mesh.getAxisNames()[a]).getValue());
  return out;
}

FailureOr<std::vector<cost::ReshardStep>> planReshard(const Layout &src,
                                                      const Layout &dst,
                                                      MeshAttr mesh,
                                                      std::string &error) {
  // Said here with the axes' names; the model refuses the same case.
  for (StringRef a : dst.partial)
    if (!llvm::is_contained(src.partial, a)) {
      error = "the target sharding " + dst.str() +
              " holds partial sums over axis '" + a.str() + "' but the value " +
              src.str() + " does not; a reshard cannot create partial sums";
      return failure();
    }
  cost::Layout from = toCostLayout(src, mesh), to = toCostLayout(dst, mesh);
  from.dims.resize(to.dims.size());
  std::vector<cost::ReshardStep> steps;
  if (!cost::planReshard(from, to, steps, error))
    return failure();
  return steps;
}

} // namespace loom::partition
