//===- CollectivePatterns.cpp - collectives to runtime calls --------------===//
//
// Collectives and point-to-point ops become calls into the runtime C ABI
// (include/loom/runtime/abi.h; the rows of RuntimeABI.h) on buffers taken
// from the tensors; loom.local_slice becomes this rank's block of a
// replicated value, loom.shard (an annotation for the planner) its input.
// Meshes are consumed: the calls name ranks and axis masks.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"

#include "loom/runtime/abi.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
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

struct CollectiveEmitter : Emitter {
  using Emitter::Emitter;
  /// The size and axis mask of the group of `axes` of `mesh`.
  FailureOr<std::pair<int64_t, uint64_t>>
  groupOf(Operation *op, FlatSymbolRefAttr mesh, ArrayAttr axes);
  /// The global rank of the peer (`peer` in the group, or this rank's
  /// index + `shift`).
  FailureOr<Value> peerRank(Operation *op, Value ctx, FlatSymbolRefAttr mesh,
                            ArrayAttr axes, std::optional<int64_t> peer,
                            std::optional<int64_t> shift);
  FailureOr<int32_t> dtypeOf(Operation *op, Type t) {
    int32_t d = runtimeDType(getElementTypeOrSelf(t));
    if (d < 0)
      return op->emitOpError() << "element type " << getElementTypeOrSelf(t)
                               << " cannot be communicated by the runtime";
    return d;
  }
  SmallVector<Value> sizesOf(Value v) {
    SmallVector<Value> s;
    for (int64_t d = 0; d < cast<RankedTensorType>(v.getType()).getRank(); ++d)
      s.push_back(dim(v, d));
    return s;
  }
  FailureOr<Value> lower(AllReduceOp op, AllReduceOp::Adaptor a, Value ctx);
  FailureOr<Value> lower(AllGatherOp op, AllGatherOp::Adaptor a, Value ctx);
  FailureOr<Value> lower(ReduceScatterOp op, ReduceScatterOp::Adaptor a,
                         Value ctx);
  FailureOr<Value> lower(AllToAllOp op, AllToAllOp::Adaptor a, Value ctx);
  FailureOr<Value> lower(SendOp op, SendOp::Adaptor a, Value ctx);
  FailureOr<Value> lower(RecvOp op, RecvOp::Adaptor a, Value ctx);
  FailureOr<Value> lowerLocalSlice(LocalSliceOp op, LocalSliceOp::Adaptor a);
};

} // namespace

