//===- CollectivePatterns.cpp - collectives to runtime calls --------------===//
//
// Collectives and point-to-point ops become calls into the runtime C ABI
// (include/loom/runtime/abi.h; the rows of RuntimeABI.h) on the buffers
// that one-shot bufferization gives them: each op has an external
// BufferizableOpInterface model whose `bufferize` emits the call on memrefs
// (loom-bufferize registers the models and runs the bufferization). So the
// analysis sees exactly what a call reads and writes: an all_reduce runs in
// place on its operand's buffer when that buffer may be overwritten, and
// out of place (input and output buffers, no copy) when it may not; the
// other collectives read their operand and write a fresh buffer, which
// later ops may overwrite in place.
//
// Before bufferization, loom-convert-loom-to-linalg checks every collective
// (context, mesh axes, dtype), rewrites all_to_all into its contiguous form
// (split and concat on dimension 0, the exchange of p blocks, between
// reshapes and transposes on tensors), lowers loom.local_slice to this
// rank's block of a replicated value and drops loom.shard (an annotation
// for the planner). Meshes are consumed: the calls name ranks and axis
// masks.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"

#include "loom/runtime/abi.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace loom;
using namespace loom::lowering;

namespace {

/// The runtime dtype code of an element type (abi.h), or -1.
int32_t runtimeDType(Type t) {
  if (t.isF32())
    return LOOM_RT_F32;
  if (t.isF16())
    return LOOM_RT_F16;
  if (t.isBF16())
    return LOOM_RT_BF16;
  if (t.isF64())
    return LOOM_RT_F64;
  if (t.isInteger(8))
    return LOOM_RT_I8;
  if (t.isInteger(32))
    return LOOM_RT_I32;
  if (t.isInteger(64))
    return LOOM_RT_I64;
  if (t.isInteger(1))
    return LOOM_RT_U8;
  return -1;
}

int32_t runtimeReduction(Reduction r) {
  switch (r) {
  case Reduction::sum:
    return LOOM_RT_SUM;
  case Reduction::prod:
    return LOOM_RT_PROD;
  case Reduction::max:
    return LOOM_RT_MAX;
  case Reduction::min:
    return LOOM_RT_MIN;
  }
  return LOOM_RT_SUM;
}

/// The size and axis mask of the group of `axes` of `mesh`.
FailureOr<std::pair<int64_t, uint64_t>>
groupOf(Operation *op, FlatSymbolRefAttr meshSym, ArrayAttr axes) {
  MeshOp mesh = lookupMesh(op, meshSym);
  if (!mesh)
    return op->emitOpError() << "unknown mesh " << meshSym;
  uint64_t mask = 0;
  for (Attribute a : axes) {
    auto idx = mesh.getMesh().getAxisIndex(cast<StringAttr>(a).getValue());
    if (!idx || *idx >= LOOM_RT_MAX_AXES)
      return op->emitOpError()
             << "mesh axis " << a << " is not usable by the runtime (at most "
             << LOOM_RT_MAX_AXES << " axes)";
    mask |= uint64_t(1) << *idx;
  }
  return std::pair{getGroupSize(mesh.getMesh(), axes), mask};
}

/// The runtime dtype of the elements `op` communicates.
FailureOr<int32_t> dtypeOf(Operation *op, Type t) {
  int32_t d = runtimeDType(getElementTypeOrSelf(t));
  if (d < 0)
    return op->emitOpError() << "element type " << getElementTypeOrSelf(t)
                             << " cannot be communicated by the runtime";
  return d;
}

/// The tensor a collective communicates (its input, or recv's result).
Type communicatedType(Operation *op) {
  return op->getNumOperands() ? op->getOperand(0).getType()
                              : op->getResult(0).getType();
}

const LoweringOptions kNoOptions;

/// Builds the runtime calls of collectives: on memrefs inside `bufferize`,
/// and loom.local_slice on tensors inside the conversion.
struct CollectiveEmitter : Emitter {
  CollectiveEmitter(OpBuilder &b, Location loc,
                    const LoweringOptions &opts = kNoOptions)
      : Emitter(b, loc, opts) {}
  /// The global rank of the peer (`peer` in the group, or this rank's
  /// index + `shift`).
  FailureOr<Value> peerRank(Operation *op, Value ctx, FlatSymbolRefAttr mesh,
                            ArrayAttr axes, std::optional<int64_t> peer,
                            std::optional<int64_t> shift);

