//===- OptimizeCollectives.cpp - cheaper collectives after partitioning ---===//
//
// Rewrites on the per-rank program that loom-partition produces:
//
//  1. `all_reduce(x) axes A` whose only use is a `local_slice` that splits
//     one dimension over exactly the axes A (in any order) becomes a
//     `reduce_scatter` of that dimension: every rank receives only its
//     block, half the bytes of the all-reduce. Other dimensions the slice
//     splits stay a local_slice after it.
//
//  2. Sequence-parallel norms: `all_reduce(x) axes A` whose only use starts
//     a chain of row-wise ops (elementwise ops, whose other operands either
//     broadcast along dimension 0 or are replicated and then sliced
//     locally, and rms_norm / layer_norm that do not normalise dimension 0)
//     containing at least one norm becomes `reduce_scatter` along dimension
//     0, the chain on the shard of the rows, and an `all_gather` of the
//     chain's result. The bytes on the wire are those of the all-reduce
//     (a ring all-reduce is a reduce-scatter plus an all-gather); each rank
//     computes the chain on 1/p of the rows.
//
//  3. Small independent all_reduces (same mesh, axes, reduction and element
//     type; together at most 1 MiB) are merged into one: the inputs are
//     flattened and concatenated, reduced once, and sliced back. One
//     latency instead of two; the second input must already exist where
//     the first all_reduce runs.
//
//===----------------------------------------------------------------------===//

#include "passes/Partition/Passes.h"
#include "passes/Partition/ShardingUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "loom-optimize-collectives"

