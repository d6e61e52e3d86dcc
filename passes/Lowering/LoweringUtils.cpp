//===- LoweringUtils.cpp - builders shared by the lowering patterns -------===//
//
// The Emitter of LoweringUtils.h: broadcasting generics, reductions,
// reshapes, transposes, matmuls (generated or through the runtime's GEMM)
// and calls into the runtime C ABI on buffers.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"
#include "passes/Lowering/GemmWeights.h"
#include "passes/Lowering/RuntimeABI.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

#include <cmath>

using namespace mlir;
using namespace loom;
using namespace loom::lowering;

//===----------------------------------------------------------------------===//
// Small builders
//===----------------------------------------------------------------------===//

Emitter::Emitter(OpBuilder &b, Location loc, const LoweringOptions &opts)
    : b(b), loc(loc), opts(opts) {
  Operation *parent = b.getInsertionBlock()->getParentOp();
  module = dyn_cast<ModuleOp>(parent);
  if (!module)
    module = parent->getParentOfType<ModuleOp>();
}

Value Emitter::cIndex(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value Emitter::cI64(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
}
Value Emitter::cI32(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}
Value Emitter::cFloat(OpBuilder &bb, Location l, Type t, double v) {
  return arith::ConstantOp::create(bb, l, bb.getFloatAttr(t, v));
}
Value Emitter::dim(Value v, int64_t d) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!t.isDynamicDim(d))
    return cIndex(t.getDimSize(d));
  return tensor::DimOp::create(b, loc, v, d);
}
OpFoldResult Emitter::dimOfr(Value v, int64_t d) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!t.isDynamicDim(d))
    return b.getIndexAttr(t.getDimSize(d));
  return tensor::DimOp::create(b, loc, v, d).getResult();
}
Value Emitter::numElements(Value v, int64_t from, int64_t to) {
  auto t = cast<RankedTensorType>(v.getType());
  if (to < 0)
    to = t.getRank();
  Value n = cIndex(1);
  for (int64_t d = from; d < to; ++d)
    n = arith::MulIOp::create(b, loc, n, dim(v, d));
  return n;
}
Value Emitter::indexToI64(Value v) {
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
}
Value Emitter::indexToFloat(Value v, Type ft) {
  Value i = indexToI64(v);
  return arith::SIToFPOp::create(b, loc, ft, i);
}
Value Emitter::empty(RankedTensorType type, ArrayRef<Value> dynSizes) {
  SmallVector<OpFoldResult> sizes;
  unsigned next = 0;
  for (int64_t d : type.getShape())
    sizes.push_back(isDyn(d) ? OpFoldResult(dynSizes[next++])
                             : OpFoldResult(b.getIndexAttr(d)));
  return tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
}
Value Emitter::emptyAll(RankedTensorType type, ArrayRef<Value> allSizes) {
  SmallVector<Value> dyn;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    if (isDyn(d))
      dyn.push_back(allSizes[i]);
  return empty(type, dyn);
}
Value Emitter::fill(Value init, Value scalar) {
  return linalg::FillOp::create(b, loc, ValueRange{scalar}, ValueRange{init})
      .getResult(0);
}
Value Emitter::elementwise(RankedTensorType type, ValueRange inputs,
                           BodyFn body) {
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(in, type.getRank()));
  return generic(type, inputs, maps, broadcastSizes(type, inputs), body);
}

//===----------------------------------------------------------------------===//
// Generic builders
//===----------------------------------------------------------------------===//

Value loom::lowering::scalarCast(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  bool ff = isFloat(from), ft = isFloat(to);
  if (ff && ft) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      return arith::TruncFOp::create(b, loc, to, x);
    // f16 <-> bf16: through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (ff && !ft) {
    if (to.isInteger(1)) {
      Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(from, 0));
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x, zero);
    }
    return arith::FPToSIOp::create(b, loc, to, x);
  }
  if (!ff && ft) {
    if (from.isInteger(1))
      return arith::UIToFPOp::create(b, loc, to, x);
    return arith::SIToFPOp::create(b, loc, to, x);
  }
  unsigned wf = from.getIntOrFloatBitWidth(), wt = to.getIntOrFloatBitWidth();
  if (to.isInteger(1)) {
    Value zero = arith::ConstantIntOp::create(b, loc, from, 0);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (wf < wt)
    return from.isInteger(1)
               ? arith::ExtUIOp::create(b, loc, to, x).getResult()
               : arith::ExtSIOp::create(b, loc, to, x).getResult();
  return arith::TruncIOp::create(b, loc, to, x);
}