  // --- buffers -----------------------------------------------------------
  Value size(Value m, int64_t d) {
    auto t = cast<MemRefType>(m.getType());
    if (!t.isDynamicDim(d))
      return cIndex(t.getDimSize(d));
    return memref::DimOp::create(b, loc, m, d);
  }
  SmallVector<Value> sizes(Value m) {
    SmallVector<Value> s;
    for (int64_t d = 0; d < cast<MemRefType>(m.getType()).getRank(); ++d)
      s.push_back(size(m, d));
    return s;
  }
  /// `v` / `p` on index values, folded when `v` is a constant.
  Value divIndex(Value v, int64_t p) {
    if (std::optional<int64_t> c = getConstantIntValue(v))
      return cIndex(*c / p);
    return arith::DivUIOp::create(b, loc, v, cIndex(p));
  }
  /// Fails the job (loom_rt_abort) unless the run-time size `v` of
  /// dimension `d` divides over the `p` ranks of `axes`. Shards are always
  /// equal (no uneven blocks): the verifier checks static sizes, and a
  /// run-time size cut as `v / p` alone would drop the remainder and return
  /// a short result with exit 0 (a batch of 3 on dp=2 gave 2 rows).
  void checkDivides(Operation *op, Value ctx, Value v, int64_t p, int64_t d,
                    ArrayAttr axes) {
    if (p <= 1 || getConstantIntValue(v))
      return;
    std::string msg;
    llvm::raw_string_ostream os(msg);
    os << op->getName() << " at " << op->getLoc() << ": dimension " << d
       << " has a run-time size that does not divide over the " << p
       << " ranks of mesh axes " << axes << "; give a size that is a multiple"
       << " of " << p << ", or compile without splitting that dimension";
    Value bad = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::RemUIOp::create(b, loc, v, cIndex(p)), cIndex(0));
    Value text = cString(msg);
    scf::IfOp::create(b, loc, bad, [&](OpBuilder &tb, Location tl) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
      callRuntime("loom_rt_abort", ValueRange{ctx, text});
      scf::YieldOp::create(tb, tl);
    });
  }
  /// Product of the sizes [from, to) (to < 0: all) as an i64, folded over
  /// the constant ones.
  Value count(ArrayRef<Value> sizes, int64_t from = 0, int64_t to = -1) {
    if (to < 0)
      to = sizes.size();
    int64_t known = 1;
    Value n;
    for (int64_t d = from; d < to; ++d) {
      if (std::optional<int64_t> c = getConstantIntValue(sizes[d]))
        known *= *c;
      else
        n = n ? arith::MulIOp::create(b, loc, n, sizes[d]).getResult()
              : sizes[d];
    }
    if (!n)
      return cI64(known);
    return indexToI64(
        known == 1
            ? n
            : arith::MulIOp::create(b, loc, n, cIndex(known)).getResult());
  }
  /// A fresh identity-layout buffer of `type` (a tensor type) with `sizes`
  /// (all of them; the static ones are ignored).
  Value alloc(Type type, ArrayRef<Value> sizes) {
    return allocLike(cast<RankedTensorType>(type), sizes);
  }
  /// `m` itself when it is laid out row-major from its aligned pointer
  /// (identity layout); else a row-major copy, which the runtime can read
  /// through one pointer.
  Value contiguous(Value m) {
    auto t = cast<MemRefType>(m.getType());
    if (t.getLayout().isIdentity())
      return m;
    Value copy = alloc(RankedTensorType::get(t.getShape(), t.getElementType()),
                       sizes(m));
    memref::CopyOp::create(b, loc, m, copy);
    return copy;
  }

  // --- the calls on buffers (each returns the result's buffer) ----------
  Value allReduce(AllReduceOp op, Value ctx, Value in, Value out);
  Value allGather(AllGatherOp op, Value ctx, Value in);
  Value reduceScatter(ReduceScatterOp op, Value ctx, Value in);
  Value allToAll(AllToAllOp op, Value ctx, Value in);
  LogicalResult send(SendOp op, Value ctx, Value in);
  FailureOr<Value> recv(RecvOp op, Value ctx);

  FailureOr<Value> lowerLocalSlice(LocalSliceOp op, LocalSliceOp::Adaptor a);
};

} // namespace

