//===- InsertExplicitReshards.cpp - the partitioner's decide step ---------===//
//
// Checks that a module is in plan form and makes every change of sharding
// an explicit loom.shard, so that the materialise step (Partition.cpp) only
// has to turn each loom.shard into collectives and every other op into its
// local form:
//  - a sharded argument of a public function (every rank receives the whole
//    value) becomes `loom.shard %arg to S` on a replicated argument;
//  - a sharded loom.weight (every rank has the whole data mapped) likewise;
//  - a returned value is resharded to the function's result sharding
//    (absent: replicated), a call operand to the callee's argument sharding
//    (public callees take replicated arguments), and call results take the
//    callee's result shardings.
// The checks: one mesh, no hand-written collectives next to shardings, no
// ops with regions, partial sums only through linear ops, and operand
// shardings that agree with the result's for elementwise ops and matmuls.
// loom-partition runs the same walk in check-only mode: it changes nothing
// and refuses every change of sharding that is not yet a loom.shard.
//
//===----------------------------------------------------------------------===//

#include "passes/Partition/Passes.h"
#include "passes/Partition/ShardingUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#define DEBUG_TYPE "loom-insert-explicit-reshards"

#include "llvm/Support/DebugLog.h"

namespace loom {
#define GEN_PASS_DEF_INSERTEXPLICITRESHARDSPASS
#include "passes/Partition/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::partition;

namespace {

/// `%s = loom.shard %v to S` right after `v` is defined; replaces the uses
/// of `v` for which `use` returns true.
ShardOp insertShard(OpBuilder &b, Value v, ShardingAttr s,
                    function_ref<bool(OpOperand &)> use) {
  OpBuilder::InsertionGuard guard(b);
  if (auto arg = dyn_cast<BlockArgument>(v))
    b.setInsertionPointToStart(arg.getOwner());
  else
    b.setInsertionPointAfter(v.getDefiningOp());
  auto shard = ShardOp::create(b, v.getLoc(), v, s);
  v.replaceUsesWithIf(shard.getResult(), [&](OpOperand &o) {
    return o.getOwner() != shard && use(o);
  });
  return shard;
}

/// A replicated sharding of rank `rank` on `mesh`.
ShardingAttr replicated(MLIRContext *ctx, FlatSymbolRefAttr mesh,
                        unsigned rank) {
  SmallVector<Attribute> dims(rank, ArrayAttr::get(ctx, {}));
  return ShardingAttr::get(ctx, mesh, ArrayAttr::get(ctx, dims),
                           ArrayAttr::get(ctx, {}));
}

/// What loom-partition says about a change of sharding that is not a
/// loom.shard.
constexpr llvm::StringLiteral kRunDecide =
    "; run loom-insert-explicit-reshards before loom-partition (the "
    "loom-partition-pipeline does)";

/// Reshards `operand` (of `user`) to `want` (null: replicated) with a
/// loom.shard before `user`, unless it is laid out so already. With
/// `checkOnly`, refuses instead.
LogicalResult reshardOperand(OpBuilder &b, OpOperand &operand,
                             ShardingAttr want, FlatSymbolRefAttr mesh,
                             bool checkOnly) {
  Value v = operand.get();
  unsigned rank = rankOf(v.getType());
  if (Layout::of(v) == Layout::of(want, rank))
    return success();
  if (checkOnly)
    return operand.getOwner()->emitOpError()
           << "operand " << operand.getOperandNumber() << " is laid out "
           << Layout::of(v).str() << " but is wanted as "
           << Layout::of(want, rank).str() << " without a loom.shard"
           << kRunDecide;
  LDBG() << "reshard operand " << operand.getOperandNumber() << " of "
         << operand.getOwner()->getName() << ": " << Layout::of(v).str()
         << " -> " << Layout::of(want, rank).str();
  if (!want)
    want = replicated(b.getContext(), mesh, rank);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(operand.getOwner());
  auto shard = ShardOp::create(b, operand.getOwner()->getLoc(), v, want);
  operand.set(shard.getResult());
  return success();
}

std::string axesStr(ArrayRef<StringRef> axes) {
  return "{" + llvm::join(axes, ", ") + "}";
}

//===----------------------------------------------------------------------===//
// Plan-form checks
//===----------------------------------------------------------------------===//

/// Ops through which a partial sum stays a partial sum of the result
/// (linear in each operand).
bool isLinearUnary(Operation *op) {
  return isa<NegOp, ReshapeOp, TransposeOp, SliceOp, BroadcastOp, CastOp,
             GatherOp>(op);
}

LogicalResult checkPartials(Operation *op) {
  SmallVector<Layout> ins;
  for (Value v : op->getOperands())
    ins.push_back(Layout::of(v));
  auto partialOperand = [&]() -> int {
    for (auto [i, l] : llvm::enumerate(ins))
      if (!l.partial.empty())
        return i;
    return -1;
  };
  int first = partialOperand();
  if (op->getNumResults() == 0)
    return success();
  Layout out = Layout::of(op->getResult(0));
  auto setOf = [](ArrayRef<StringRef> a) {
    SmallVector<StringRef> s(a);
    llvm::sort(s);
    return s;
  };
  auto notLinear = [&]() {
    return op->emitOpError()
           << "operand " << first << " holds partial sums over "
           << axesStr(ins[first].partial) << " but the op is not linear in "
           << "it: sum the partial values first (loom.shard to a sharding "
           << "without `partial`)";
  };
  auto resultMismatch = [&](ArrayRef<StringRef> expected) {
    return op->emitOpError()
           << "result is partial over " << axesStr(out.partial)
           << " but its operands make it partial over " << axesStr(expected)
           << "; fix the result's sharding or reshard "
           << "the operands";
  };
  if (isa<ShardOp, func::CallOp, func::ReturnOp>(op))
    return success();
  if (isLinearUnary(op) || isa<EmbeddingOp>(op)) {
    // Linear in operand 0 only (not in the indices of a gather).
    for (auto [i, l] : llvm::enumerate(ins))
      if (i > 0 && !l.partial.empty()) {
        first = i;
        return notLinear();
      }
    ArrayRef<StringRef> p =
        first < 0 ? ArrayRef<StringRef>() : ArrayRef<StringRef>(ins[0].partial);
    if (setOf(p) != setOf(out.partial))
      return resultMismatch(p);
    return success();
  }
  if (isa<AddOp, SubOp, ConcatOp>(op)) {
    for (auto [i, l] : llvm::enumerate(ins))
      if (setOf(l.partial) != setOf(ins[0].partial))
        return op->emitOpError()
               << "operands 0 and " << i << " hold partial sums over "
               << "different axes (" << axesStr(ins[0].partial) << " and "
               << axesStr(l.partial) << "); a sum of partial sums needs the "
               << "same axes on every operand";
    if (setOf(ins[0].partial) != setOf(out.partial))
      return resultMismatch(ins[0].partial);
    return success();
  }
  if (isa<MulOp, DivOp, MatmulOp>(op)) {
    int partials =
        llvm::count_if(ins, [](const Layout &l) { return !l.partial.empty(); });
    if (partials > 1)
      return op->emitOpError()
             << "both operands hold partial sums; a product of two partial "
             << "sums is not a partial sum of the product: sum one first";
    if (isa<DivOp>(op) && first == 1)
      return notLinear();
    if (isa<MatmulOp>(op)) {
      // The result is also partial over the contraction's axes.
      for (StringRef a : first < 0 ? ArrayRef<StringRef>()
                                   : ArrayRef<StringRef>(ins[first].partial))
        if (!llvm::is_contained(out.partial, a))
          return resultMismatch(ins[first].partial);
      return success();
    }
    ArrayRef<StringRef> p = first < 0 ? ArrayRef<StringRef>()
                                      : ArrayRef<StringRef>(ins[first].partial);
    if (setOf(p) != setOf(out.partial))
      return resultMismatch(p);
    return success();
  }
  if (isa<QMatmulOp>(op)) {
    // input [..., K] x weight [N, K]: a split K makes the result partial
    // over K's axes (checked with the shapes in checkQMatmul).
    if (first >= 0)
      return notLinear();
    ArrayRef<StringRef> k = ins[0].dims.back();
    if (setOf(k) != setOf(out.partial))
      return resultMismatch(k);
    return success();
  }
  if (auto red = dyn_cast<ReduceOp>(op)) {
    if (first >= 0 && red.getKind() != ReduceKind::sum)
      return notLinear();
    return success();
  }
  if (first >= 0)
    return notLinear();
  if (!out.partial.empty() && !isa<func::CallOp>(op))
    return op->emitOpError()
           << "result is declared partial over " << axesStr(out.partial)
           << " but this op cannot produce partial sums";
  return success();
}

/// Elementwise ops: every operand dimension that is not broadcast is split
/// exactly as the result's dimension.
LogicalResult checkElementwise(Operation *op) {
  if (op->getNumResults() != 1)
    return success();
  Value res = op->getResult(0);
  auto rt = dyn_cast<RankedTensorType>(res.getType());
  if (!rt)
    return success();
  Layout out = Layout::of(res);
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() > rt.getRank())
      continue;
    Layout in = Layout::of(v);
    int64_t offset = rt.getRank() - t.getRank();
    for (int64_t d = 0; d < t.getRank(); ++d) {
      int64_t rd = d + offset;
      bool broadcast = t.getDimSize(d) == 1 && rt.getDimSize(rd) != 1;
      if (broadcast) {
        if (!in.dims[d].empty())
          return op->emitOpError()
                 << "operand " << i << " is split on its broadcast "
                 << "dimension " << d << " over " << axesStr(in.dims[d]);
        continue;
      }
      if (in.dims[d] != out.dims[rd])
        return op->emitOpError()
               << "operand " << i << " (" << t << ") is split on dimension "
               << d << " over " << axesStr(in.dims[d])
               << " but the result's dimension " << rd << " is split over "
               << axesStr(out.dims[rd])
               << "; in plan form they agree (reshard the operand with "
               << "loom.shard)";
    }
  }
  return success();
}