SmallVector<Value> Emitter::broadcastSizes(RankedTensorType type,
                                           ValueRange inputs) {
  int64_t rank = type.getRank();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!type.isDynamicDim(d)) {
      sizes.push_back(cIndex(type.getDimSize(d)));
      continue;
    }
    Value size;
    for (Value in : inputs) {
      auto t = cast<RankedTensorType>(in.getType());
      int64_t k = d - (rank - t.getRank());
      if (k < 0 || t.getDimSize(k) == 1)
        continue;
      size = dim(in, k);
      break;
    }
    sizes.push_back(size ? size : cIndex(1));
  }
  return sizes;
}

AffineMap Emitter::broadcastMap(Value input, unsigned rank) {
  auto t = cast<RankedTensorType>(input.getType());
  SmallVector<AffineExpr> exprs;
  for (int64_t k = 0; k < t.getRank(); ++k) {
    unsigned d = rank - t.getRank() + k;
    exprs.push_back(t.getDimSize(k) == 1 ? b.getAffineConstantExpr(0)
                                         : b.getAffineDimExpr(d));
  }
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

Value Emitter::dequantizeRows(RankedTensorType type, ArrayRef<Value> sizes,
                              Value bytes, QuantAttr quant) {
  int64_t rank = type.getRank();
  return generic(type, {}, {}, sizes,
                 [&](OpBuilder &bb, Location l, ValueRange) -> Value {
                   SmallVector<Value> rows;
                   for (int64_t d = 0; d + 1 < rank; ++d)
                     rows.push_back(linalg::IndexOp::create(bb, l, d));
                   Value k = linalg::IndexOp::create(bb, l, rank - 1);
                   return dequantElement(bb, l, bytes, rows, k, quant);
                 });
}

Value Emitter::generic(RankedTensorType type, ValueRange inputs,
                       ArrayRef<AffineMap> maps, ArrayRef<Value> sizes,
                       BodyFn body) {
  Value init = emptyAll(type, sizes);
  SmallVector<AffineMap> all(maps);
  all.push_back(b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iters(type.getRank(),
                                         utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{type}, inputs, ValueRange{init}, all, iters,
      [&](OpBuilder &bb, Location l, ValueRange args) {
        Value r = body(bb, l, args.drop_back());
        linalg::YieldOp::create(bb, l, r);
      });
  return op.getResult(0);
}

AffineMap Emitter::dropDimsMap(unsigned rank, ArrayRef<int64_t> axes) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d))
      exprs.push_back(b.getAffineDimExpr(d));
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

Value Emitter::reduce(
    Value input, ArrayRef<int64_t> axes, double init,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine,
    function_ref<Value(OpBuilder &, Location, Value)> pre) {
  auto t = cast<RankedTensorType>(input.getType());
  unsigned rank = t.getRank();
  SmallVector<int64_t> shape;
  SmallVector<Value> dyn;
  for (unsigned d = 0; d < rank; ++d) {
    if (llvm::is_contained(axes, d))
      continue;
    shape.push_back(t.getDimSize(d));
    if (t.isDynamicDim(d))
      dyn.push_back(dim(input, d));
  }
  Type et = t.getElementType();
  auto outType = RankedTensorType::get(shape, et);
  Value initValue;
  if (isFloat(et)) {
    initValue = cFloat(b, loc, et, init);
  } else if (std::isinf(init)) {
    auto it = cast<IntegerType>(et);
    APInt v = init > 0 ? APInt::getSignedMaxValue(it.getWidth())
                       : APInt::getSignedMinValue(it.getWidth());
    initValue = arith::ConstantOp::create(b, loc, b.getIntegerAttr(et, v));
  } else {
    initValue = arith::ConstantIntOp::create(b, loc, et, (int64_t)init);
  }
  Value out = fill(empty(outType, dyn), initValue);
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank),
                              dropDimsMap(rank, axes)};
  SmallVector<utils::IteratorType> iters;
  for (unsigned d = 0; d < rank; ++d)
    iters.push_back(llvm::is_contained(axes, d)
                        ? utils::IteratorType::reduction
                        : utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{input}, ValueRange{out}, maps,
      iters, [&](OpBuilder &bb, Location l, ValueRange args) {
        Value x = pre ? pre(bb, l, args[0]) : args[0];
        linalg::YieldOp::create(bb, l, combine(bb, l, args.back(), x));
      });
  return op.getResult(0);
}

