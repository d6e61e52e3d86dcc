//===- ConvPatterns.cpp - conv, conv_transpose, pool ----------------------===//
//
// loom.conv, loom.conv_transpose and loom.pool on tensors, channels first.
// Explicit pads become a tensor.pad (zeros, -inf for a max pool); then
//   - a convolution with one group and 1-3 spatial dimensions is the named
//     linalg.conv_{1d_ncw_fcw,2d_nchw_fchw,3d_ncdhw_fcdhw}, a pool over 1-2
//     spatial dimensions linalg.pooling_{ncw,nchw}_{max,sum};
//   - every other case (groups, depthwise, 3-D pools) is one linalg.generic:
//     a convolution over loops [N, G, M/G, O..., C/G, K...] on the input
//     viewed as [N, G, C/G, D...] and the weight as [G, M/G, C/G, K...];
//   - conv_transpose is that generic with the kernel flipped, on the input
//     spread out by the stride (inserted with strides into zeros) and
//     padded by dilation*(K-1) - pad on each side (cut where negative);
//   - an average divides the window sums by each window's count: the same
//     window sum over ones padded with 1 (count_include_pad) or 0, and with
//     0 over the cells that ceil_mode adds past the end pad.
// A bias initialises the accumulator.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace loom;
using namespace loom::lowering;

namespace {

struct ConvEmitter : Emitter {
  using Emitter::Emitter;
  Value lowerConv(ConvOp op, ConvOp::Adaptor a);
  Value lowerConvTranspose(ConvTransposeOp op, ConvTransposeOp::Adaptor a);
  Value lowerPool(PoolOp op, PoolOp::Adaptor a);

  /// Every size of `type`, the dynamic batch read from `like`'s dimension 0.
  SmallVector<Value> sizes(RankedTensorType type, Value like);
  /// `x` [N, C, D...] padded on its spatial dimensions with `value`.
  Value pad(Value x, ArrayRef<int64_t> low, ArrayRef<int64_t> high,
            double value);
  /// The accumulator of a convolution: the bias along dimension
  /// `channelDim` of `type` (the channels, possibly [G, M/G] over two
  /// dimensions), or zeros.
  Value convInit(RankedTensorType type, Value bias, Value like,
                 ArrayRef<unsigned> channelDims);
  /// The grouped convolution generic over `x` (padded); `transposed` reads
  /// the weight as [C, M/G, K...] with the kernel flipped.
  Value groupedConv(Value x, Value w, Value bias, int64_t groups,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                    bool transposed, RankedTensorType type);
  /// Reduces each window of `x` (padded) into `init` with max or add.
  Value windowReduce(Value x, Value init, ArrayRef<int64_t> kernel,
                     ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                     bool isMax, RankedTensorType type);
};

SmallVector<Value> ConvEmitter::sizes(RankedTensorType type, Value like) {
  SmallVector<Value> s;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    s.push_back(isDyn(d) ? dim(like, i) : cIndex(d));
  return s;
}

Value ConvEmitter::pad(Value x, ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                       double value) {
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; }))
    return x;
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(t.getShape());
  SmallVector<OpFoldResult> lo(2, b.getIndexAttr(0)), hi(2, b.getIndexAttr(0));
  for (size_t i = 0; i < low.size(); ++i) {
    shape[i + 2] += low[i] + high[i];
    lo.push_back(b.getIndexAttr(low[i]));
    hi.push_back(b.getIndexAttr(high[i]));
  }
  auto type = RankedTensorType::get(shape, t.getElementType());
  Value v = cFloat(b, loc, t.getElementType(), value);
  return tensor::PadOp::create(b, loc, type, x, lo, hi, v);
}

