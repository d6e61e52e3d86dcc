//===- Partition.cpp - the partitioner's materialise step -----------------===//
//
// After the decide step (InsertExplicitReshards.cpp) every change of
// sharding is a loom.shard. This step rewrites each function in place to the
// program of one rank:
//  - every value gets its local type (each dimension divided by the product
//    of the sizes of its axes); ops whose attributes encode global sizes are
//    adjusted (slice limits, constants) or refused with a diagnostic when
//    they cannot run on a shard (a softmax, norm, gather, concat or
//    embedding table split along the dimension the op works across);
//  - every loom.shard becomes the steps that lib/Cost's reshard model
//    chooses (include/loom/Cost/Reshard.h), the steps the planner priced;
//  - private functions take and return local values; public functions
//    (entry points) take the global values every rank receives and return
//    their results laid out as their result shardings say;
//  - every sharding attribute is removed.
//
//===----------------------------------------------------------------------===//

#include "loom/Support/Axis.h"
#include "passes/Partition/Passes.h"
#include "passes/Partition/ShardingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/DebugLog.h"

#define DEBUG_TYPE "loom-partition"

namespace loom {
#define GEN_PASS_DEF_PARTITIONPASS
#include "passes/Partition/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::partition;

namespace {

/// ONNX's "to the end" slice limit, as the importer writes it.
constexpr int64_t kSliceToEnd = 2147483647;

std::string axesStr(ArrayRef<StringRef> axes) {
  return "{" + llvm::join(axes, ", ") + "}";
}

/// The layouts of an op's operands and results, taken before any rewrite.
struct OpLayouts {
  SmallVector<Layout> ins, outs;
  /// The global types of the operands.
  SmallVector<Type> inTypes;
};

class Materializer {
public:
  Materializer(ModuleOp module, MeshAttr mesh, FlatSymbolRefAttr meshSym)
      : module(module), mesh(mesh), meshSym(meshSym), b(module.getContext()) {}

  LogicalResult run();

private:
  ModuleOp module;
  MeshAttr mesh;
  FlatSymbolRefAttr meshSym;
  OpBuilder b;