/// Splits a reshape from `in` to `out` into a kept prefix, a middle that is
/// collapsed and re-expanded, and a kept static suffix, such that the
/// re-expanded middle has at most one dynamic dimension (one expand group
/// cannot hold two dynamic sizes). Returns false when no split exists.
static bool splitReshape(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                         int64_t &prefix, int64_t &suffix) {
  // Equal static sizes are kept; two dynamic sizes in the same place need
  // not be equal ([S*B, E] -> [S, B, E] has ? first on both sides), unless
  // each side has only that one and the static sizes have the same product
  // (the element count then makes them equal: [1, S, 576] -> [1, S, 9, 64]).
  auto staticProduct = [](ArrayRef<int64_t> s) {
    int64_t n = 1;
    for (int64_t d : s)
      n *= isDyn(d) ? 1 : d;
    return n;
  };
  bool oneSameDyn = llvm::count_if(in, isDyn) == 1 &&
                    llvm::count_if(out, isDyn) == 1 &&
                    staticProduct(in) == staticProduct(out);
  int64_t maxP = 0;
  while (maxP < (int64_t)std::min(in.size(), out.size()) &&
         (!isDyn(in[maxP]) || oneSameDyn) && in[maxP] == out[maxP])
    ++maxP;
  for (int64_t p = maxP; p >= 0; --p) {
    int64_t q = 0;
    while (q < (int64_t)in.size() - p && q < (int64_t)out.size() - p &&
           !isDyn(in[in.size() - 1 - q]) &&
           in[in.size() - 1 - q] == out[out.size() - 1 - q])
      ++q;
    for (; q >= 0; --q) {
      ArrayRef<int64_t> mi = in.slice(p, in.size() - p - q);
      ArrayRef<int64_t> mo = out.slice(p, out.size() - p - q);
      if (mi.empty() != mo.empty())
        continue;
      if (llvm::count_if(mo, isDyn) > 1)
        continue;
      bool staticMid = llvm::none_of(mi, isDyn) && llvm::none_of(mo, isDyn);
      int64_t pi = 1, po = 1;
      for (int64_t d : mi)
        pi *= isDyn(d) ? 1 : d;
      for (int64_t d : mo)
        po *= isDyn(d) ? 1 : d;
      if (staticMid && pi != po)
        continue;
      if (llvm::none_of(mo, isDyn) && llvm::any_of(mi, isDyn))
        continue; // trust a static result only when the input is static too
      prefix = p;
      suffix = q;
      return true;
    }
  }
  return false;
}