Value ConvEmitter::convInit(RankedTensorType type, Value bias, Value like,
                            ArrayRef<unsigned> channelDims) {
  SmallVector<Value> all = sizes(type, like);
  if (!bias)
    return fill(emptyAll(type, all), cFloat(b, loc, type.getElementType(), 0));
  // The bias [M] viewed over the channel dimensions of `type`.
  SmallVector<int64_t> bshape;
  SmallVector<AffineExpr> exprs;
  for (unsigned d : channelDims) {
    bshape.push_back(type.getDimSize(d));
    exprs.push_back(b.getAffineDimExpr(d));
  }
  auto btype = RankedTensorType::get(bshape, type.getElementType());
  Value bv = btype == bias.getType() ? bias : reshape(bias, btype);
  AffineMap map = AffineMap::get(type.getRank(), 0, exprs, b.getContext());
  return generic(
      type, {bv}, {map}, all,
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

Value ConvEmitter::groupedConv(Value x, Value w, Value bias, int64_t groups,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> dilations, bool transposed,
                               RankedTensorType type) {
  auto xt = cast<RankedTensorType>(x.getType());
  auto wt = cast<RankedTensorType>(w.getType());
  Type ft = type.getElementType();
  int64_t k = xt.getRank() - 2, g = groups;
  int64_t cg = xt.getDimSize(1) / g, mg = type.getDimSize(1) / g;
  ArrayRef<int64_t> kernel = wt.getShape().drop_front(2);
  // [N, G, C/G, D...] and [G, M/G, C/G, K...] (transposed: [G, C/G, M/G,
  // K...]).
  SmallVector<int64_t> xs = {xt.getDimSize(0), g, cg};
  xs.append(xt.getShape().begin() + 2, xt.getShape().end());
  SmallVector<int64_t> ws = {g, transposed ? cg : mg, transposed ? mg : cg};
  ws.append(kernel.begin(), kernel.end());
  SmallVector<int64_t> os = {type.getDimSize(0), g, mg};
  os.append(type.getShape().begin() + 2, type.getShape().end());
  auto x5 = reshape(x, RankedTensorType::get(xs, ft));
  auto w5 = reshape(w, RankedTensorType::get(ws, ft));
  auto ot = RankedTensorType::get(os, ft);
  Value init = convInit(ot, bias, x, {1, 2});

  // Loops: n, g, m, o_1..o_k | c, kk_1..kk_k.
  unsigned nl = 4 + 2 * k;
  auto d = [&](int64_t i) { return b.getAffineDimExpr(i); };
  SmallVector<AffineExpr> xe = {d(0), d(1), d(3 + k)}, we,
                          oe = {d(0), d(1), d(2)}, win;
  we = transposed ? SmallVector<AffineExpr>{d(1), d(3 + k), d(2)}
                  : SmallVector<AffineExpr>{d(1), d(2), d(3 + k)};
  for (int64_t i = 0; i < k; ++i) {
    xe.push_back(d(3 + i) * strides[i] + d(4 + k + i) * dilations[i]);
    we.push_back(transposed
                     ? b.getAffineConstantExpr(kernel[i] - 1) - d(4 + k + i)
                     : d(4 + k + i));
    oe.push_back(d(3 + i));
    win.push_back(d(4 + k + i));
  }
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> inputs = {x5, w5};
  SmallVector<AffineMap> maps = {AffineMap::get(nl, 0, xe, ctx),
                                 AffineMap::get(nl, 0, we, ctx)};
  // A flipped kernel index is not a loop of its own: a window operand of
  // the kernel's shape gives the kernel loops their sizes.
  if (transposed) {
    inputs.push_back(tensor::EmptyOp::create(b, loc, kernel, ft));
    maps.push_back(AffineMap::get(nl, 0, win, ctx));
  }
  maps.push_back(AffineMap::get(nl, 0, oe, ctx));
  SmallVector<utils::IteratorType> iters(3 + k, utils::IteratorType::parallel);
  iters.append(1 + k, utils::IteratorType::reduction);
  auto conv = linalg::GenericOp::create(
      b, loc, TypeRange{ot}, inputs, ValueRange{init}, maps, iters,
      [&](OpBuilder &bb, Location l, ValueRange args) {
        Value p = arith::MulFOp::create(bb, l, args[0], args[1]);
        Value sum = arith::AddFOp::create(bb, l, args.back(), p);
        linalg::YieldOp::create(bb, l, sum);
      });
  return reshape(conv.getResult(0), type);
}

Value ConvEmitter::lowerConv(ConvOp op, ConvOp::Adaptor a) {
  auto type = op.getResult().getType();
  int64_t k = type.getRank() - 2;
  ArrayRef<int64_t> pads = op.getPads();
  Value x = pad(a.getInput(), pads.take_front(k), pads.drop_front(k), 0.0);
  int64_t groups = static_cast<int64_t>(op.getGroups());
  if (groups != 1 || k > 3)
    return groupedConv(x, a.getWeight(), a.getBias(), groups, op.getStrides(),
                       op.getDilations(), false, type);
  Value init = convInit(type, a.getBias(), x, {1});
  Attribute s = b.getI64TensorAttr(op.getStrides()),
            dl = b.getI64TensorAttr(op.getDilations());
  SmallVector<Value> ins = {x, a.getWeight()};
  if (k == 1)
    return linalg::Conv1DNcwFcwOp::create(b, loc, TypeRange{type}, ins,
                                          ValueRange{init}, s, dl)
        .getResult(0);
  if (k == 2)
    return linalg::Conv2DNchwFchwOp::create(b, loc, TypeRange{type}, ins,
                                            ValueRange{init}, s, dl)
        .getResult(0);
  return linalg::Conv3DNcdhwFcdhwOp::create(b, loc, TypeRange{type}, ins,
                                            ValueRange{init}, s, dl)
      .getResult(0);
}

Value ConvEmitter::lowerConvTranspose(ConvTransposeOp op,
                                      ConvTransposeOp::Adaptor a) {
  auto type = op.getResult().getType();
  Value x = a.getInput();
  auto xt = cast<RankedTensorType>(x.getType());
  auto wt = cast<RankedTensorType>(a.getWeight().getType());
  int64_t k = xt.getRank() - 2;
  ArrayRef<int64_t> st = op.getStrides(), dil = op.getDilations(),
                    pads = op.getPads(), outPad = op.getOutputPadding();
  // Spread: input element i lands at i * stride, zeros between.
  if (llvm::any_of(st, [](int64_t s) { return s > 1; })) {
    SmallVector<int64_t> shape(xt.getShape());
    SmallVector<OpFoldResult> offsets(xt.getRank(), b.getIndexAttr(0)), sz,
        strides(2, b.getIndexAttr(1));
    for (int64_t i = 0; i < xt.getRank(); ++i)
      sz.push_back(dimOfr(x, i));
    for (int64_t i = 0; i < k; ++i) {
      shape[i + 2] = (shape[i + 2] - 1) * st[i] + 1;
      strides.push_back(b.getIndexAttr(st[i]));
    }
    auto spread = RankedTensorType::get(shape, xt.getElementType());
    Value zeros = fill(emptyAll(spread, sizes(spread, x)),
                       cFloat(b, loc, xt.getElementType(), 0));
    x = tensor::InsertSliceOp::create(b, loc, x, zeros, offsets, sz, strides);
  }
  // Pad by dilation*(K-1) - pad on each side (plus output_padding at the
  // end); a negative amount cuts instead.
  SmallVector<int64_t> lo, hi, cutLo, cutHi;
  for (int64_t i = 0; i < k; ++i) {
    int64_t full = dil[i] * (wt.getDimSize(i + 2) - 1);
    int64_t l = full - pads[i], h = full - pads[k + i] + outPad[i];
    lo.push_back(std::max<int64_t>(l, 0));
    hi.push_back(std::max<int64_t>(h, 0));
    cutLo.push_back(std::max<int64_t>(-l, 0));
    cutHi.push_back(std::max<int64_t>(-h, 0));
  }
  x = pad(x, lo, hi, 0.0);
  if (llvm::any_of(cutLo, [](int64_t c) { return c > 0; }) ||
      llvm::any_of(cutHi, [](int64_t c) { return c > 0; })) {
    auto pt = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape(pt.getShape());
    SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0)), sz,
        strides(pt.getRank(), b.getIndexAttr(1));
    sz.push_back(dimOfr(x, 0));
    sz.push_back(b.getIndexAttr(shape[1]));
    for (int64_t i = 0; i < k; ++i) {
      shape[i + 2] -= cutLo[i] + cutHi[i];
      offsets.push_back(b.getIndexAttr(cutLo[i]));
      sz.push_back(b.getIndexAttr(shape[i + 2]));
    }
    auto ct = RankedTensorType::get(shape, pt.getElementType());
    x = tensor::ExtractSliceOp::create(b, loc, ct, x, offsets, sz, strides);
  }
  SmallVector<int64_t> ones(k, 1);
  return groupedConv(x, a.getWeight(), a.getBias(),
                     static_cast<int64_t>(op.getGroups()), ones, dil, true,
                     type);
}

