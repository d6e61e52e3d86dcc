//===- ContractionPatterns.cpp - matmul, softmax, reductions, norms -------===//
//
// loom.matmul through the runtime's GEMM when the shapes map to one call,
// else a generic with a reduction over K; softmax, reductions and the norms
// as short sequences of generics.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"

#include <cmath>

using namespace mlir;
using namespace loom;
using namespace loom::lowering;

namespace {

/// acc (kind) x, float or signed integer; a mean sums.
Value combine(ReduceKind kind, bool f, OpBuilder &b, Location l, Value acc,
              Value x) {
  switch (kind) {
  case ReduceKind::prod:
    return f ? arith::MulFOp::create(b, l, acc, x).getResult()
             : arith::MulIOp::create(b, l, acc, x).getResult();
  case ReduceKind::max:
    return f ? arith::MaximumFOp::create(b, l, acc, x).getResult()
             : arith::MaxSIOp::create(b, l, acc, x).getResult();
  case ReduceKind::min:
    return f ? arith::MinimumFOp::create(b, l, acc, x).getResult()
             : arith::MinSIOp::create(b, l, acc, x).getResult();
  case ReduceKind::sum:
  case ReduceKind::mean:
    break;
  }
  return f ? arith::AddFOp::create(b, l, acc, x).getResult()
           : arith::AddIOp::create(b, l, acc, x).getResult();
}

struct ContractionEmitter : Emitter {
  using Emitter::Emitter;
  Value lowerReduce(ReduceOp op, ReduceOp::Adaptor a);
  Value lowerRmsNorm(RmsNormOp op, RmsNormOp::Adaptor a);
  Value lowerLayerNorm(LayerNormOp op, LayerNormOp::Adaptor a);
  /// y = x * rsqrt(sumSq / n + eps) [* scale] [+ bias], sumSq reduced over
  /// `axes` and scale and bias indexed by them.
  Value normalize(RankedTensorType type, Value x, Value sumSq,
                  ArrayRef<int64_t> axes, ArrayRef<Value> sizes, Value n,
                  double epsilon, Value scale, Value bias);
};

} // namespace

Value ContractionEmitter::lowerReduce(ReduceOp op, ReduceOp::Adaptor a) {
  Value input = a.getInput();
  auto t = op.getInput().getType();
  SmallVector<int64_t> axes;
  for (int64_t a : op.getAxes())
    axes.push_back(a < 0 ? a + t.getRank() : a);
  llvm::sort(axes);
  Type et = t.getElementType();
  bool f = isFloat(et);
  ReduceKind kind = op.getKind();
  double init = kind == ReduceKind::prod  ? 1.0
                : kind == ReduceKind::max ? -INFINITY
                : kind == ReduceKind::min ? INFINITY
                                          : 0.0;
  Value r = reduce(input, axes, init,
                   [&](OpBuilder &bb, Location l, Value acc, Value x) {
                     return combine(kind, f, bb, l, acc, x);
                   });
  auto rt = cast<RankedTensorType>(r.getType());
  if (op.getKind() == ReduceKind::mean) {
    Value count = cIndex(1);
    for (int64_t a : axes)
      count = arith::MulIOp::create(b, loc, count, dim(input, a));
    Value n = indexToFloat(count, et);
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < rt.getRank(); ++d)
      sizes.push_back(dim(r, d));
    r = generic(rt, {r}, {b.getMultiDimIdentityMap(rt.getRank())}, sizes,
                [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
                  return arith::DivFOp::create(bb, l, a[0], n);
                });
  }
  if (!op.getKeepDims())
    return r;
  return reshape(r, op.getResult().getType());
}

Value ContractionEmitter::lowerRmsNorm(RmsNormOp op, RmsNormOp::Adaptor a) {
  Value x = a.getInput();
  auto t = op.getInput().getType();
  Type et = t.getElementType();
  int64_t rank = t.getRank(), last = rank - 1;
  Value ss = reduce(
      x, {last}, 0.0,
      [](OpBuilder &bb, Location l, Value acc, Value v) -> Value {
        return arith::AddFOp::create(bb, l, acc, v);
      },
      [](OpBuilder &bb, Location l, Value v) -> Value {
        return arith::MulFOp::create(bb, l, v, v);
      });
  Value n = indexToFloat(dim(x, last), et);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(dim(x, d));
  return normalize(op.getResult().getType(), x, ss, {last}, sizes, n,
                   op.getEpsilon().convertToDouble(), a.getScale(), Value());
}

Value ContractionEmitter::lowerLayerNorm(LayerNormOp op,
                                         LayerNormOp::Adaptor a) {
  Value x = a.getInput();
  auto t = op.getInput().getType();
  Type et = t.getElementType();
  int64_t rank = t.getRank();
  int64_t axis = normAxis(op.getAxis(), rank);
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  Value n = indexToFloat(numElements(x, axis, rank), et);
  auto add = [](OpBuilder &bb, Location l, Value acc, Value v) -> Value {
    return arith::AddFOp::create(bb, l, acc, v);
  };
  Value sum = reduce(x, axes, 0.0, add);
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap drop = dropDimsMap(rank, axes);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(dim(x, d));
  // Centre first, then the variance of the centred values (two passes:
  // better conditioned than E[x^2] - E[x]^2).
  Value centred =
      generic(t, {x, sum}, {id, drop}, sizes,
              [&](OpBuilder &bb, Location l, ValueRange a) {
                Value mean = arith::DivFOp::create(bb, l, a[1], n);
                return Value(arith::SubFOp::create(bb, l, a[0], mean));
              });
  Value sq =
      reduce(centred, axes, 0.0, add, [](OpBuilder &bb, Location l, Value v) {
        return Value(arith::MulFOp::create(bb, l, v, v));
      });
  return normalize(op.getResult().getType(), centred, sq, axes, sizes, n,
                   op.getEpsilon().convertToDouble(), a.getScale(),
                   a.getBias());
}