  LogicalResult runOnFunction(func::FuncOp fn);
  LogicalResult localise(Operation *op, const OpLayouts &l);
  FailureOr<Value> reshard(ShardOp op, const Layout &src, const Layout &dst);
  /// A local_slice of `v` (a value local under `cur`) by `split`.
  Value localSlice(Location loc, Value v,
                   ArrayRef<SmallVector<StringRef, 2>> split);
  /// Refuses `op` because dimension `dim` of operand/result `what` is split.
  LogicalResult refuse(Operation *op, StringRef what, unsigned dim,
                       ArrayRef<StringRef> axes, StringRef why) {
    return op->emitOpError()
           << "cannot run on a shard: " << what << " is split on dimension "
           << dim << " over " << axesStr(axes) << ", " << why
           << " (replicate that dimension with loom.shard before the op)";
  }
  int64_t groupSize(ArrayRef<StringRef> axes) {
    int64_t p = 1;
    for (StringRef a : axes)
      p *= mesh.getAxisSize(a);
    return p;
  }
};

Value Materializer::localSlice(Location loc, Value v,
                               ArrayRef<SmallVector<StringRef, 2>> split) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  SmallVector<Attribute> entries;
  for (auto [d, axes] : llvm::enumerate(split)) {
    shape[d] = localSize(shape[d], axes, mesh);
    entries.push_back(axesAttr(b.getContext(), axes));
  }
  return LocalSliceOp::create(b, loc,
                              RankedTensorType::get(shape, t.getElementType()),
                              v, meshSym, b.getArrayAttr(entries));
}

FailureOr<Value> Materializer::reshard(ShardOp op, const Layout &src,
                                       const Layout &dst) {
  std::string error;
  FailureOr<std::vector<cost::ReshardStep>> steps =
      planReshard(src, dst, mesh, error);
  if (failed(steps))
    return op.emitOpError() << error;
  Value v = op.getInput();
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  b.setInsertionPoint(op);
  for (const cost::ReshardStep &s : *steps) {
    LDBG() << "  " << cost::stepName(s.kind) << " over "
           << axesStr(axisNames(s.axes, mesh)) << " dim " << s.dim;
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(t.getShape());
    auto scale = [&](int64_t d, int64_t p, bool mul) {
      if (!ShapedType::isDynamic(shape[d]))
        shape[d] = mul ? shape[d] * p : shape[d] / p;
    };
    SmallVector<StringRef, 2> names = axisNames(s.axes, mesh);
    ArrayAttr axes = axesAttr(ctx, names);
    int64_t p = groupSize(names);
    switch (s.kind) {
    case cost::ReshardStep::AllReduce:
      v = AllReduceOp::create(b, loc, t, v, meshSym, axes,
                              ReductionAttr::get(ctx, Reduction::sum));
      break;
    case cost::ReshardStep::ReduceScatter:
      scale(s.dim, p, false);
      v = ReduceScatterOp::create(
          b, loc, RankedTensorType::get(shape, t.getElementType()), v, meshSym,
          axes, b.getI64IntegerAttr(s.dim),
          ReductionAttr::get(ctx, Reduction::sum));
      break;
    case cost::ReshardStep::AllGather:
      scale(s.dim, p, true);
      v = AllGatherOp::create(b, loc,
                              RankedTensorType::get(shape, t.getElementType()),
                              v, meshSym, axes, b.getI64IntegerAttr(s.dim));
      break;
    case cost::ReshardStep::AllToAll:
      scale(s.dim, p, false);
      scale(s.concatDim, p, true);
      v = AllToAllOp::create(
          b, loc, RankedTensorType::get(shape, t.getElementType()), v, meshSym,
          axes, b.getI64IntegerAttr(s.dim), b.getI64IntegerAttr(s.concatDim));
      break;
    case cost::ReshardStep::LocalSlice: {
      SmallVector<SmallVector<StringRef, 2>> split;
      for (const std::vector<int> &d : s.split)
        split.push_back(axisNames(d, mesh));
      v = localSlice(loc, v, split);
      break;
    }
    }
  }
  return v;
}

LogicalResult Materializer::localise(Operation *op, const OpLayouts &l) {
  bool sharded =
      llvm::any_of(l.ins, [](const Layout &x) { return !x.isReplicated(); }) ||
      llvm::any_of(l.outs, [](const Layout &x) { return !x.isReplicated(); });
  if (!sharded)
    return success();
  // The size of a split dim: a program written for the global value asks
  // for the global size (a run-time dim split over 'dp' by the planner;
  // shards are equal, so local size x group).
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    std::optional<int64_t> d = dim.getConstantIndex();
    if (!d || *d < 0 || *d >= static_cast<int64_t>(l.ins[0].dims.size()))
      return op->emitOpError()
             << "asks for a dimension of a sharded tensor that is not a "
                "constant; the partitioner cannot give its global size";
    int64_t g = 1;
    for (StringRef a : l.ins[0].dims[*d])
      g *= mesh.getAxisSize(a);
    if (g > 1) {
      b.setInsertionPointAfter(op);
      Value group = arith::ConstantIndexOp::create(b, op->getLoc(), g);
      auto global =
          arith::MulIOp::create(b, op->getLoc(), dim.getResult(), group);
      dim.getResult().replaceAllUsesExcept(global, global);
    }
    return success();
  }
  if (!isa<LoomDialect>(op->getDialect()) && !isa<func::CallOp>(op))
    return op->emitOpError()
           << "is not a loom op and works on sharded values; the "
              "partitioner only knows how to run loom ops on shards";