FailureOr<Value> CollectiveEmitter::peerRank(Operation *op, Value ctx,
                                             FlatSymbolRefAttr meshSym,
                                             ArrayAttr axes,
                                             std::optional<int64_t> peer,
                                             std::optional<int64_t> shift) {
  MeshOp meshOp = lookupMesh(op, meshSym);
  if (!meshOp)
    return op->emitOpError() << "unknown mesh " << meshSym;
  MeshAttr mesh = meshOp.getMesh();
  FailureOr<std::pair<int64_t, uint64_t>> group = groupOf(op, meshSym, axes);
  if (failed(group))
    return failure();
  int64_t p = group->first;
  // This rank's coordinates, and its index in the group (row-major over the
  // masked axes in increasing axis order).
  SmallVector<Value> coords;
  for (unsigned a = 0; a < mesh.getNumAxes(); ++a)
    coords.push_back(callRuntime("loom_rt_coord", {ctx, cI32(a)}).getResult(0));
  SmallVector<unsigned> masked;
  for (unsigned a = 0; a < mesh.getNumAxes(); ++a)
    if (group->second & (uint64_t(1) << a))
      masked.push_back(a);
  Value target;
  if (peer) {
    target = cI64(*peer);
  } else {
    Value mine = cI64(0);
    for (unsigned a : masked)
      mine = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, mine, cI64(mesh.getAxisSizes()[a])),
          coords[a]);
    // (mine + shift) mod p, kept non-negative.
    int64_t s = ((*shift % p) + p) % p;
    target = arith::RemUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, mine, cI64(s)), cI64(p));
  }
  // Delinearise the target over the masked axes, keep the other coordinates.
  for (auto it = masked.rbegin(); it != masked.rend(); ++it) {
    Value size = cI64(mesh.getAxisSizes()[*it]);
    coords[*it] = arith::RemUIOp::create(b, loc, target, size);
    target = arith::DivUIOp::create(b, loc, target, size);
  }
  Value rank = cI64(0);
  for (unsigned a = 0; a < mesh.getNumAxes(); ++a)
    rank = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, rank, cI64(mesh.getAxisSizes()[a])),
        coords[a]);
  return rank;
}

// The groups and dtypes were checked before conversion
// (verifyCollectives): the lookups below cannot fail.

/// `out` may be `in` (in place; the runtime allows it).
Value CollectiveEmitter::allReduce(AllReduceOp op, Value ctx, Value in,
                                   Value out) {
  auto group = *groupOf(op, op.getMeshAttr(), op.getMeshAxes());
  int32_t dt = *dtypeOf(op, op.getType());
  callRuntime("loom_rt_all_reduce",
              ValueRange{ctx, cI32(dt),
                         cI32(runtimeReduction(op.getReduction())), ptrOf(in),
                         ptrOf(out), count(sizes(in)),
                         cI64((int64_t)group.second)});
  return out;
}

Value CollectiveEmitter::allGather(AllGatherOp op, Value ctx, Value in) {
  auto group = *groupOf(op, op.getMeshAttr(), op.getMeshAxes());
  int32_t dt = *dtypeOf(op, op.getType());
  int64_t gd = normAxis(op.getGatherDim(), op.getInput().getType().getRank());
  SmallVector<Value> s = sizes(in), outSizes = s;
  if (std::optional<int64_t> c = getConstantIntValue(s[gd]))
    outSizes[gd] = cIndex(*c * group.first);
  else
    outSizes[gd] = arith::MulIOp::create(b, loc, s[gd], cIndex(group.first));
  Value out = alloc(op.getType(), outSizes);
  callRuntime("loom_rt_all_gather",
              ValueRange{ctx, cI32(dt), ptrOf(in), ptrOf(out), count(s, 0, gd),
                         count(s, gd), cI64((int64_t)group.second)});
  return out;
}