FailureOr<Value> Emitter::reshapeTo(Operation *op, Value input,
                                    RankedTensorType type, ValueRange sizes) {
  auto in = cast<RankedTensorType>(input.getType());
  Type et = in.getElementType();
  if (!sizes.empty() && in.getRank() > 0 && type.getRank() > 0) {
    // Every size is known: the input viewed as one dimension, copied into
    // the result element by element (row-major index). Not an expand_shape:
    // one group with two dynamic sizes ([S*B] -> [S, B]) crashes MLIR 22's
    // expand-strided-metadata (upstream bug, also in Debian's mlir-opt).
    SmallVector<Value> shape;
    unsigned next = 0;
    for (int64_t d : type.getShape())
      shape.push_back(isDyn(d) ? sizes[next++] : cIndex(d));
    Value flat = input;
    if (in.getRank() != 1) {
      std::optional<int64_t> n = 1;
      for (int64_t d : in.getShape())
        n = isDyn(d) || !n ? std::nullopt : std::optional<int64_t>(*n * d);
      ReassociationIndices all;
      for (int64_t d = 0; d < in.getRank(); ++d)
        all.push_back(d);
      flat = tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get({n ? *n : ShapedType::kDynamic}, et),
          input, ArrayRef<ReassociationIndices>{all});
    }
    return generic(
        type, {}, {}, shape,
        [&](OpBuilder &bb, Location l, ValueRange) -> Value {
          Value lin;
          for (int64_t d = 0; d < type.getRank(); ++d) {
            Value i = linalg::IndexOp::create(bb, l, d);
            lin =
                lin ? arith::AddIOp::create(
                          bb, l, arith::MulIOp::create(bb, l, lin, shape[d]), i)
                          .getResult()
                    : i;
          }
          return tensor::ExtractOp::create(bb, l, flat, ValueRange{lin});
        });
  }
  if (input.getType() == type)
    return input;
  int64_t p = 0, q = 0;
  bool split = splitReshape(in.getShape(), type.getShape(), p, q);
  if (!split && llvm::count_if(type.getShape(), isDyn) <= 1) {
    p = 0; // one group holding everything
    q = 0;
    split = true;
  }
  if (!split)
    return op->emitOpError()
           << "cannot lower this reshape: its dynamic sizes cannot be "
              "inferred (make all but one of the changed dimensions static)";
  int64_t inMidEnd = in.getRank() - q, outMidEnd = type.getRank() - q;
  // Collapse: prefix dims alone, the middle into one, suffix dims alone.
  SmallVector<ReassociationIndices> collapse;
  SmallVector<int64_t> midShape;
  for (int64_t d = 0; d < p; ++d) {
    collapse.push_back({d});
    midShape.push_back(in.getDimSize(d));
  }
  ReassociationIndices middle;
  int64_t midStatic = 1;
  bool midDyn = false;
  for (int64_t d = p; d < inMidEnd; ++d) {
    middle.push_back(d);
    midDyn |= in.isDynamicDim(d);
    midStatic *= in.isDynamicDim(d) ? 1 : in.getDimSize(d);
  }
  bool hasMiddle = !middle.empty();
  if (hasMiddle) {
    collapse.push_back(middle);
    midShape.push_back(midDyn ? ShapedType::kDynamic : midStatic);
  }
  for (int64_t d = inMidEnd; d < in.getRank(); ++d) {
    collapse.push_back({d});
    midShape.push_back(in.getDimSize(d));
  }
  auto midType = RankedTensorType::get(midShape, et);
  Value mid = input;
  if (midType != in)
    mid = tensor::CollapseShapeOp::create(b, loc, midType, input, collapse);
  if (midType == type)
    return mid;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, mid,
                                           ArrayRef<ReassociationIndices>{})
        .getResult();
  // Expand back: every output size; the middle's dynamic one by division.
  SmallVector<ReassociationIndices> expand;
  SmallVector<OpFoldResult> outShape;
  for (int64_t d = 0; d < p; ++d) {
    expand.push_back({d});
    outShape.push_back(dimOfr(input, d));
  }
  if (hasMiddle || midType.getRank() == 0) {
    ReassociationIndices group;
    int64_t knownOut = 1;
    for (int64_t d = p; d < outMidEnd; ++d) {
      group.push_back(d);
      if (!type.isDynamicDim(d))
        knownOut *= type.getDimSize(d);
    }
    Value midSize = numElements(input, p, inMidEnd);
    for (int64_t d = p; d < outMidEnd; ++d) {
      if (!type.isDynamicDim(d))
        outShape.push_back(b.getIndexAttr(type.getDimSize(d)));
      else
        outShape.push_back(
            arith::DivUIOp::create(b, loc, midSize, cIndex(knownOut))
                .getResult());
    }
    if (midType.getRank() > 0)
      expand.push_back(group);
  }
  for (int64_t d = outMidEnd; d < type.getRank(); ++d) {
    expand.push_back({d});
    outShape.push_back(b.getIndexAttr(type.getDimSize(d)));
  }
  return tensor::ExpandShapeOp::create(b, loc, type, mid, expand, outShape)
      .getResult();
}

Value Emitter::reshape(Value input, RankedTensorType type) {
  Operation *anchor = input.getDefiningOp();
  if (!anchor)
    anchor = cast<BlockArgument>(input).getOwner()->getParentOp();
  FailureOr<Value> r = reshapeTo(anchor, input, type);
  if (failed(r))
    llvm::report_fatal_error("loom: an internal reshape is not splittable");
  return *r;
}

Value Emitter::transpose(Value input, ArrayRef<int64_t> perm) {
  auto t = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  for (int64_t p : perm) {
    shape.push_back(t.getDimSize(p));
    sizes.push_back(dim(input, p));
  }
  auto outType = RankedTensorType::get(shape, t.getElementType());
  Value init = emptyAll(outType, sizes);
  return linalg::TransposeOp::create(b, loc, input, init, perm).getResult()[0];
}