  // Ops that work across a whole dimension cannot run on a shard of it.
  if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    int64_t rank = sm.getInput().getType().getRank();
    int64_t axis = normAxis(sm.getAxis(), rank);
    if (!l.ins[0].dims[axis].empty())
      return refuse(op, "the input", axis, l.ins[0].dims[axis],
                    "the softmax normalises along it");
  } else if (isa<RmsNormOp>(op)) {
    unsigned last = l.ins[0].dims.size() - 1;
    if (!l.ins[0].dims[last].empty())
      return refuse(op, "the input", last, l.ins[0].dims[last],
                    "the norm's statistics are taken along it");
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    int64_t rank = ln.getInput().getType().getRank();
    int64_t axis = normAxis(ln.getAxis(), rank);
    for (int64_t d = axis; d < rank; ++d)
      if (!l.ins[0].dims[d].empty())
        return refuse(op, "the input", d, l.ins[0].dims[d],
                      "the norm's statistics are taken along it");
  } else if (auto red = dyn_cast<ReduceOp>(op)) {
    int64_t rank = red.getInput().getType().getRank();
    for (int64_t raw : red.getAxes()) {
      int64_t d = raw < 0 ? raw + rank : raw;
      ArrayRef<StringRef> axes = l.ins[0].dims[d];
      if (axes.empty())
        continue;
      if (red.getKind() != ReduceKind::sum)
        return refuse(op, "the input", d, axes,
                      "and only a sum over a split dimension gives partial "
                      "results (declare `partial` on the result)");
      for (StringRef a : axes)
        if (!llvm::is_contained(l.outs[0].partial, a))
          return op->emitOpError()
                 << "sums over dimension " << d << ", which is split over "
                 << axesStr(axes) << ": the result holds partial sums over '"
                 << a << "'; declare `partial = " << axesStr(axes)
                 << "` on the result";
    }
  } else if (auto g = dyn_cast<GatherOp>(op)) {
    int64_t rank = g.getInput().getType().getRank();
    int64_t axis = normAxis(g.getAxis(), rank);
    if (!l.ins[0].dims[axis].empty())
      return refuse(op, "the input", axis, l.ins[0].dims[axis],
                    "the indices select along it");
  } else if (isa<EmbeddingOp>(op)) {
    if (!l.ins[0].dims[0].empty())
      return refuse(op, "the table", 0, l.ins[0].dims[0],
                    "the ids index its rows (a vocabulary-parallel "
                    "embedding is not implemented)");
  } else if (auto cc = dyn_cast<ConcatOp>(op)) {
    int64_t rank = cc.getResult().getType().getRank();
    int64_t axis = normAxis(cc.getAxis(), rank);
    for (auto [i, in] : llvm::enumerate(l.ins))
      if (!in.dims[axis].empty())
        return refuse(op, "operand " + std::to_string(i), axis, in.dims[axis],
                      "the op concatenates along it");
    if (!l.outs[0].dims[axis].empty())
      return refuse(op, "the result", axis, l.outs[0].dims[axis],
                    "the op concatenates along it");
  } else if (isa<RotaryTableOp>(op)) {
    unsigned last = l.outs[0].dims.size() - 1;
    for (unsigned r = 0; r < 2; ++r)
      if (!l.outs[r].dims[last].empty())
        return refuse(op, "result " + std::to_string(r), last,
                      l.outs[r].dims[last],
                      "its frequencies depend on the global index");
  } else if (isa<RotaryOp>(op)) {
    if (!l.ins[0].dims[3].empty())
      return refuse(op, "the input", 3, l.ins[0].dims[3],
                    "rotary pairs features across the head dimension");
    for (unsigned i = 1; i < 3; ++i) {
      unsigned last = l.ins[i].dims.size() - 1;
      if (!l.ins[i].dims[last].empty())
        return refuse(op, "operand " + std::to_string(i), last,
                      l.ins[i].dims[last],
                      "rotary pairs features across the head dimension");
    }
  } else if (auto att = dyn_cast<AttentionOp>(op)) {
    const Layout &q = l.ins[0], &k = l.ins[1], &v = l.ins[2];
    if (!q.dims[3].empty())
      return refuse(op, "the query", 3, q.dims[3],
                    "the scores contract the head dimension");
    if (!k.dims[3].empty())
      return refuse(op, "the key", 3, k.dims[3],
                    "the scores contract the head dimension");
    if (!k.dims[2].empty())
      return refuse(op, "the key", 2, k.dims[2],
                    "the softmax runs over every key position");
    if (!v.dims[2].empty())
      return refuse(op, "the value", 2, v.dims[2],
                    "the softmax runs over every key position");
    if (!v.dims[3].empty() && v.dims[3] != l.outs[0].dims[3])
      return refuse(op, "the value", 3, v.dims[3],
                    "and the output is not split the same way");
    if (att.getCausal() && !q.dims[2].empty())
      return refuse(op, "the query", 2, q.dims[2],
                    "and the causal mask needs global query positions");
    if (q.dims[1] != k.dims[1] || q.dims[1] != v.dims[1])
      return op->emitOpError()
             << "query heads are split over " << axesStr(q.dims[1])
             << " but key/value heads over " << axesStr(k.dims[1]) << "/"
             << axesStr(v.dims[1])
             << "; split query and KV heads over the same axes so that "
                "each device keeps whole groups";
    if (att.getCacheKey()) {
      // Operands 3 and 4 (the cache form has no mask): the caches.
      for (unsigned i = 3; i < 5; ++i) {
        if (!l.ins[i].dims[2].empty() || !l.ins[i].dims[3].empty())
          return refuse(op, i == 3 ? "the key cache" : "the value cache",
                        l.ins[i].dims[2].empty() ? 3 : 2,
                        l.ins[i].dims[2].empty() ? l.ins[i].dims[3]
                                                 : l.ins[i].dims[2],
                        "the cache is written and read by global position");
        if (l.ins[i].dims[1] != k.dims[1] || l.ins[i].dims[0] != k.dims[0])
          return op->emitOpError()
                 << "the KV cache is split over " << axesStr(l.ins[i].dims[1])
                 << " but the new keys/values over " << axesStr(k.dims[1])
                 << "; split the cache like the KV heads";
      }
    }
  } else if (isa<ConvOp, ConvTransposeOp, PoolOp>(op)) {
    // Windows read across the edges of spatial shards (halos are not
    // implemented); a transposed or grouped convolution mixes the channel
    // blocks of its groups, and conv_transpose's weight is [C, M/g, K...].
    auto conv = dyn_cast<ConvOp>(op);
    bool wholeChannels =
        isa<ConvTransposeOp>(op) || (conv && conv.getGroups() != 1);
    for (unsigned d = wholeChannels ? 1 : 2; d < l.ins[0].dims.size(); ++d)
      if (!l.ins[0].dims[d].empty())
        return refuse(op, "the input", d, l.ins[0].dims[d],
                      d == 1 ? "and the channels of a grouped or transposed "
                               "convolution stay whole"
                             : "and the windows read across shard edges");
    if (conv && conv.getBias() && !l.ins[0].dims[1].empty())
      return refuse(op, "the input", 1, l.ins[0].dims[1],
                    "and the bias would be added to each partial sum");
    if (!isa<PoolOp>(op))
      for (unsigned d = wholeChannels ? 0 : 2; d < l.ins[1].dims.size(); ++d)
        if (!l.ins[1].dims[d].empty())
          return refuse(op, "the weight", d, l.ins[1].dims[d],
                        d < 2 ? "and the channels of a grouped or "
                                "transposed convolution stay whole"
                              : "and the kernel is read whole");
  } else if (auto sl = dyn_cast<SliceOp>(op)) {
    auto in = cast<RankedTensorType>(l.inTypes[0]);
    SmallVector<int64_t> limits(sl.getLimits());
    for (int64_t d = 0; d < in.getRank(); ++d) {
      ArrayRef<StringRef> axes = l.ins[0].dims[d];
      if (axes.empty() && l.outs[0].dims[d].empty())
        continue;
      // A run-time dim is whole when the slice runs to its end (ONNX's
      // INT32_MAX limit); its limit stays.
      bool whole = sl.getStarts()[d] == 0 && sl.getSteps()[d] == 1 &&
                   (in.isDynamicDim(d) ? limits[d] >= kSliceToEnd
                                       : limits[d] == in.getDimSize(d));
      if (!whole || axes != ArrayRef<StringRef>(l.outs[0].dims[d]))
        return refuse(op, axes.empty() ? "the result" : "the input", d,
                      axes.empty() ? ArrayRef<StringRef>(l.outs[0].dims[d])
                                   : axes,
                      "and the slice cuts it");
      if (!in.isDynamicDim(d))
        limits[d] = localSize(in.getDimSize(d), axes, mesh);
    }
    sl.setLimits(limits);
  } else if (auto c = dyn_cast<ConstantOp>(op)) {
    auto global = cast<RankedTensorType>(c.getType());
    auto local = cast<RankedTensorType>(getLocalType(global, l.outs[0], mesh));
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (dense && dense.isSplat()) {
      c.setValueAttr(
          DenseElementsAttr::get(local, dense.getSplatValue<Attribute>()));
      c.getResult().setType(local);
      return success();
    }
    // Every rank holds the (small) constant whole and keeps its block.
    b.setInsertionPointAfter(op);
    SmallVector<SmallVector<StringRef, 2>> split(l.outs[0].dims.begin(),
                                                 l.outs[0].dims.end());
    Value slice = localSlice(op->getLoc(), c.getResult(), split);
    c.getResult().replaceAllUsesExcept(slice, slice.getDefiningOp());
    return success();
  } else if (auto rs = dyn_cast<ReshapeOp>(op)) {
    auto in = cast<RankedTensorType>(rs.getInput().getType()); // local
    auto out = cast<RankedTensorType>(
        getLocalType(rs.getResult().getType(), l.outs[0], mesh));
    if (in.hasStaticShape() && out.hasStaticShape() &&
        in.getNumElements() != out.getNumElements())
      return op->emitOpError()
             << "the operand " << l.ins[0].str() << " and the result "
             << l.outs[0].str() << " are split differently: locally " << in
             << " would become " << out
             << "; reshard one of them with loom.shard";
    // Run-time sizes are global ones: a split dim gets its share (the
    // split was checked to divide where it was made).
    unsigned k = 0;
    auto global = cast<RankedTensorType>(rs.getResult().getType());
    for (int64_t j = 0; j < global.getRank() && k < rs.getSizes().size(); ++j) {
      if (!global.isDynamicDim(j))
        continue;
      int64_t g = 1;
      for (StringRef a : l.outs[0].dims[j])
        g *= mesh.getAxisSize(a);
      if (g > 1) {
        b.setInsertionPoint(op);
        Value group = arith::ConstantIndexOp::create(b, op->getLoc(), g);
        Value local =
            arith::DivUIOp::create(b, op->getLoc(), rs.getSizes()[k], group);
        rs.getSizesMutable()[k].assign(local);
      }
      ++k;
    }
  }

  for (auto [r, layout] : llvm::zip(op->getResults(), l.outs)) {
    Type local = getLocalType(r.getType(), layout, mesh);
    if (!local)
      return op->emitOpError()
             << "result " << r.getResultNumber() << " of type " << r.getType()
             << " cannot be sharded";
    r.setType(local);
  }
  return success();
}