Value ConvEmitter::windowReduce(Value x, Value init, ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> dilations, bool isMax,
                                RankedTensorType type) {
  Type ft = type.getElementType();
  int64_t k = kernel.size();
  Value window = tensor::EmptyOp::create(b, loc, kernel, ft);
  SmallVector<Value> ins = {x, window};
  if (k <= 2) {
    Attribute s = b.getI64TensorAttr(strides),
              dl = b.getI64TensorAttr(dilations);
    Operation *pool;
    if (k == 1)
      pool = isMax
                 ? linalg::PoolingNcwMaxOp::create(b, loc, TypeRange{type}, ins,
                                                   ValueRange{init}, s, dl)
                       .getOperation()
                 : linalg::PoolingNcwSumOp::create(b, loc, TypeRange{type}, ins,
                                                   ValueRange{init}, s, dl)
                       .getOperation();
    else
      pool = isMax ? linalg::PoolingNchwMaxOp::create(
                         b, loc, TypeRange{type}, ins, ValueRange{init}, s, dl)
                         .getOperation()
                   : linalg::PoolingNchwSumOp::create(
                         b, loc, TypeRange{type}, ins, ValueRange{init}, s, dl)
                         .getOperation();
    return pool->getResult(0);
  }
  // Loops: n, c, o_1..o_k | kk_1..kk_k.
  unsigned nl = 2 + 2 * k;
  auto d = [&](int64_t i) { return b.getAffineDimExpr(i); };
  SmallVector<AffineExpr> xe = {d(0), d(1)}, we, oe = {d(0), d(1)};
  for (int64_t i = 0; i < k; ++i) {
    xe.push_back(d(2 + i) * strides[i] + d(2 + k + i) * dilations[i]);
    we.push_back(d(2 + k + i));
    oe.push_back(d(2 + i));
  }
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps = {AffineMap::get(nl, 0, xe, ctx),
                                 AffineMap::get(nl, 0, we, ctx),
                                 AffineMap::get(nl, 0, oe, ctx)};
  SmallVector<utils::IteratorType> iters(2 + k, utils::IteratorType::parallel);
  iters.append(k, utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ins, ValueRange{init}, maps, iters,
             [&](OpBuilder &bb, Location l, ValueRange args) {
               Value r =
                   isMax ? arith::MaximumFOp::create(bb, l, args[2], args[0])
                               .getResult()
                         : arith::AddFOp::create(bb, l, args[2], args[0])
                               .getResult();
               linalg::YieldOp::create(bb, l, r);
             })
      .getResult(0);
}