Value CollectiveEmitter::reduceScatter(ReduceScatterOp op, Value ctx,
                                       Value in) {
  auto group = *groupOf(op, op.getMeshAttr(), op.getMeshAxes());
  int32_t dt = *dtypeOf(op, op.getType());
  int64_t sd = normAxis(op.getScatterDim(), op.getInput().getType().getRank());
  SmallVector<Value> s = sizes(in), outSizes = s;
  checkDivides(op, ctx, s[sd], group.first, sd, op.getMeshAxes());
  outSizes[sd] = divIndex(s[sd], group.first);
  Value out = alloc(op.getType(), outSizes);
  // outer = prod(in[:sd]), inner = (in[sd] / p) * prod(in[sd+1:])
  callRuntime("loom_rt_reduce_scatter",
              ValueRange{ctx, cI32(dt),
                         cI32(runtimeReduction(op.getReduction())), ptrOf(in),
                         ptrOf(out), count(s, 0, sd), count(outSizes, sd),
                         cI64((int64_t)group.second)});
  return out;
}

/// The contiguous form only (split and concat on dimension 0, as
/// loom-convert-loom-to-linalg leaves every all_to_all): block j of the
/// input goes to member j, the blocks received are concatenated in group
/// order.
Value CollectiveEmitter::allToAll(AllToAllOp op, Value ctx, Value in) {
  auto group = *groupOf(op, op.getMeshAttr(), op.getMeshAxes());
  int32_t dt = *dtypeOf(op, op.getType());
  SmallVector<Value> s = sizes(in);
  Value out = alloc(op.getType(), s);
  // A block: (in[0] / p) * prod(in[1:]).
  SmallVector<Value> blockSizes = s;
  checkDivides(op, ctx, s[0], group.first, 0, op.getMeshAxes());
  blockSizes[0] = divIndex(s[0], group.first);
  callRuntime("loom_rt_all_to_all",
              ValueRange{ctx, cI32(dt), ptrOf(in), ptrOf(out),
                         count(blockSizes), cI64((int64_t)group.second)});
  return out;
}

LogicalResult CollectiveEmitter::send(SendOp op, Value ctx, Value in) {
  int32_t dt = *dtypeOf(op, op.getInput().getType());
  FailureOr<Value> peer = peerRank(op, ctx, op.getMeshAttr(), op.getMeshAxes(),
                                   op.getPeer(), op.getShift());
  if (failed(peer))
    return failure();
  callRuntime("loom_rt_send",
              ValueRange{ctx, cI32(dt), ptrOf(in), count(sizes(in)), *peer,
                         cI64(op.getChannel())});
  return success();
}

FailureOr<Value> CollectiveEmitter::recv(RecvOp op, Value ctx) {
  auto type = cast<RankedTensorType>(op.getType());
  int32_t dt = *dtypeOf(op, type);
  FailureOr<Value> peer = peerRank(op, ctx, op.getMeshAttr(), op.getMeshAxes(),
                                   op.getPeer(), op.getShift());
  if (failed(peer))
    return failure();
  Value out = alloc(type, {});
  callRuntime("loom_rt_recv",
              ValueRange{ctx, cI32(dt), ptrOf(out), cI64(type.getNumElements()),
                         *peer, cI64(op.getChannel())});
  return out;
}