LogicalResult checkMatmul(MatmulOp mm) {
  Layout a = Layout::of(mm.getLhs()), b = Layout::of(mm.getRhs()),
         c = Layout::of(mm.getResult());
  unsigned ra = a.dims.size(), rb = b.dims.size(), rc = c.dims.size();
  unsigned am = mm.getTransposeA() ? ra - 1 : ra - 2,
           ak = mm.getTransposeA() ? ra - 2 : ra - 1;
  unsigned bk = mm.getTransposeB() ? rb - 1 : rb - 2,
           bn = mm.getTransposeB() ? rb - 2 : rb - 1;
  auto mismatch = [&](StringRef what, unsigned opd, unsigned dim,
                      ArrayRef<StringRef> have, ArrayRef<StringRef> want) {
    return mm.emitOpError()
           << what << ": operand " << opd << " is split on dimension " << dim
           << " over " << axesStr(have) << " but " << axesStr(want)
           << " is needed; reshard it with loom.shard";
  };
  if (a.dims[ak] != b.dims[bk])
    return mismatch("contraction dimension", 1, bk, b.dims[bk], a.dims[ak]);
  if (a.dims[am] != c.dims[rc - 2])
    return mismatch("rows", 0, am, a.dims[am], c.dims[rc - 2]);
  if (b.dims[bn] != c.dims[rc - 1])
    return mismatch("columns", 1, bn, b.dims[bn], c.dims[rc - 1]);
  for (StringRef axis : a.dims[ak])
    if (!llvm::is_contained(c.partial, axis))
      return mm.emitOpError()
             << "the contraction dimension is split over '" << axis
             << "', so the result holds partial sums over it: declare "
             << "`partial = {" << llvm::join(a.dims[ak], ", ")
             << "}` on the result";
  // Batch dimensions (right-aligned, numpy broadcast).
  auto batchCheck = [&](const Layout &l, unsigned r, unsigned opd,
                        Type t) -> LogicalResult {
    auto st = cast<RankedTensorType>(t);
    auto ct = mm.getResult().getType();
    for (unsigned d = 0; d + 2 < r; ++d) {
      unsigned cd = d + (rc - r);
      if (st.getDimSize(d) == 1 && ct.getDimSize(cd) != 1) {
        if (!l.dims[d].empty())
          return mismatch("broadcast batch dimension", opd, d, l.dims[d], {});
        continue;
      }
      if (l.dims[d] != c.dims[cd])
        return mismatch("batch dimension", opd, d, l.dims[d], c.dims[cd]);
    }
    return success();
  };
  if (failed(batchCheck(a, ra, 0, mm.getLhs().getType())) ||
      failed(batchCheck(b, rb, 1, mm.getRhs().getType())))
    return failure();
  return success();
}