Value ConvEmitter::lowerPool(PoolOp op, PoolOp::Adaptor a) {
  auto type = op.getResult().getType();
  Value x = a.getInput();
  auto xt = cast<RankedTensorType>(x.getType());
  Type ft = type.getElementType();
  int64_t k = xt.getRank() - 2;
  ArrayRef<int64_t> kernel = op.getKernel(), st = op.getStrides(),
                    dil = op.getDilations(), pads = op.getPads();
  bool isMax = op.getKind() == PoolKind::max;
  // ceil_mode: the last windows may reach past the end pad; those cells
  // hold the reduction's identity and count for nothing.
  SmallVector<int64_t> lo(pads.take_front(k)), hi(pads.drop_front(k)), extra;
  for (int64_t i = 0; i < k; ++i) {
    int64_t need =
        (type.getDimSize(i + 2) - 1) * st[i] + dil[i] * (kernel[i] - 1) + 1;
    int64_t have = xt.getDimSize(i + 2) + lo[i] + hi[i];
    extra.push_back(std::max<int64_t>(need - have, 0));
  }
  SmallVector<int64_t> hiAll(hi);
  for (int64_t i = 0; i < k; ++i)
    hiAll[i] += extra[i];
  double identity = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  Value xp = pad(x, lo, hiAll, identity);
  Value init =
      fill(emptyAll(type, sizes(type, x)), cFloat(b, loc, ft, identity));
  Value r = windowReduce(xp, init, kernel, st, dil, isMax, type);
  if (isMax)
    return r;
  bool allExtraZero = llvm::all_of(extra, [](int64_t e) { return e == 0; });
  if (op.getCountIncludePad() && allExtraZero) {
    double n = 1;
    for (int64_t kk : kernel)
      n *= static_cast<double>(kk);
    Value c = cFloat(b, loc, ft, n);
    return elementwise(
        type, {r}, [&](OpBuilder &bb, Location l, ValueRange args) {
          return arith::DivFOp::create(bb, l, args[0], c).getResult();
        });
  }
  // The count of each window: the same window sum over ones.
  SmallVector<int64_t> oneShape = {1, 1};
  oneShape.append(xt.getShape().begin() + 2, xt.getShape().end());
  auto oneType = RankedTensorType::get(oneShape, ft);
  Value ones = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(oneType,
                             ArrayRef<Attribute>(b.getFloatAttr(ft, 1.0))));
  Value counted = pad(ones, lo, hi, op.getCountIncludePad() ? 1.0 : 0.0);
  counted = pad(counted, SmallVector<int64_t>(k, 0), extra, 0.0);
  SmallVector<int64_t> countShape = {1, 1};
  countShape.append(type.getShape().begin() + 2, type.getShape().end());
  auto countType = RankedTensorType::get(countShape, ft);
  Value countInit = fill(tensor::EmptyOp::create(b, loc, countShape, ft),
                         cFloat(b, loc, ft, 0.0));
  Value count =
      windowReduce(counted, countInit, kernel, st, dil, false, countType);
  return elementwise(
      type, {r, count}, [](OpBuilder &bb, Location l, ValueRange args) {
        return arith::DivFOp::create(bb, l, args[0], args[1]).getResult();
      });
}

} // namespace

void loom::lowering::populateConvPatterns(TypeConverter &converter,
                                          RewritePatternSet &patterns,
                                          const LoweringOptions &opts) {
  patterns.add<EmitterPattern<ConvOp, ConvEmitter, &ConvEmitter::lowerConv>,
               EmitterPattern<ConvTransposeOp, ConvEmitter,
                              &ConvEmitter::lowerConvTranspose>,
               EmitterPattern<PoolOp, ConvEmitter, &ConvEmitter::lowerPool>>(
      converter, patterns.getContext(), opts);
}