/// This rank's block of a replicated value: the block index of dimension d
/// is the row-major linearisation of the rank's coordinates over split[d]
/// in the listed order (one loom_rt_group_index when that is mesh order, as
/// the runtime numbers groups). The block is copied into a fresh tensor so
/// that a runtime call reading it gets a contiguous buffer.
FailureOr<Value> CollectiveEmitter::lowerLocalSlice(LocalSliceOp op,
                                                    LocalSliceOp::Adaptor a) {
  MeshOp meshOp = lookupMesh(op, op.getMeshAttr());
  if (!meshOp)
    return op.emitOpError() << "unknown mesh " << op.getMeshAttr();
  MeshAttr mesh = meshOp.getMesh();
  FailureOr<Value> ctxOr = contextOf(op);
  if (failed(ctxOr))
    return failure();
  Value ctx = *ctxOr;
  Value in = a.getInput();
  auto type = op.getResult().getType();
  SmallVector<OpFoldResult> offsets, sizes,
      strides(type.getRank(), b.getIndexAttr(1));
  for (auto [d, entry] : llvm::enumerate(op.getSplit())) {
    auto axes = cast<ArrayAttr>(entry);
    if (axes.empty()) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(dimOfr(in, d));
      continue;
    }
    SmallVector<unsigned> idx;
    int64_t parts = 1;
    for (Attribute a : axes) {
      auto ax = mesh.getAxisIndex(cast<StringAttr>(a).getValue());
      if (!ax || *ax >= LOOM_RT_MAX_AXES)
        return op.emitOpError()
               << "mesh axis " << a << " is not usable by the runtime (at most "
               << LOOM_RT_MAX_AXES << " axes)";
      idx.push_back(*ax);
      parts *= mesh.getAxisSizes()[*ax];
    }
    Value block;
    if (llvm::is_sorted(idx)) {
      uint64_t mask = 0;
      for (unsigned ax : idx)
        mask |= uint64_t(1) << ax;
      block = callRuntime("loom_rt_group_index", {ctx, cI64((int64_t)mask)})
                  .getResult(0);
    } else {
      block = cI64(0);
      for (unsigned ax : idx) {
        Value c = callRuntime("loom_rt_coord", {ctx, cI32(ax)}).getResult(0);
        block = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, block, cI64(mesh.getAxisSizes()[ax])),
            c);
      }
    }
    Value local = cIndex(type.getDimSize(d));
    if (type.isDynamicDim(d)) {
      Value whole = dim(in, d);
      checkDivides(op, ctx, whole, parts, d, axes);
      local = arith::DivUIOp::create(b, loc, whole, cIndex(parts));
    }
    Value blockIdx =
        arith::IndexCastOp::create(b, loc, b.getIndexType(), block);
    offsets.push_back(
        arith::MulIOp::create(b, loc, blockIdx, local).getResult());
    sizes.push_back(type.isDynamicDim(d) ? OpFoldResult(local)
                                         : b.getIndexAttr(type.getDimSize(d)));
  }
  Value slice =
      tensor::ExtractSliceOp::create(b, loc, type, in, offsets, sizes, strides);
  return elementwise(
      type, ValueRange{slice},
      [](OpBuilder &, Location, ValueRange a) -> Value { return a[0]; });
}

