//===- DataMovementPatterns.cpp - reshapes, slices, gathers ---------------===//
//
// Reshape, broadcast, iota, transpose, concat and slice become tensor/linalg
// ops; gather and embedding a generic reading the table (both check their
// indices first; an embedding dequantizes quantized tables row by row,
// reading a table in the interleaved layout of a tied LM head through that
// layout).
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace loom;
using namespace loom::lowering;

namespace {

struct MovementEmitter : Emitter {
  using Emitter::Emitter;
  Value lowerSlice(SliceOp op, SliceOp::Adaptor a);
  /// Fails the job (loom_rt_index_error) on an index of `ids` outside [0,
  /// size) (with `negative`, [-size, size): indices that count from the
  /// end, as ONNX Gather), before any element is read: one unsigned compare
  /// per index; `size` (index type) is the extent the indices select along
  /// (an embedding's rows, a gather's axis). `what` names the indices when
  /// they are not an entry input. This host loop is also the form that
  /// loom-gpu-device-index-check rewrites for the GPU.
  void checkIndices(Operation *op, Value ids, Value size, bool negative,
                    StringRef what);
  /// A gather's indices: constant ones along a static dimension are checked
  /// here (out of range: an error at the op), the others at run time.
  LogicalResult checkGatherIndices(GatherOp op, GatherOp::Adaptor a,
                                   int64_t axis);
  /// The rows of a quantized table, dequantized from the blocks of its
  /// weight (`w`, quantizedWeight).
  Value quantizedEmbedding(EmbeddingOp op, EmbeddingOp::Adaptor a,
                           const QuantizedWeight &w);
  /// The bytes of the table's rows `ids` as stored ([ids..., R] i8), read
  /// from `table` ([N, R] i8) in the interleaved layout `il`: row r of a
  /// full group is lane r % 8 of group r / 8, the rows after the last full
  /// group are as stored (interleaveOf, docs/QUANTIZE.md).
  Value gatherInterleavedRows(Value table, Value ids, QWeightInterleave il);
  /// Reads the ids (the leading dims) inside `rank` loops over [ids..., x].
  AffineMap idsMap(unsigned rank) {
    return AffineMap::getMultiDimIdentityMap(rank, b.getContext())
        .dropResult(rank - 1);
  }
};

} // namespace

Value MovementEmitter::lowerSlice(SliceOp op, SliceOp::Adaptor a) {
  Value x = a.getInput();
  auto t = op.getInput().getType();
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    int64_t start = op.getStarts()[d], limit = op.getLimits()[d],
            step = op.getSteps()[d];
    offsets.push_back(b.getIndexAttr(start));
    strides.push_back(b.getIndexAttr(step));
    if (!t.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr((limit - start + step - 1) / step));
      continue;
    }
    // size = max(0, ceil((min(limit, dim) - start) / step))
    Value end = arith::MinUIOp::create(b, loc, dim(x, d), cIndex(limit));
    Value span = arith::SubIOp::create(
        b, loc, arith::MaxUIOp::create(b, loc, end, cIndex(start)),
        cIndex(start));
    Value n = arith::CeilDivUIOp::create(b, loc, span, cIndex(step));
    sizes.push_back(n);
  }
  auto type = op.getResult().getType();
  auto slice =
      tensor::ExtractSliceOp::create(b, loc, x, offsets, sizes, strides);
  Value v = slice.getResult();
  if (v.getType() != type)
    v = tensor::CastOp::create(b, loc, type, v);
  return v;
}