LogicalResult Materializer::runOnFunction(func::FuncOp fn) {
  Block &entry = fn.getBody().front();
  // Layouts first: the rewrite changes types and replaces values.
  llvm::DenseMap<Operation *, OpLayouts> layouts;
  for (Operation &op : entry) {
    OpLayouts &l = layouts[&op];
    for (Value v : op.getOperands()) {
      l.ins.push_back(Layout::of(v));
      l.inTypes.push_back(v.getType());
    }
    for (Value v : op.getResults())
      l.outs.push_back(Layout::of(v));
  }
  // Private functions take local values (public ones take whole values:
  // the decide step resharded their sharded arguments), and so do state
  // arguments (KV caches, allocated per rank by the runtime) and a pipeline
  // stage's boundary arguments (the previous stage's rank sends its local
  // shard; docs/PIPELINE.md).
  for (BlockArgument arg : entry.getArguments()) {
    bool state = fn.getArgAttr(arg.getArgNumber(),
                               LoomDialect::kStateAttrName) != nullptr;
    bool boundary =
        fn.getArgAttr(arg.getArgNumber(), "loom.boundary") != nullptr;
    if (fn.isPrivate() || state || boundary) {
      Layout l = Layout::of(arg);
      if (Type t = getLocalType(arg.getType(), l, mesh))
        arg.setType(t);
    }
  }
  for (Operation &op : llvm::make_early_inc_range(entry)) {
    // Ops created by this rewrite (local slices of constants) are local
    // already.
    auto it = layouts.find(&op);
    if (it == layouts.end())
      continue;
    OpLayouts l = std::move(it->second);
    layouts.erase(it);
    if (auto shard = dyn_cast<ShardOp>(&op)) {
      LDBG() << "loom.shard at " << shard.getLoc() << ": " << l.ins[0].str()
             << " -> " << l.outs[0].str();
      FailureOr<Value> v = reshard(shard, l.ins[0], l.outs[0]);
      if (failed(v))
        return failure();
      shard.getResult().replaceAllUsesWith(*v);
      shard.erase();
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;
    if (failed(localise(&op, l)))
      return failure();
  }
  fn.setType(FunctionType::get(fn.getContext(), entry.getArgumentTypes(),
                               entry.getTerminator()->getOperandTypes()));
  // A state argument now has its local type: its sharding (which describes
  // the global value) has done its job.
  if (fn.isPublic())
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, LoomDialect::kStateAttrName))
        fn.removeArgAttr(i, LoomDialect::kShardingAttrName);
  return success();
}