Value Emitter::concat(ValueRange inputs, int64_t axis, RankedTensorType type) {
  SmallVector<Value> sizes;
  Value total = cIndex(0);
  for (Value in : inputs)
    total = arith::AddIOp::create(b, loc, total, dim(in, axis));
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(d == axis ? total : dim(inputs.front(), d));
  Value result = emptyAll(type, sizes);
  Value offset = cIndex(0);
  for (Value in : inputs) {
    auto t = cast<RankedTensorType>(in.getType());
    SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)),
        strides(t.getRank(), b.getIndexAttr(1)), extents;
    offsets[axis] = offset;
    for (int64_t d = 0; d < t.getRank(); ++d)
      extents.push_back(dimOfr(in, d));
    result = tensor::InsertSliceOp::create(b, loc, in, result, offsets, extents,
                                           strides);
    offset = arith::AddIOp::create(b, loc, offset, dim(in, axis));
  }
  return result;
}

Value Emitter::softmax(Value input, int64_t axis) {
  auto t = cast<RankedTensorType>(input.getType());
  unsigned rank = t.getRank();
  SmallVector<Value> sizes;
  for (unsigned d = 0; d < rank; ++d)
    sizes.push_back(dim(input, d));
  Value m = reduce(input, {axis}, -INFINITY,
                   [](OpBuilder &bb, Location l, Value acc, Value x) -> Value {
                     return arith::MaximumFOp::create(bb, l, acc, x);
                   });
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap drop = dropDimsMap(rank, {axis});
  Value e = generic(t, {input, m}, {id, drop}, sizes,
                    [](OpBuilder &bb, Location l, ValueRange a) -> Value {
                      return math::ExpOp::create(
                          bb, l, arith::SubFOp::create(bb, l, a[0], a[1]));
                    });
  Value s = reduce(e, {axis}, 0.0,
                   [](OpBuilder &bb, Location l, Value acc, Value x) -> Value {
                     return arith::AddFOp::create(bb, l, acc, x);
                   });
  return generic(t, {e, s}, {id, drop}, sizes,
                 [](OpBuilder &bb, Location l, ValueRange a) -> Value {
                   return arith::DivFOp::create(bb, l, a[0], a[1]);
                 });
}

Value Emitter::gather(Value data, Value indices, int64_t axis,
                      RankedTensorType type) {
  auto it = cast<RankedTensorType>(indices.getType());
  unsigned rank = type.getRank(), ir = it.getRank();
  SmallVector<Value> sizes;
  for (unsigned d = 0; d < rank; ++d) {
    if (d < axis)
      sizes.push_back(dim(data, d));
    else if (d < axis + ir)
      sizes.push_back(dim(indices, d - axis));
    else
      sizes.push_back(dim(data, d - ir + 1));
  }
  SmallVector<AffineExpr> idxExprs;
  for (unsigned k = 0; k < ir; ++k)
    idxExprs.push_back(b.getAffineDimExpr(axis + k));
  AffineMap idxMap = AffineMap::get(rank, 0, idxExprs, b.getContext());
  Value axisSize = dim(data, axis);
  return generic(
      type, {indices}, {idxMap}, sizes,
      [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
        Value idx = arith::IndexCastOp::create(bb, l, bb.getIndexType(), a[0]);
        // Negative indices count from the end (ONNX Gather).
        Value zero = arith::ConstantIndexOp::create(bb, l, 0);
        Value neg =
            arith::CmpIOp::create(bb, l, arith::CmpIPredicate::slt, idx, zero);
        idx = arith::SelectOp::create(
            bb, l, neg, arith::AddIOp::create(bb, l, idx, axisSize), idx);
        SmallVector<Value> coords;
        for (unsigned d = 0; d < axis; ++d)
          coords.push_back(linalg::IndexOp::create(bb, l, d));
        coords.push_back(idx);
        for (unsigned d = axis + ir; d < rank; ++d)
          coords.push_back(linalg::IndexOp::create(bb, l, d));
        return tensor::ExtractOp::create(bb, l, data, coords);
      });
}

bool loom::lowering::collapsesToRank2(loom::MatmulOp op) {
  auto lt = op.getLhs().getType(), rt = op.getRhs().getType();
  return lt.getRank() > 2 && rt.getRank() == 2 && !op.getTransposeA() &&
         op.getResult().getType().getRank() == lt.getRank();
}

bool loom::lowering::lowersAsRank2Product(loom::MatmulOp op) {
  return (op.getLhs().getType().getRank() == 2 &&
          op.getRhs().getType().getRank() == 2 &&
          op.getResult().getType().getRank() == 2) ||
         collapsesToRank2(op);
}