void MovementEmitter::checkIndices(Operation *op, Value ids, Value size,
                                   bool negative, StringRef what) {
  Value ctx = entryContext(op);
  auto idType = dyn_cast<RankedTensorType>(ids.getType());
  if (!idType || !idType.getElementType().isSignlessInteger())
    return;
  // A private function has no context argument: the runtime fails the
  // rank running on the calling thread (abi.h).
  if (!ctx)
    ctx = LLVM::ZeroOp::create(b, loc,
                               LLVM::LLVMPointerType::get(b.getContext()));
  // The input the ids come from, as the manifest names it.
  std::string input = what.str();
  if (auto arg = dyn_cast<BlockArgument>(ids);
      arg && arg.getOwner()->isEntryBlock()) {
    auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    unsigned n = 0;
    for (unsigned i = 1; i < arg.getArgNumber(); ++i)
      n += !fn.getArgAttr(i, LoomDialect::kWeightAttrName);
    // An outlined layer's arguments are not the entry's inputs.
    if (fn->hasAttr(LoomDialect::kEntryAttrName))
      input = "input" + std::to_string(n);
    if (auto name =
            fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "loom.name"))
      input = name.str();
  }
  Type i64 = b.getI64Type();
  Value rows = arith::IndexCastOp::create(b, loc, i64, size);
  // id in [lo, rows) <=> (id - lo) <u (rows - lo), lo = 0 or -rows.
  Value lo =
      negative ? arith::SubIOp::create(
                     b, loc, arith::ConstantIntOp::create(b, loc, i64, 0), rows)
               : arith::ConstantIntOp::create(b, loc, i64, 0).getResult();
  Value span = arith::SubIOp::create(b, loc, rows, lo);
  Value inputName = cString(input),
        opName = cString(op->getName().getStringRef());
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d = 0; d < idType.getRank(); ++d) {
    lbs.push_back(cIndex(0));
    ubs.push_back(dim(ids, d));
    steps.push_back(cIndex(1));
  }
  scf::buildLoopNest(
      b, loc, lbs, ubs, steps, [&](OpBuilder &bb, Location l, ValueRange ivs) {
        Value id = tensor::ExtractOp::create(bb, l, ids, ivs);
        if (id.getType() != i64)
          id = arith::ExtSIOp::create(bb, l, i64, id);
        // Below lo is huge unsigned: one compare covers both ends.
        Value bad = arith::CmpIOp::create(
            bb, l, arith::CmpIPredicate::uge,
            negative ? arith::SubIOp::create(bb, l, id, lo).getResult() : id,
            span);
        scf::IfOp::create(bb, l, bad, [&](OpBuilder &tb, Location tl) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
          callRuntime("loom_rt_index_error",
                      ValueRange{ctx, inputName, id, lo, rows, opName});
          scf::YieldOp::create(tb, tl);
        });
      });
}

LogicalResult MovementEmitter::checkGatherIndices(GatherOp op,
                                                  GatherOp::Adaptor a,
                                                  int64_t axis) {
  auto inType = op.getInput().getType();
  DenseIntElementsAttr constant;
  if (inType.isDynamicDim(axis) ||
      !(matchPattern(a.getIndices(), m_Constant(&constant)) ||
        matchPattern(op.getIndices(), m_Constant(&constant)))) {
    checkIndices(op, a.getIndices(), dim(a.getInput(), axis),
                 /*negative=*/true, "indices");
    return success();
  }
  int64_t size = inType.getDimSize(axis), pos = 0;
  for (const APInt &v : constant.getValues<APInt>()) {
    int64_t index = v.getSExtValue();
    if (index < -size || index >= size)
      return op.emitOpError()
             << "constant index " << index << " (position " << pos
             << ") is out of range [" << -size << ", " << size
             << ") of dimension " << axis << " of the input";
    ++pos;
  }
  return success();
}