LogicalResult Materializer::run() {
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal()) {
      bool sharded = false;
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        sharded |= !!fn.getArgAttr(i, LoomDialect::kShardingAttrName);
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        sharded |= !!fn.getResultAttr(i, LoomDialect::kShardingAttrName);
      if (sharded)
        return fn.emitOpError()
               << "is a declaration with sharded arguments or results; the "
                  "partitioner cannot give it local types";
      continue;
    }
    if (failed(runOnFunction(fn)))
      return failure();
  }
  // The program is per rank now: shardings no longer describe its values.
  module.walk([&](Operation *op) {
    op->removeAttr(LoomDialect::kShardingAttrName);
    if (auto fn = dyn_cast<func::FuncOp>(op)) {
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        fn.removeArgAttr(i, LoomDialect::kShardingAttrName);
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        fn.removeResultAttr(i, StringAttr::get(op->getContext(),
                                               LoomDialect::kShardingAttrName));
    }
  });
  return success();
}

} // namespace

LogicalResult loom::materializeReshards(ModuleOp module) {
  if (!hasShardings(module))
    return success();
  // The mesh: the decide step checked that there is one.
  FlatSymbolRefAttr meshSym;
  module.walk([&](Operation *op) {
    ShardingAttr s;
    if (auto shard = dyn_cast<ShardOp>(op))
      s = shard.getSharding();
    for (unsigned i = 0; !s && i < op->getNumResults(); ++i)
      s = getResultSharding(op, i);
    if (auto fn = dyn_cast<func::FuncOp>(op)) {
      for (unsigned i = 0; !s && i < fn.getNumArguments(); ++i)
        s = fn.getArgAttrOfType<ShardingAttr>(i,
                                              LoomDialect::kShardingAttrName);
      for (unsigned i = 0; !s && i < fn.getNumResults(); ++i)
        s = fn.getResultAttrOfType<ShardingAttr>(
            i, LoomDialect::kShardingAttrName);
    }
    if (s && !meshSym)
      meshSym = s.getMesh();
  });
  MeshAttr mesh;
  if (meshSym)
    if (MeshOp m = lookupMesh(module, meshSym))
      mesh = m.getMesh();
  Materializer m(module, mesh, meshSym);
  return m.run();
}

namespace {
struct PartitionPass : loom::impl::PartitionPassBase<PartitionPass> {
  void runOnOperation() override {
    // The decide step ran as its own pass; check that it did.
    if (failed(makeReshardsExplicit(getOperation(), /*checkOnly=*/true)) ||
        failed(materializeReshards(getOperation())))
      signalPassFailure();
  }
};
} // namespace