Value Emitter::matmul(Value lhs, Value rhs, bool ta, bool tb,
                      RankedTensorType type) {
  auto lt = cast<RankedTensorType>(lhs.getType());
  auto rt = cast<RankedTensorType>(rhs.getType());
  unsigned batch = type.getRank() - 2;
  unsigned loops = batch + 3; // batch..., m, n, k
  AffineExpr m = b.getAffineDimExpr(batch), n = b.getAffineDimExpr(batch + 1),
             k = b.getAffineDimExpr(batch + 2);
  auto operandMap = [&](RankedTensorType t, AffineExpr r, AffineExpr c) {
    SmallVector<AffineExpr> exprs;
    unsigned ob = t.getRank() - 2;
    for (unsigned i = 0; i < ob; ++i) {
      unsigned d = batch - ob + i;
      exprs.push_back(t.getDimSize(i) == 1 && type.getDimSize(d) != 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(d));
    }
    exprs.push_back(r);
    exprs.push_back(c);
    return AffineMap::get(loops, 0, exprs, b.getContext());
  };
  AffineMap lm = ta ? operandMap(lt, k, m) : operandMap(lt, m, k);
  AffineMap rm = tb ? operandMap(rt, n, k) : operandMap(rt, k, n);
  SmallVector<AffineExpr> outExprs;
  for (unsigned d = 0; d < batch + 2; ++d)
    outExprs.push_back(b.getAffineDimExpr(d));
  AffineMap om = AffineMap::get(loops, 0, outExprs, b.getContext());
  // Result sizes: batch from the broadcast, m from lhs, n from rhs.
  SmallVector<Value> sizes;
  for (unsigned d = 0; d < batch; ++d) {
    Value s;
    for (auto [v, t] : {std::pair{lhs, lt}, std::pair{rhs, rt}}) {
      int64_t k2 = d - (batch - (t.getRank() - 2));
      if (k2 >= 0 && t.getDimSize(k2) != 1) {
        s = dim(v, k2);
        break;
      }
    }
    sizes.push_back(s ? s : cIndex(1));
  }
  sizes.push_back(dim(lhs, ta ? lt.getRank() - 1 : lt.getRank() - 2));
  sizes.push_back(dim(rhs, tb ? rt.getRank() - 2 : rt.getRank() - 1));
  Type et = type.getElementType();
  Value init = fill(emptyAll(type, sizes), cFloat(b, loc, et, 0.0));
  SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init},
      ArrayRef<AffineMap>{lm, rm, om}, iters,
      [](OpBuilder &bb, Location l, ValueRange a) {
        Value p = arith::MulFOp::create(bb, l, a[0], a[1]);
        linalg::YieldOp::create(bb, l,
                                Value(arith::AddFOp::create(bb, l, a[2], p)));
      });
  return op.getResult(0);
}

Value Emitter::matmulByGemm(Operation *op, Value lhs, Value rhs, bool ta,
                            bool tb, RankedTensorType type) {
  auto lt = cast<RankedTensorType>(lhs.getType());
  auto rt = cast<RankedTensorType>(rhs.getType());
  // One GEMM: f32, a shared rank-2 right operand, and a left operand whose
  // batch dimensions fold into M (so not transposed when batched).
  if (!type.getElementType().isF32() || rt.getRank() != 2 ||
      (ta && lt.getRank() != 2))
    return {};
  Value ctx = entryContext(op);
  if (!ctx || !opts.gemm)
    return {};
  // Small static products stay generated: a call costs more than it saves.
  if (lt.hasStaticShape() && rt.hasStaticShape() &&
      lt.getNumElements() * rt.getDimSize(tb ? 0 : 1) < 32 * 1024)
    return {};
  Value kv = dim(lhs, ta ? 0 : lt.getRank() - 1);
  Value n = dim(rhs, tb ? 0 : 1);
  // A contiguous [..., M, K] is a row-major [B*M, K]: pass the buffers as
  // they are and allocate C with its final shape [..., M, N].
  Value m = ta ? dim(lhs, 1) : numElements(lhs, 0, lt.getRank() - 1);
  SmallVector<Value> cSizes;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    cSizes.push_back(ta ? dim(lhs, 1) : dim(lhs, d));
  cSizes.push_back(n);
  Value mv = indexToI64(m), nv = indexToI64(n), kv64 = indexToI64(kv);
  Value ta32 = cI32(ta), tb32 = cI32(tb);
  Value c = kernel({lhs, rhs}, type, cSizes, [&](ValueRange bufs) {
    callRuntime("loom_rt_sgemm",
                ValueRange{ctx, ta32, tb32, mv, nv, kv64, ptrOf(bufs[0]),
                           ptrOf(bufs[1]), ptrOf(bufs[2])});
  });
  // loom-record-gemm-weights finds the weights this GEMM reads from here.
  c.getDefiningOp()->setAttr(kGemmRhsAttrName, b.getBoolAttr(tb));
  return c;
}