Value MovementEmitter::gatherInterleavedRows(Value table, Value ids,
                                             QWeightInterleave il) {
  auto idType = cast<RankedTensorType>(ids.getType());
  auto tableType = cast<RankedTensorType>(table.getType());
  unsigned rank = idType.getRank() + 1;
  SmallVector<int64_t> shape(idType.getShape());
  shape.push_back(tableType.getShape().back());
  auto type = RankedTensorType::get(shape, b.getI8Type());
  SmallVector<Value> sizes;
  for (unsigned d = 0; d + 1 < rank; ++d)
    sizes.push_back(dim(ids, d));
  Value r = dim(table, 1);
  sizes.push_back(r);
  const int64_t g = il.rows, head = il.fields * il.fieldBytes;
  // The rows in full groups: N rounded down to g.
  Value full =
      tableType.isDynamicDim(0)
          ? arith::MulIOp::create(
                b, loc,
                arith::DivUIOp::create(b, loc, dim(table, 0), cIndex(g)),
                cIndex(g))
                .getResult()
          : cIndex(tableType.getDimSize(0) / g * g);
  return generic(
      type, {ids}, {idsMap(rank)}, sizes,
      [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
        auto c = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(bb, l, v);
        };
        auto add = [&](Value x, Value y) -> Value {
          return arith::AddIOp::create(bb, l, x, y);
        };
        auto mul = [&](Value x, int64_t y) -> Value {
          return arith::MulIOp::create(bb, l, x, c(y));
        };
        auto div = [&](Value x, int64_t y) -> Value {
          return arith::DivUIOp::create(bb, l, x, c(y));
        };
        auto rem = [&](Value x, int64_t y) -> Value {
          return arith::RemUIOp::create(bb, l, x, c(y));
        };
        Value row = arith::IndexCastOp::create(bb, l, bb.getIndexType(), a[0]);
        Value o = linalg::IndexOp::create(bb, l, rank - 1);
        // Byte o of row `row` (ids are checked: row < n): in a full group,
        // group row / g, block o / blockBytes; in the block, header field
        // bytes of the g rows field by field, then the values' units.
        Value lane = rem(row, g), inBlock = rem(o, il.blockBytes);
        Value groupBase =
            add(arith::MulIOp::create(bb, l, mul(div(row, g), g), r),
                mul(div(o, il.blockBytes), g * il.blockBytes));
        Value field =
            add(add(mul(div(inBlock, il.fieldBytes), g * il.fieldBytes),
                    mul(lane, il.fieldBytes)),
                rem(inBlock, il.fieldBytes));
        Value j = arith::SubIOp::create(
            bb, l, arith::MaxUIOp::create(bb, l, inBlock, c(head)), c(head));
        Value value =
            add(add(c(g * head), mul(div(j, il.unitBytes), g * il.unitBytes)),
                add(mul(lane, il.unitBytes), rem(j, il.unitBytes)));
        Value isField = arith::CmpIOp::create(bb, l, arith::CmpIPredicate::ult,
                                              inBlock, c(head));
        Value flat = add(groupBase,
                         arith::SelectOp::create(bb, l, isField, field, value));
        Value grouped =
            arith::CmpIOp::create(bb, l, arith::CmpIPredicate::ult, row, full);
        Value at0 = arith::SelectOp::create(
            bb, l, grouped, arith::DivUIOp::create(bb, l, flat, r), row);
        Value at1 = arith::SelectOp::create(
            bb, l, grouped, arith::RemUIOp::create(bb, l, flat, r), o);
        return tensor::ExtractOp::create(bb, l, table, ValueRange{at0, at1});
      });
}

Value MovementEmitter::quantizedEmbedding(EmbeddingOp op,
                                          EmbeddingOp::Adaptor a,
                                          const QuantizedWeight &w) {
  Value table = w.bytes;
  QuantAttr quant = w.type.getQuant();
  Value ids = a.getIds();
  auto type = op.getResult().getType();
  unsigned rank = type.getRank();
  SmallVector<Value> sizes;
  for (unsigned d = 0; d + 1 < rank; ++d)
    sizes.push_back(dim(ids, d));
  sizes.push_back(cIndex(type.getShape().back()));
  if (w.interleaved) {
    // The table of a tied LM head, in the head's layout: the rows' bytes
    // as stored first (R bytes per id), then dequantized from them.
    Value rows = gatherInterleavedRows(table, ids, interleaveOf(quant));
    return dequantizeRows(type, sizes, rows, quant);
  }
  return generic(
      type, {ids}, {idsMap(rank)}, sizes,
      [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
        Value row = arith::IndexCastOp::create(bb, l, bb.getIndexType(), a[0]);
        Value k = linalg::IndexOp::create(bb, l, rank - 1);
        return dequantElement(bb, l, table, ValueRange{row}, k, quant);
      });
}

namespace {

struct ReshapeLowering : LoomPattern<ReshapeOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    return replaceOrFail(rewriter, op,
                         emitter(rewriter, op)
                             .reshapeTo(op, a.getInput(),
                                        op.getResult().getType(),
                                        a.getSizes()));
  }
};