FailureOr<std::pair<int64_t, uint64_t>>
CollectiveEmitter::groupOf(Operation *op, FlatSymbolRefAttr meshSym,
                           ArrayAttr axes) {
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

FailureOr<Value> CollectiveEmitter::lower(AllReduceOp ar,
                                          AllReduceOp::Adaptor a, Value ctx) {
  Operation *op = ar;
  auto group = groupOf(op, ar.getMeshAttr(), ar.getMeshAxes());
  FailureOr<int32_t> dt = dtypeOf(op, ar.getType());
  if (failed(group) || failed(dt))
    return failure();
  auto type = cast<RankedTensorType>(ar.getType());
  Value in = bufferOf(a.getInput());
  Value out = allocLike(type, sizesOf(a.getInput()));
  callRuntime("loom_rt_all_reduce",
              ValueRange{ctx, cI32(*dt),
                         cI32(runtimeReduction(ar.getReduction())), ptrOf(in),
                         ptrOf(out), indexToI64(numElements(a.getInput())),
                         cI64((int64_t)group->second)});
  return toTensor(out, type);
}

FailureOr<Value> CollectiveEmitter::lower(AllGatherOp ag,
                                          AllGatherOp::Adaptor a, Value ctx) {
  Operation *op = ag;
  auto group = groupOf(op, ag.getMeshAttr(), ag.getMeshAxes());
  FailureOr<int32_t> dt = dtypeOf(op, ag.getType());
  if (failed(group) || failed(dt))
    return failure();
  auto inT = cast<RankedTensorType>(ag.getInput().getType());
  auto type = cast<RankedTensorType>(ag.getType());
  int64_t gd = normAxis(ag.getGatherDim(), inT.getRank());
  SmallVector<Value> sizes = sizesOf(a.getInput());
  sizes[gd] = arith::MulIOp::create(b, loc, sizes[gd], cIndex(group->first));
  Value in = bufferOf(a.getInput());
  Value out = allocLike(type, sizes);
  callRuntime("loom_rt_all_gather",
              ValueRange{ctx, cI32(*dt), ptrOf(in), ptrOf(out),
                         indexToI64(numElements(a.getInput(), 0, gd)),
                         indexToI64(numElements(a.getInput(), gd)),
                         cI64((int64_t)group->second)});
  return toTensor(out, type);
}

FailureOr<Value> CollectiveEmitter::lower(ReduceScatterOp rs,
                                          ReduceScatterOp::Adaptor a,
                                          Value ctx) {
  Operation *op = rs;
  auto group = groupOf(op, rs.getMeshAttr(), rs.getMeshAxes());
  FailureOr<int32_t> dt = dtypeOf(op, rs.getType());
  if (failed(group) || failed(dt))
    return failure();
  auto inT = cast<RankedTensorType>(rs.getInput().getType());
  auto type = cast<RankedTensorType>(rs.getType());
  int64_t sd = normAxis(rs.getScatterDim(), inT.getRank());
  SmallVector<Value> sizes = sizesOf(a.getInput());
  sizes[sd] = arith::DivUIOp::create(b, loc, sizes[sd], cIndex(group->first));
  Value in = bufferOf(a.getInput());
  Value out = allocLike(type, sizes);
  // inner = (in[sd] / p) * prod(in[sd+1:])
  Value inner = arith::MulIOp::create(b, loc, sizes[sd],
                                      numElements(a.getInput(), sd + 1));
  callRuntime("loom_rt_reduce_scatter",
              ValueRange{ctx, cI32(*dt),
                         cI32(runtimeReduction(rs.getReduction())), ptrOf(in),
                         ptrOf(out),
                         indexToI64(numElements(a.getInput(), 0, sd)),
                         indexToI64(inner), cI64((int64_t)group->second)});
  return toTensor(out, type);
}

FailureOr<Value> CollectiveEmitter::lower(AllToAllOp a2a, AllToAllOp::Adaptor a,
                                          Value ctx) {
  Operation *op = a2a;
  auto group = groupOf(op, a2a.getMeshAttr(), a2a.getMeshAxes());
  FailureOr<int32_t> dt = dtypeOf(op, a2a.getType());
  if (failed(group) || failed(dt))
    return failure();
  int64_t p = group->first;
  Value x = a.getInput();
  auto inT = cast<RankedTensorType>(x.getType());
  int64_t rank = inT.getRank();
  int64_t sd = normAxis(a2a.getSplitDim(), rank);
  int64_t cd = normAxis(a2a.getConcatDim(), rank);
  Type et = inT.getElementType();
  // 1. [.., S[sd], ..] -> [.., p, S[sd]/p, ..] -> move p to the front so
  //    that block j (for member j) is contiguous.
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
  Value x1 = reshape(x, RankedTensorType::get(s1, et));
  SmallVector<int64_t> perm{sd};
  for (int64_t d = 0; d <= rank; ++d)
    if (d != sd)
      perm.push_back(d);
  Value x2 = transpose(x1, perm);
  auto t2 = cast<RankedTensorType>(x2.getType());
  SmallVector<Value> s2 = sizesOf(x2);
  Value in = bufferOf(x2);
  Value out = allocLike(t2, s2);
  Value block = arith::DivUIOp::create(b, loc, numElements(x2), cIndex(p));
  callRuntime("loom_rt_all_to_all",
              ValueRange{ctx, cI32(*dt), ptrOf(in), ptrOf(out),
                         indexToI64(block), cI64((int64_t)group->second)});
  Value y2 = toTensor(out, t2);
  // 2. [p, L...] -> move p just before L[cd] and merge the two.
  SmallVector<int64_t> back;
  for (int64_t d = 1; d <= rank; ++d) {
    if (d - 1 == cd)
      back.push_back(0);
    back.push_back(d);
  }
  Value y3 = transpose(y2, back);
  return reshape(y3, cast<RankedTensorType>(a2a.getType()));
}

FailureOr<Value> CollectiveEmitter::lower(SendOp send, SendOp::Adaptor a,
                                          Value ctx) {
  Operation *op = send;
  FailureOr<int32_t> dt = dtypeOf(op, send.getInput().getType());
  FailureOr<Value> peer =
      peerRank(op, ctx, send.getMeshAttr(), send.getMeshAxes(), send.getPeer(),
               send.getShift());
  if (failed(dt) || failed(peer))
    return failure();
  Value in = bufferOf(a.getInput());
  callRuntime("loom_rt_send", ValueRange{ctx, cI32(*dt), ptrOf(in),
                                         indexToI64(numElements(a.getInput())),
                                         *peer, cI64(send.getChannel())});
  return Value();
}

FailureOr<Value> CollectiveEmitter::lower(RecvOp recv, RecvOp::Adaptor a,
                                          Value ctx) {
  Operation *op = recv;
  auto type = cast<RankedTensorType>(recv.getType());
  if (!type.hasStaticShape())
    return op->emitOpError() << "loom.recv needs a static shape to lower";
  FailureOr<int32_t> dt = dtypeOf(op, type);
  FailureOr<Value> peer =
      peerRank(op, ctx, recv.getMeshAttr(), recv.getMeshAxes(), recv.getPeer(),
               recv.getShift());
  if (failed(dt) || failed(peer))
    return failure();
  Value out = allocLike(type, {});
  callRuntime("loom_rt_recv", ValueRange{ctx, cI32(*dt), ptrOf(out),
                                         cI64(type.getNumElements()), *peer,
                                         cI64(recv.getChannel())});
  return toTensor(out, type);
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
    Value local =
        type.isDynamicDim(d)
            ? arith::DivUIOp::create(b, loc, dim(in, d), cIndex(parts))
                  .getResult()
            : cIndex(type.getDimSize(d));
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

namespace {

/// A collective or point-to-point op: a runtime call in its entry point.
template <typename Op> struct CollectiveLowering : LoomPattern<Op> {
  using LoomPattern<Op>::LoomPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<Value> ctx = contextOf(op);
    if (failed(ctx))
      return failure();
    CollectiveEmitter e(rewriter, op.getLoc(), this->opts);
    FailureOr<Value> result = e.lower(op, a, *ctx);
    if (failed(result))
      return failure();
    if (*result)
      rewriter.replaceOp(op, *result);
    else
      rewriter.eraseOp(op);
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
  patterns
      .add<CollectiveLowering<AllReduceOp>, CollectiveLowering<AllGatherOp>,
           CollectiveLowering<ReduceScatterOp>, CollectiveLowering<AllToAllOp>,
           CollectiveLowering<SendOp>, CollectiveLowering<RecvOp>,
           EmitterPattern<LocalSliceOp, CollectiveEmitter,
                          &CollectiveEmitter::lowerLocalSlice>,
           ShardLowering>(converter, patterns.getContext(), opts);
}