LogicalResult checkQMatmul(QMatmulOp qm) {
  Layout x = Layout::of(qm.getInput()), w = Layout::of(qm.getWeight()),
         y = Layout::of(qm.getResult());
  unsigned r = x.dims.size();
  auto mismatch = [&](StringRef what, ArrayRef<StringRef> have,
                      ArrayRef<StringRef> want) {
    return qm.emitOpError()
           << what << " is split over " << axesStr(have) << " but "
           << axesStr(want) << " is needed; reshard it with loom.shard";
  };
  if (w.dims.size() != 2 || y.dims.size() != r)
    return success(); // the op verifier reports shapes
  if (x.dims[r - 1] != w.dims[1])
    return mismatch("the weight's K dimension", w.dims[1], x.dims[r - 1]);
  if (w.dims[0] != y.dims[r - 1])
    return mismatch("the weight's N dimension", w.dims[0], y.dims[r - 1]);
  for (unsigned d = 0; d + 1 < r; ++d)
    if (x.dims[d] != y.dims[d])
      return mismatch("the input's dimension " + std::to_string(d), x.dims[d],
                      y.dims[d]);
  return success();
}

LogicalResult checkOp(Operation *op) {
  if (failed(checkPartials(op)))
    return failure();
  if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, AndOp, OrOp,
          CompareOp, SelectOp, CastOp, NegOp, AbsOp, ExpOp, LogOp, SqrtOp,
          RsqrtOp, ReciprocalOp, SinOp, CosOp, TanhOp, SigmoidOp, SiluOp,
          ReluOp, ErfOp, NotOp, GeluOp>(op))
    return checkElementwise(op);
  if (auto mm = dyn_cast<MatmulOp>(op))
    return checkMatmul(mm);
  if (auto qm = dyn_cast<QMatmulOp>(op))
    return checkQMatmul(qm);
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// The decide step
//===----------------------------------------------------------------------===//