LogicalResult loom::lowering::verifyCollectives(ModuleOp module) {
  WalkResult r = module.walk([](CollectiveOpInterface op) {
    Operation *o = op;
    if (failed(contextOf(o)) ||
        failed(groupOf(o, op.getMeshAttr(), op.getMeshAxes())) ||
        failed(dtypeOf(o, communicatedType(o))))
      return WalkResult::interrupt();
    if (auto recv = dyn_cast<RecvOp>(o);
        recv && !recv.getType().hasStaticShape()) {
      recv.emitOpError() << "loom.recv needs a static shape to lower";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

bool loom::lowering::isContiguousAllToAll(AllToAllOp op) {
  int64_t rank = op.getInput().getType().getRank();
  return normAxis(op.getSplitDim(), rank) == 0 &&
         normAxis(op.getConcatDim(), rank) == 0;
}

namespace {

//===----------------------------------------------------------------------===//
// Bufferization: the runtime calls on buffers
//===----------------------------------------------------------------------===//

/// Builds the calls of a bufferized collective: the runtime context of its
/// function and an emitter before the op.
struct BufferizeContext {
  BufferizeContext(RewriterBase &rewriter, Operation *op)
      : e(before(rewriter, op), op->getLoc()), ctx(entryContext(op)) {}
  static OpBuilder &before(RewriterBase &rewriter, Operation *op) {
    rewriter.setInsertionPoint(op);
    return rewriter;
  }
  CollectiveEmitter e;
  Value ctx;
};

/// The buffer of operand 0, contiguous for the runtime.
FailureOr<Value> contiguousInput(Operation *op, RewriterBase &rewriter,
                                 const BufferizationOptions &options,
                                 const BufferizationState &state,
                                 CollectiveEmitter &e) {
  FailureOr<Value> buf = getBuffer(rewriter, op->getOperand(0), options, state);
  if (failed(buf))
    return failure();
  return e.contiguous(*buf);
}

/// The identity-layout buffer type of a result the op allocates.
BufferLikeType allocatedType(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return cast<BufferLikeType>(
      MemRefType::get(t.getShape(), t.getElementType()));
}

/// The name of the (pass-internal) attribute by which loom-bufferize tells
/// an all_reduce that its operand must not be overwritten.
constexpr StringLiteral kOutOfPlace = "loom.bufferize.out_of_place";

/// all_reduce: in place on its operand's buffer (read and written, the
/// result equivalent to it), unless loom-bufferize marked it out of place:
/// then the operand is only read and the result is a fresh buffer, so a
/// value still needed later is never copied first.
struct AllReduceModel
    : BufferizableOpInterface::ExternalModel<AllReduceModel, AllReduceOp> {
  static bool inPlace(Operation *op) { return !op->hasAttr(kOutOfPlace); }
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &,
                               const AnalysisState &) const {
    return inPlace(op);
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    if (!inPlace(op))
      return {};
    return {{op->getResult(0), BufferRelation::Equivalent,
             /*isDefinite=*/true}};
  }
  bool bufferizesToAllocation(Operation *op, Value) const {
    return !inPlace(op);
  }
  FailureOr<BufferLikeType> getBufferType(Operation *op, Value value,
                                          const BufferizationOptions &options,
                                          const BufferizationState &state,
                                          SmallVector<Value> &stack) const {
    if (!inPlace(op))
      return allocatedType(value);
    return bufferization::getBufferType(op->getOperand(0), options, state,
                                        stack);
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto ar = cast<AllReduceOp>(op);
    BufferizeContext c(rewriter, op);
    FailureOr<Value> buf = getBuffer(rewriter, ar.getInput(), options, state);
    if (failed(buf))
      return failure();
    Value in = c.e.contiguous(*buf);
    Value result;
    if (!inPlace(op)) {
      result =
          c.e.allReduce(ar, c.ctx, in, c.e.alloc(ar.getType(), c.e.sizes(in)));
    } else {
      c.e.allReduce(ar, c.ctx, in, in);
      // A strided operand was reduced in a row-major copy: write it back.
      if (in != *buf)
        memref::CopyOp::create(rewriter, op->getLoc(), in, *buf);
      result = *buf;
    }
    replaceOpWithBufferizedValues(rewriter, op, result);
    return success();
  }
};

/// An op whose operand is only read (never written, aliased by no result).
template <typename Derived, typename Op>
struct ReadOnlyOperandModel
    : BufferizableOpInterface::ExternalModel<Derived, Op> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
};

/// all_gather, reduce_scatter, all_to_all: read the operand, write a fresh
/// buffer (the result has another shape, or another rank's data).
template <typename Op, Value (CollectiveEmitter::*Lower)(Op, Value, Value)>
struct OutOfPlaceModel : ReadOnlyOperandModel<OutOfPlaceModel<Op, Lower>, Op> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  FailureOr<BufferLikeType> getBufferType(Operation *, Value value,
                                          const BufferizationOptions &,
                                          const BufferizationState &,
                                          SmallVector<Value> &) const {
    return allocatedType(value);
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    BufferizeContext c(rewriter, op);
    FailureOr<Value> in = contiguousInput(op, rewriter, options, state, c.e);
    if (failed(in))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op,
                                  (c.e.*Lower)(cast<Op>(op), c.ctx, *in));
    return success();
  }
};

/// send: reads its operand.
struct SendModel : ReadOnlyOperandModel<SendModel, SendOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    BufferizeContext c(rewriter, op);
    FailureOr<Value> in = contiguousInput(op, rewriter, options, state, c.e);
    if (failed(in) || failed(c.e.send(cast<SendOp>(op), c.ctx, *in)))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

/// recv: writes a fresh buffer.
struct RecvModel : BufferizableOpInterface::ExternalModel<RecvModel, RecvOp> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  FailureOr<BufferLikeType> getBufferType(Operation *, Value value,
                                          const BufferizationOptions &,
                                          const BufferizationState &,
                                          SmallVector<Value> &) const {
    return allocatedType(value);
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    BufferizeContext c(rewriter, op);
    FailureOr<Value> out = c.e.recv(cast<RecvOp>(op), c.ctx);
    if (failed(out))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, *out);
    return success();
  }
};

} // namespace

void loom::lowering::registerCollectiveBufferizationModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, LoomDialect *) {
    AllReduceOp::attachInterface<AllReduceModel>(*ctx);
    AllGatherOp::attachInterface<
        OutOfPlaceModel<AllGatherOp, &CollectiveEmitter::allGather>>(*ctx);
    ReduceScatterOp::attachInterface<
        OutOfPlaceModel<ReduceScatterOp, &CollectiveEmitter::reduceScatter>>(
        *ctx);
    AllToAllOp::attachInterface<
        OutOfPlaceModel<AllToAllOp, &CollectiveEmitter::allToAll>>(*ctx);
    SendOp::attachInterface<SendModel>(*ctx);
    RecvOp::attachInterface<RecvModel>(*ctx);
  });
}

void loom::lowering::markOutOfPlace(AllReduceOp op) {
  op->setAttr(kOutOfPlace, UnitAttr::get(op.getContext()));
}

//===----------------------------------------------------------------------===//
// Conversion: what stays on tensors
//===----------------------------------------------------------------------===//

namespace {

/// An all_to_all on other dimensions: [.., S[sd], ..] -> [.., p, S[sd]/p,
/// ..] with p moved to the front, so that the block for member j is the
/// contiguous block j; the exchange in contiguous form; then p moved just
/// before L[cd] and merged with it.
struct AllToAllLowering : LoomPattern<AllToAllOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(AllToAllOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    if (isContiguousAllToAll(op))
      return failure();
    auto group = groupOf(op, op.getMeshAttr(), op.getMeshAxes());
    if (failed(group))
      return failure();
    Emitter e = emitter(rewriter, op);
    int64_t p = group->first;
    Value x = a.getInput();
    auto inT = cast<RankedTensorType>(x.getType());
    int64_t rank = inT.getRank();
    int64_t sd = normAxis(op.getSplitDim(), rank);
    int64_t cd = normAxis(op.getConcatDim(), rank);
    SmallVector<int64_t> s1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == sd) {
        s1.push_back(p);
        s1.push_back(isDyn(inT.getDimSize(d)) ? ShapedType::kDynamic
                                              : inT.getDimSize(d) / p);
      } else {
        s1.push_back(inT.getDimSize(d));
      }
    }
    Value x1 = e.reshape(x, RankedTensorType::get(s1, inT.getElementType()));
    SmallVector<int64_t> perm{sd};
    for (int64_t d = 0; d <= rank; ++d)
      if (d != sd)
        perm.push_back(d);
    Value x2 = e.transpose(x1, perm);
    Value y2 = AllToAllOp::create(rewriter, op.getLoc(), x2.getType(), x2,
                                  op.getMeshAttr(), op.getMeshAxes(),
                                  rewriter.getI64IntegerAttr(0),
                                  rewriter.getI64IntegerAttr(0));
    SmallVector<int64_t> back;
    for (int64_t d = 1; d <= rank; ++d) {
      if (d - 1 == cd)
        back.push_back(0);
      back.push_back(d);
    }
    Value y3 = e.transpose(y2, back);
    rewriter.replaceOp(op, e.reshape(y3, op.getType()));
    return success();
  }
};

/// An annotation for the planner; by now the program is per rank.
struct ShardLowering : LoomPattern<ShardOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(ShardOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, a.getInput());
    return success();
  }
};

} // namespace

void loom::lowering::populateCollectivePatterns(TypeConverter &converter,
                                                RewritePatternSet &patterns,
                                                const LoweringOptions &opts) {
  patterns.add<AllToAllLowering,
               EmitterPattern<LocalSliceOp, CollectiveEmitter,
                              &CollectiveEmitter::lowerLocalSlice>,
               ShardLowering>(converter, patterns.getContext(), opts);
}