/// A broadcast generic; each dynamic result size is the given size, else
/// the input's (a dynamic input dimension there), else the op is refused:
/// a size-1 input dimension says nothing about the result's size.
struct BroadcastLowering : LoomPattern<BroadcastOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Emitter e = emitter(rewriter, op);
    auto type = op.getResult().getType();
    auto inType = op.getInput().getType();
    int64_t off = type.getRank() - inType.getRank();
    SmallVector<Value> sizes;
    unsigned next = 0;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) {
        sizes.push_back(e.cIndex(type.getDimSize(d)));
      } else if (!a.getSizes().empty()) {
        sizes.push_back(a.getSizes()[next++]);
      } else if (d >= off && inType.isDynamicDim(d - off)) {
        sizes.push_back(e.dim(a.getInput(), d - off));
      } else {
        return op.emitOpError()
               << "cannot lower this broadcast: the size of dynamic result "
                  "dimension "
               << d << " is not known (give its run-time size)";
      }
    }
    Value in = a.getInput();
    rewriter.replaceOp(
        op, e.generic(type, {in}, {e.broadcastMap(in, type.getRank())}, sizes,
                      [](OpBuilder &, Location, ValueRange v) -> Value {
                        return v[0];
                      }));
    return success();
  }
};

/// 0, 1, 2, ... converted to the element type.
struct IotaLowering : LoomPattern<IotaOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(IotaOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Emitter e = emitter(rewriter, op);
    auto type = op.getResult().getType();
    Value n = a.getSize() ? a.getSize() : e.cIndex(type.getDimSize(0));
    Type et = type.getElementType();
    rewriter.replaceOp(
        op, e.generic(type, {}, {}, {n},
                      [&](OpBuilder &bb, Location l, ValueRange) -> Value {
                        Value i = linalg::IndexOp::create(bb, l, 0);
                        Value w = arith::IndexCastOp::create(
                            bb, l, bb.getI64Type(), i);
                        return scalarCast(bb, l, w, et);
                      }));
    return success();
  }
};

struct TransposeLowering : LoomPattern<TransposeOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Value result =
        emitter(rewriter, op).transpose(a.getInput(), op.getPermutation());
    if (result.getType() != op.getResult().getType())
      result = tensor::CastOp::create(rewriter, op.getLoc(),
                                      op.getResult().getType(), result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConcatLowering : LoomPattern<ConcatOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = op.getResult().getType();
    int64_t axis = normAxis(op.getAxis(), type.getRank());
    rewriter.replaceOp(op,
                       emitter(rewriter, op).concat(a.getInputs(), axis, type));
    return success();
  }
};

struct GatherLowering : LoomPattern<GatherOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t axis = normAxis(op.getAxis(), op.getInput().getType().getRank());
    MovementEmitter e(rewriter, op.getLoc(), opts);
    if (failed(e.checkGatherIndices(op, a, axis)))
      return failure();
    rewriter.replaceOp(op, e.gather(a.getInput(), a.getIndices(), axis,
                                    op.getResult().getType()));
    return success();
  }
};

struct EmbeddingLowering : LoomPattern<EmbeddingOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    MovementEmitter e(rewriter, op.getLoc(), opts);
    bool quantized = isa<QTensorType>(op.getTable().getType());
    std::optional<QuantizedWeight> w;
    if (quantized) {
      w = quantizedWeight(op.getTable(), a.getTable());
      if (!w)
        return op.emitOpError() << "quantized embedding tables lower to CPU "
                                   "code only as entry-point weights";
    }
    // The f32 path is gather's, where negative ids count from the end.
    e.checkIndices(op, a.getIds(), e.dim(w ? w->bytes : a.getTable(), 0),
                   /*negative=*/!quantized, "ids");
    Value result;
    if (quantized) {
      result = e.quantizedEmbedding(op, a, *w);
    } else {
      result = e.gather(a.getTable(), a.getIds(), 0, op.getResult().getType());
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void loom::lowering::populateDataMovementPatterns(TypeConverter &converter,
                                                  RewritePatternSet &patterns,
                                                  const LoweringOptions &opts) {
  patterns.add<
      ReshapeLowering, BroadcastLowering, IotaLowering, TransposeLowering,
      ConcatLowering,
      EmitterPattern<SliceOp, MovementEmitter, &MovementEmitter::lowerSlice>,
      GatherLowering, EmbeddingLowering>(converter, patterns.getContext(),
                                         opts);
}