LogicalResult loom::makeReshardsExplicit(ModuleOp module, bool checkOnly) {
  if (!hasShardings(module))
    return success();
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);

  // One mesh for the whole program.
  FlatSymbolRefAttr mesh;
  Operation *meshUser = nullptr;
  auto useMesh = [&](Operation *at, ShardingAttr s) -> LogicalResult {
    if (!s)
      return success();
    if (!lookupMesh(at, s.getMesh()))
      return at->emitOpError() << "sharding refers to unknown mesh "
                               << s.getMesh() << "; declare it with loom.mesh";
    if (!mesh) {
      mesh = s.getMesh();
      meshUser = at;
      return success();
    }
    if (mesh != s.getMesh()) {
      InFlightDiagnostic d = at->emitOpError()
                             << "shardings refer to two meshes, " << mesh
                             << " and " << s.getMesh()
                             << "; a program is partitioned over one mesh";
      d.attachNote(meshUser->getLoc()) << "mesh " << mesh << " is used here";
      return d;
    }
    return success();
  };
  WalkResult walk = module.walk([&](Operation *op) -> WalkResult {
    if (auto shard = dyn_cast<ShardOp>(op))
      if (failed(useMesh(op, shard.getSharding())))
        return WalkResult::interrupt();
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (failed(useMesh(op, getResultSharding(op, i))))
        return WalkResult::interrupt();
    if (auto fn = dyn_cast<func::FuncOp>(op)) {
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (failed(useMesh(op, fn.getArgAttrOfType<ShardingAttr>(
                                   i, LoomDialect::kShardingAttrName))))
          return WalkResult::interrupt();
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        if (failed(useMesh(op, fn.getResultAttrOfType<ShardingAttr>(
                                   i, LoomDialect::kShardingAttrName))))
          return WalkResult::interrupt();
    }
    if (isa<CollectiveOpInterface, LocalSliceOp>(op))
      return op->emitOpError()
             << "is a per-rank op in a program that carries shardings: in "
                "plan form the partitioner inserts every collective (remove "
                "the shardings to run the program as written)";
    if (op->getNumRegions() && !isa<func::FuncOp, ModuleOp>(op))
      return op->emitOpError()
             << "has regions; the partitioner handles straight-line "
                "functions only";
    if (auto w = dyn_cast<WeightOp>(op)) {
      ShardingAttr s = getResultSharding(op, 0);
      auto q = dyn_cast<QTensorType>(w.getType());
      if (s && q && !Layout::of(s, rankOf(w.getType())).isReplicated() &&
          (!w.getSource() || !q.getStorageType()))
        return w.emitOpError()
               << "is a sharded quantized weight without block storage; "
                  "the partitioner splits quantized weights only as they "
                  "are loaded (give it `from <file>` or replicate it)";
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (!mesh) // only replicated annotations
    return success();

  SymbolTable symbols(module);
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    Block &entry = fn.getBody().front();
    // Arguments of public functions arrive whole on every rank.
    if (fn.isPublic()) {
      for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
        auto s = fn.getArgAttrOfType<ShardingAttr>(
            i, LoomDialect::kShardingAttrName);
        // State (a KV cache) is allocated per rank by the runtime in its
        // local layout, and a pipeline stage's boundary argument is the
        // previous stage's local shard: the argument keeps its sharding
        // (local type).
        if (!s || fn.getArgAttr(i, LoomDialect::kStateAttrName) ||
            fn.getArgAttr(i, "loom.boundary"))
          continue;
        if (!checkOnly)
          fn.removeArgAttr(i, LoomDialect::kShardingAttrName);
        Layout l = Layout::of(s, rankOf(fn.getArgument(i).getType()));
        if (!l.partial.empty())
          return fn.emitOpError()
                 << "argument " << i << " is declared partial over "
                 << axesStr(l.partial)
                 << ": every rank receives the whole value of an entry "
                    "point's argument, so it can be split, not partial";
        if (l.isReplicated())
          continue;
        if (checkOnly)
          return fn.emitOpError()
                 << "argument " << i << " is sharded " << l.str()
                 << " but arrives whole on every rank" << kRunDecide;
        LDBG() << "@" << fn.getSymName() << " argument " << i << ": " << l.str()
               << " from whole";
        insertShard(b, entry.getArgument(i), s,
                    [](OpOperand &) { return true; });
      }
    }
    SmallVector<Operation *> ops;
    for (Operation &op : entry)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto w = dyn_cast<WeightOp>(op)) {
        ShardingAttr s = getResultSharding(op, 0);
        if (!s)
          continue;
        Layout l = Layout::of(s, rankOf(w.getType()));
        if (!l.partial.empty())
          return w.emitOpError()
                 << "weight is declared partial over " << axesStr(l.partial)
                 << "; every rank maps the whole weight";
        if (l.isReplicated()) {
          if (!checkOnly)
            op->removeAttr(LoomDialect::kShardingAttrName);
          continue;
        }
        // A float weight with storage is loaded split: each rank reads only
        // its block (loom-run copies a non-contiguous block once at load).
        // The partitioner gives it its local type; `loom.split` keeps the
        // split and the global shape for the bundle.
        RankedTensorType t = dyn_cast<RankedTensorType>(w.getType());
        if (auto q = dyn_cast<QTensorType>(w.getType()))
          t = q.getStorageType(); // rows of blocks: split in whole blocks
        if (w.getSource() && t) {
          if (checkOnly) {
            if (op->hasAttr(LoomDialect::kSplitAttrName))
              continue;
            return w.emitOpError() << "is sharded " << l.str()
                                   << " but has no `loom.split`" << kRunDecide;
          }
          op->setAttr(
              LoomDialect::kSplitAttrName,
              SplitAttr::get(w.getContext(), s.getDims(), t.getShape()));
          continue;
        }
        if (checkOnly)
          return w.emitOpError()
                 << "is sharded " << l.str() << " but every rank maps it whole"
                 << kRunDecide;
        LDBG() << "weight " << w.getName() << ": " << l.str() << " from whole";
        op->removeAttr(LoomDialect::kShardingAttrName);
        insertShard(b, w.getResult(), s, [](OpOperand &) { return true; });
        continue;
      }
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (!callee)
          continue;
        bool entryPoint = callee.isPublic() && !callee.isExternal();
        for (OpOperand &operand : call->getOpOperands()) {
          unsigned i = operand.getOperandNumber();
          ShardingAttr want = entryPoint
                                  ? ShardingAttr()
                                  : callee.getArgAttrOfType<ShardingAttr>(
                                        i, LoomDialect::kShardingAttrName);
          if (failed(reshardOperand(b, operand, want, mesh, checkOnly)))
            return failure();
        }
        for (unsigned i = 0; i < call.getNumResults(); ++i) {
          ShardingAttr have = getResultSharding(op, i);
          ShardingAttr want = callee.getResultAttrOfType<ShardingAttr>(
              i, LoomDialect::kShardingAttrName);
          unsigned rank = rankOf(call.getResult(i).getType());
          if (have && Layout::of(have, rank) != Layout::of(want, rank))
            return call.emitOpError()
                   << "result " << i << " is annotated "
                   << Layout::of(have, rank).str() << " but @"
                   << callee.getName() << " returns it as "
                   << Layout::of(want, rank).str()
                   << "; reshard the result with loom.shard instead";
          if (checkOnly && Layout::of(have, rank) != Layout::of(want, rank))
            return call.emitOpError()
                   << "result " << i << " is not annotated but @"
                   << callee.getName() << " returns it as "
                   << Layout::of(want, rank).str() << kRunDecide;
          if (!checkOnly)
            setResultSharding(op, i, want);
        }
        continue;
      }
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (OpOperand &operand : ret->getOpOperands())
          if (failed(reshardOperand(b, operand,
                                    fn.getResultAttrOfType<ShardingAttr>(
                                        operand.getOperandNumber(),
                                        LoomDialect::kShardingAttrName),
                                    mesh, checkOnly)))
            return failure();
        continue;
      }
    }
    // Plan-form checks, on the ops as they are now.
    for (Operation &op : entry)
      if (failed(checkOp(&op)))
        return failure();
  }
  return success();
}

namespace {
struct InsertExplicitReshardsPass
    : loom::impl::InsertExplicitReshardsPassBase<InsertExplicitReshardsPass> {
  void runOnOperation() override {
    if (failed(makeReshardsExplicit(getOperation())))
      signalPassFailure();
  }
};
} // namespace