namespace loom {
#define GEN_PASS_DEF_OPTIMIZECOLLECTIVESPASS
#include "passes/Partition/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::partition;

namespace {

SmallVector<StringRef> namesOf(ArrayAttr axes) {
  SmallVector<StringRef> out;
  for (Attribute a : axes)
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

bool sameSet(ArrayRef<StringRef> a, ArrayRef<StringRef> b) {
  SmallVector<StringRef> x(a), y(b);
  llvm::sort(x);
  llvm::sort(y);
  return x == y;
}

int64_t groupSize(MeshAttr mesh, ArrayRef<StringRef> axes) {
  int64_t p = 1;
  for (StringRef a : axes)
    p *= mesh.getAxisSize(a);
  return p;
}

/// reduce_scatter(s) of `v` along `dim` over `axes` (listed major to minor):
/// one collective when the runtime's group order is the listed order,
/// otherwise one per axis, major first.
Value reduceScatter(OpBuilder &b, Location loc, Value v, int64_t dim,
                    ArrayRef<StringRef> axes, FlatSymbolRefAttr meshSym,
                    MeshAttr mesh, Reduction red) {
  SmallVector<SmallVector<StringRef>> groups;
  if (inMeshOrder(axes, mesh))
    groups.push_back(SmallVector<StringRef>(axes));
  else
    for (StringRef a : axes)
      groups.push_back({a});
  for (ArrayRef<StringRef> g : groups) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(t.getShape());
    if (!ShapedType::isDynamic(shape[dim]))
      shape[dim] /= groupSize(mesh, g);
    v = ReduceScatterOp::create(
        b, loc, RankedTensorType::get(shape, t.getElementType()), v, meshSym,
        axesAttr(b.getContext(), g), b.getI64IntegerAttr(dim),
        ReductionAttr::get(b.getContext(), red));
  }
  return v;
}

/// Pattern 1: all_reduce -> local_slice  =>  reduce_scatter (-> local_slice).
bool reduceThenSlice(AllReduceOp ar, MeshAttr mesh) {
  if (!ar->hasOneUse())
    return false;
  auto slice = dyn_cast<LocalSliceOp>(*ar->getUsers().begin());
  if (!slice || slice.getMeshAttr() != ar.getMeshAttr())
    return false;
  SmallVector<StringRef> group = namesOf(ar.getMeshAxes());
  std::optional<int64_t> dim;
  for (auto [d, entry] : llvm::enumerate(slice.getSplit()))
    if (sameSet(namesOf(cast<ArrayAttr>(entry)), group))
      dim = d;
  if (!dim)
    return false;
  OpBuilder b(slice);
  SmallVector<StringRef> order =
      namesOf(cast<ArrayAttr>(slice.getSplit()[*dim]));
  Value v = reduceScatter(b, ar.getLoc(), ar.getInput(), *dim, order,
                          ar.getMeshAttr(), mesh, ar.getReduction());
  SmallVector<Attribute> rest(slice.getSplit().begin(), slice.getSplit().end());
  rest[*dim] = b.getArrayAttr({});
  bool more = llvm::any_of(
      rest, [](Attribute a) { return !cast<ArrayAttr>(a).empty(); });
  if (more)
    v = LocalSliceOp::create(b, slice.getLoc(), slice.getType(), v,
                             slice.getMeshAttr(), b.getArrayAttr(rest));
  slice.getResult().replaceAllUsesWith(v);
  slice.erase();
  ar.erase();
  return true;
}

/// Whether `op` works row by row along dimension 0 of `v` (one of its
/// operands), so that it can run on a block of rows.
bool isRowWise(Operation *op, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  if (op->getNumResults() != 1 || op->getResult(0).getType() != v.getType())
    return false;
  if (auto rms = dyn_cast<RmsNormOp>(op))
    return rms.getInput() == v && t.getRank() >= 2;
  if (auto ln = dyn_cast<LayerNormOp>(op)) {
    int64_t axis = static_cast<int64_t>(ln.getAxis());
    if (axis < 0)
      axis += t.getRank();
    return ln.getInput() == v && axis >= 1;
  }
  return op->hasTrait<OpTrait::Elementwise>() ||
         isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, SelectOp, CastOp>(
             op);
}

/// Pattern 2: all_reduce -> row-wise chain with a norm  =>
/// reduce_scatter(dim 0) -> chain on the shard -> all_gather(dim 0).
bool sequenceParallelNorm(AllReduceOp ar, MeshAttr mesh) {
  auto t = cast<RankedTensorType>(ar.getType());
  SmallVector<StringRef> group = namesOf(ar.getMeshAxes());
  int64_t p = groupSize(mesh, group);
  if (t.getRank() < 2 || t.isDynamicDim(0) || t.getDimSize(0) % p != 0 ||
      p == 1)
    return false;
  SmallVector<Operation *> chain;
  bool norm = false;
  Value cur = ar.getResult();
  while (cur.hasOneUse()) {
    Operation *user = *cur.getUsers().begin();
    if (!isRowWise(user, cur))
      break;
    // The other operands must not vary along dimension 0 or be the same
    // size (replicated: sliced locally).
    bool ok = true;
    for (Value o : user->getOperands()) {
      if (o == cur)
        continue;
      auto ot = cast<RankedTensorType>(o.getType());
      if (ot.getRank() == t.getRank() && !ot.isDynamicDim(0) &&
          ot.getDimSize(0) != 1 && ot.getDimSize(0) != t.getDimSize(0))
        ok = false;
      if (ot.getRank() == t.getRank() && ot.isDynamicDim(0))
        ok = false;
    }
    if (!ok)
      break;
    norm |= isa<RmsNormOp, LayerNormOp>(user);
    chain.push_back(user);
    cur = user->getResult(0);
  }
  // Stop the chain after its last norm: later elementwise ops gain little.
  while (!chain.empty() && !isa<RmsNormOp, LayerNormOp>(chain.back()))
    chain.pop_back();
  if (!norm || chain.empty())
    return false;

  OpBuilder b(ar);
  MLIRContext *ctx = b.getContext();
  SmallVector<StringRef> order(group);
  // Keep the runtime's group order so that one reduce_scatter and one
  // all_gather suffice.
  llvm::sort(order, [&](StringRef x, StringRef y) {
    return *mesh.getAxisIndex(x) < *mesh.getAxisIndex(y);
  });
  Value shard = reduceScatter(b, ar.getLoc(), ar.getInput(), 0, order,
                              ar.getMeshAttr(), mesh, ar.getReduction());
  auto shardType = cast<RankedTensorType>(shard.getType());
  Value prev = ar.getResult();
  for (Operation *op : chain) {
    b.setInsertionPoint(op);
    for (OpOperand &operand : op->getOpOperands()) {
      if (operand.get() == prev) {
        operand.set(shard);
        continue;
      }
      auto ot = cast<RankedTensorType>(operand.get().getType());
      if (ot.getRank() == t.getRank() && ot.getDimSize(0) == t.getDimSize(0)) {
        SmallVector<Attribute> split(ot.getRank(), b.getArrayAttr({}));
        split[0] = axesAttr(ctx, order);
        SmallVector<int64_t> shape(ot.getShape());
        shape[0] /= p;
        operand.set(LocalSliceOp::create(
            b, op->getLoc(), RankedTensorType::get(shape, ot.getElementType()),
            operand.get(), ar.getMeshAttr(), b.getArrayAttr(split)));
      }
    }
    prev = op->getResult(0);
    auto rt = cast<RankedTensorType>(prev.getType());
    prev.setType(
        RankedTensorType::get(shardType.getShape(), rt.getElementType()));
    shard = prev;
  }
  b.setInsertionPointAfter(chain.back());
  auto outType = cast<RankedTensorType>(chain.back()->getResult(0).getType());
  SmallVector<int64_t> full(outType.getShape());
  full[0] *= p;
  auto gathered = AllGatherOp::create(
      b, ar.getLoc(), RankedTensorType::get(full, outType.getElementType()),
      shard, ar.getMeshAttr(), axesAttr(ctx, order), b.getI64IntegerAttr(0));
  shard.replaceAllUsesExcept(gathered.getResult(), gathered);
  ar.erase();
  return true;
}

struct OptimizeCollectivesPass
    : loom::impl::OptimizeCollectivesPassBase<OptimizeCollectivesPass> {
  /// Merges small independent all_reduces (rewrite 3), repeatedly.
  static void mergeSmall(Block &block) {
    constexpr int64_t kMergeBytes = 1 << 20;
    auto bytesOf = [](AllReduceOp ar) -> int64_t {
      auto t = dyn_cast<RankedTensorType>(ar.getInput().getType());
      if (!t || !t.hasStaticShape() || !t.getElementType().isIntOrFloat())
        return -1;
      return t.getNumElements() *
             std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
    };
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<AllReduceOp> ars(block.getOps<AllReduceOp>());
      for (size_t i = 0; i < ars.size() && !changed; ++i) {
        AllReduceOp a = ars[i];
        int64_t ba = bytesOf(a);
        if (ba < 0 || ba > kMergeBytes)
          continue;
        for (size_t j = i + 1; j < ars.size() && !changed; ++j) {
          AllReduceOp c = ars[j];
          int64_t bc = bytesOf(c);
          auto ta = cast<RankedTensorType>(a.getInput().getType());
          // The same input twice is CSE's business, not a merge.
          if (bc < 0 || ba + bc > kMergeBytes || c.getInput() == a.getInput() ||
              c.getMeshAttr() != a.getMeshAttr() ||
              c.getMeshAxes() != a.getMeshAxes() ||
              c.getReduction() != a.getReduction() ||
              cast<RankedTensorType>(c.getInput().getType()).getElementType() !=
                  ta.getElementType())
            continue;
          // The second input must be available where the first runs.
          Operation *def = c.getInput().getDefiningOp();
          if (def && (def->getBlock() != &block || !def->isBeforeInBlock(a)))
            continue;
          auto tc = cast<RankedTensorType>(c.getInput().getType());
          Type elem = ta.getElementType();
          int64_t na = ta.getNumElements(), nc = tc.getNumElements();
          OpBuilder b(a);
          Location loc = a.getLoc();
          auto flat = [&](Value v, int64_t n) -> Value {
            return ReshapeOp::create(b, loc, RankedTensorType::get({n}, elem),
                                     v);
          };
          Value both = ConcatOp::create(
              b, loc, RankedTensorType::get({na + nc}, elem),
              ValueRange{flat(a.getInput(), na), flat(c.getInput(), nc)},
              uint64_t(0));
          Value red =
              AllReduceOp::create(b, loc, both.getType(), both, a.getMeshAttr(),
                                  a.getMeshAxes(), a.getReductionAttr());
          auto part = [&](int64_t start, int64_t n, RankedTensorType t) {
            Value sl = SliceOp::create(b, loc, RankedTensorType::get({n}, elem),
                                       red, ArrayRef<int64_t>{start},
                                       ArrayRef<int64_t>{start + n},
                                       ArrayRef<int64_t>{1});
            return ReshapeOp::create(b, loc, t, sl).getResult();
          };
          a.getResult().replaceAllUsesWith(part(0, na, ta));
          c.getResult().replaceAllUsesWith(part(na, nc, tc));
          a.erase();
          c.erase();
          changed = true;
        }
      }
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<AllReduceOp> reduces;
    module.walk([&](AllReduceOp ar) { reduces.push_back(ar); });
    for (AllReduceOp ar : reduces) {
      MeshOp meshOp = lookupMesh(ar, ar.getMeshAttr());
      if (!meshOp)
        continue; // the verifier reports it
      MeshAttr mesh = meshOp.getMesh();
      Location loc = ar.getLoc();
      if (reduceThenSlice(ar, mesh)) {
        LDBG() << "all_reduce + local_slice -> reduce_scatter at " << loc;
        continue;
      }
      // Sums only: a max/min all-reduce followed by a norm is rare.
      if (ar.getReduction() == Reduction::sum && sequenceParallelNorm(ar, mesh))
        LDBG() << "sequence-parallel norm after the all_reduce at " << loc;
    }
    module.walk([&](func::FuncOp fn) {
      for (Block &block : fn.getBody())
        mergeSmall(block);
    });
  }
};

} // namespace