//===----------------------------------------------------------------------===//
// Runtime calls
//===----------------------------------------------------------------------===//

Value loom::lowering::entryContext(Operation *op) {
  auto fn = op->getParentOfType<func::FuncOp>();
  // Layers outlined from entry points take the caller's context first.
  if (!fn ||
      !(fn->hasAttr(LoomDialect::kEntryAttrName) ||
        fn->hasAttr(LoomDialect::kLayerAttrName)) ||
      fn.getNumArguments() == 0 ||
      !isa<LLVM::LLVMPointerType>(fn.getArgument(0).getType()))
    return {};
  return fn.getArgument(0);
}

FailureOr<Value> loom::lowering::contextOf(Operation *op) {
  if (Value ctx = entryContext(op))
    return ctx;
  return op->emitOpError()
         << "collectives lower only inside entry points with a runtime "
            "context; run loom-prepare-entry-points first (collectives "
            "in private functions other than outlined layers are not "
            "supported)";
}

Value Emitter::kernel(ValueRange inputs, RankedTensorType type,
                      ArrayRef<Value> sizes,
                      llvm::function_ref<void(ValueRange)> body) {
  return KernelOp::create(
             b, loc, inputs, ValueRange{emptyAll(type, sizes)},
             [&](OpBuilder &, Location, ValueRange bufs) { body(bufs); })
      .getResult(0);
}

Value Emitter::allocLike(RankedTensorType type, ArrayRef<Value> allSizes) {
  auto mt = MemRefType::get(type.getShape(), type.getElementType());
  SmallVector<Value> dyn;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    if (isDyn(d))
      dyn.push_back(allSizes[i]);
  return memref::AllocOp::create(b, loc, mt, dyn);
}

Value Emitter::ptrOf(Value memref) {
  Value idx = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

Value Emitter::ptrAt(Value memref, Value offset) {
  Value idx = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  int64_t bytes =
      cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
  idx = arith::AddIOp::create(
      b, loc, idx, arith::MulIOp::create(b, loc, offset, cIndex(bytes)));
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

Value Emitter::cString(StringRef text) {
  std::string name = "loom.str." + llvm::utohexstr(llvm::xxh3_64bits(text),
                                                   /*LowerCase=*/true);
  auto global = module.lookupSymbol<LLVM::GlobalOp>(name);
  if (!global) {
    // Through `b` (a pattern's rewriter), at module scope.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size() + 1);
    std::string nul = text.str();
    nul.push_back('\0');
    global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                                    LLVM::Linkage::Internal, name,
                                    b.getStringAttr(nul));
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}

func::CallOp Emitter::callRuntime(StringRef name, ValueRange args) {
  const rt_abi::RuntimeFunction *row = rt_abi::lookup(name);
  if (!row)
    llvm::report_fatal_error("loom: " + name +
                             " is not in the runtime table (RuntimeABI.h)");
  auto typeOf = [&](char c) -> Type {
    switch (c) {
    case 'p':
      return LLVM::LLVMPointerType::get(b.getContext());
    case 'i':
      return b.getI32Type();
    case 'l':
      return b.getI64Type();
    case 'd':
      return b.getF64Type();
    }
    return Type();
  };
  SmallVector<Type> argTypes, results;
  for (char c : row->args)
    argTypes.push_back(typeOf(c));
  if (row->result != 'v')
    results.push_back(typeOf(row->result));
  if (TypeRange(args.getTypes()) != TypeRange(argTypes))
    llvm::report_fatal_error("loom: a call of " + name +
                             " does not match its row in RuntimeABI.h");
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    fn = func::FuncOp::create(b, module.getLoc(), name,
                              b.getFunctionType(argTypes, results));
    fn.setPrivate();
  }
  return func::CallOp::create(b, loc, fn, args);
}