Value ContractionEmitter::normalize(RankedTensorType type, Value x, Value sumSq,
                                    ArrayRef<int64_t> axes,
                                    ArrayRef<Value> sizes, Value n,
                                    double epsilon, Value scale, Value bias) {
  int64_t rank = type.getRank();
  Value eps = cFloat(b, loc, type.getElementType(), epsilon);
  SmallVector<Value> inputs{x, sumSq};
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank),
                              dropDimsMap(rank, axes)};
  SmallVector<AffineExpr> tail;
  for (int64_t d : axes)
    tail.push_back(b.getAffineDimExpr(d));
  AffineMap tailMap = AffineMap::get(rank, 0, tail, b.getContext());
  for (Value v : {scale, bias})
    if (v) {
      inputs.push_back(v);
      maps.push_back(tailMap);
    }
  bool hasScale = static_cast<bool>(scale), hasBias = static_cast<bool>(bias);
  return generic(type, inputs, maps, sizes,
                 [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
                   Value var = arith::DivFOp::create(bb, l, a[1], n);
                   Value r = math::RsqrtOp::create(
                       bb, l, arith::AddFOp::create(bb, l, var, eps));
                   Value y = arith::MulFOp::create(bb, l, a[0], r);
                   unsigned next = 2;
                   if (hasScale)
                     y = arith::MulFOp::create(bb, l, y, a[next++]);
                   if (hasBias)
                     y = arith::AddFOp::create(bb, l, y, a[next++]);
                   return y;
                 });
}

namespace {

struct MatmulLowering : LoomPattern<MatmulOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Emitter e = emitter(rewriter, op);
    auto type = op.getResult().getType();
    Value result = e.matmulByGemm(op, a.getLhs(), a.getRhs(),
                                  op.getTransposeA(), op.getTransposeB(), type);
    if (!result && !opts.gemm && collapsesToRank2(op)) {
      // x [..., M, K] times a rank-2 weight: one [prod(...) * M, K] product
      // (the same sums; a rank-2 contraction is what the GPU lowering gives
      // cuBLAS) between views of x and of the result (collapse / expand:
      // no copies).
      Location loc = op.getLoc();
      Value lhs = a.getLhs();
      auto lt = cast<RankedTensorType>(lhs.getType());
      int64_t rank = lt.getRank(), rows = 1;
      for (int64_t d : lt.getShape().drop_back())
        rows = isDyn(d) || isDyn(rows) ? ShapedType::kDynamic : rows * d;
      SmallVector<ReassociationIndices> groups(2);
      for (int64_t d = 0; d + 1 < rank; ++d)
        groups[0].push_back(d);
      groups[1].push_back(rank - 1);
      Value x = tensor::CollapseShapeOp::create(
          rewriter, loc,
          RankedTensorType::get({rows, lt.getShape().back()},
                                lt.getElementType()),
          lhs, groups);
      Value y = e.matmul(x, a.getRhs(), false, op.getTransposeB(),
                         RankedTensorType::get({rows, type.getShape().back()},
                                               type.getElementType()));
      // Expanded by x's leading sizes (those the collapse took; the result
      // type may know more of them statically, or fewer: a cast after).
      SmallVector<int64_t> expandedShape(lt.getShape().drop_back());
      expandedShape.push_back(type.getShape().back());
      auto expanded =
          RankedTensorType::get(expandedShape, type.getElementType());
      SmallVector<OpFoldResult> shape;
      for (int64_t d = 0; d + 1 < rank; ++d)
        shape.push_back(lt.isDynamicDim(d) ? OpFoldResult(e.dim(lhs, d))
                                           : OpFoldResult(rewriter.getIndexAttr(
                                                 lt.getDimSize(d))));
      shape.push_back(
          type.isDynamicDim(rank - 1)
              ? OpFoldResult(e.dim(y, 1))
              : OpFoldResult(rewriter.getIndexAttr(type.getDimSize(rank - 1))));
      result = tensor::ExpandShapeOp::create(rewriter, loc, expanded, y, groups,
                                             shape);
      if (expanded != type)
        result = tensor::CastOp::create(rewriter, loc, type, result);
    }
    if (!result)
      result = e.matmul(a.getLhs(), a.getRhs(), op.getTransposeA(),
                        op.getTransposeB(), type);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SoftmaxLowering : LoomPattern<SoftmaxOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(SoftmaxOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = op.getInput().getType().getRank();
    rewriter.replaceOp(
        op, emitter(rewriter, op)
                .softmax(a.getInput(), normAxis(op.getAxis(), rank)));
    return success();
  }
};

} // namespace

void loom::lowering::populateContractionPatterns(TypeConverter &converter,
                                                 RewritePatternSet &patterns,
                                                 const LoweringOptions &opts) {
  patterns.add<MatmulLowering, SoftmaxLowering,
               EmitterPattern<ReduceOp, ContractionEmitter,
                              &ContractionEmitter::lowerReduce>,
               EmitterPattern<RmsNormOp, ContractionEmitter,
                              &ContractionEmitter::lowerRmsNorm>,
               EmitterPattern<LayerNormOp, ContractionEmitter,
                              &ContractionEmitter::lowerLayerNorm>>(
      converter, patterns.getContext(), opts);
}
