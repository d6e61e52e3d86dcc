//===- Lrn.cpp - ONNX LRN decomposed into loom ops
//-------------------------===//
//
// LRN (local response normalization across channels, AlexNet / ZFNet /
// GoogLeNet) is y = x / (bias + alpha/size * sum_{window} x^2)^beta, the
// window of `size` channels around each channel c being
// [c - floor((size-1)/2), c + ceil((size-1)/2)], cut at the ends. Loom has no
// op for it and needs none: x^2 viewed as [N, 1, C, prod(spatial)] is
// average-pooled over the channel axis with a [size, 1] kernel, zero pads
// and count_include_pad (so the average is the window sum / size, also at
// the edges), which reuses the pool lowering; the rest is elementwise.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Onnx/OnnxImporter.h"

namespace loom::onnx_import {
namespace {

bool emitLrn(EmitContext &c) {
  if (!c.hasIn(0))
    return c.input(0) != nullptr;
  if (!isFloatDT(c.dt(0)))
    return c.fail("LRN of a non-float input is not supported");
  int64_t r = c.rank(0);
  if (r < 2)
    return c.fail("LRN needs an input [N, C, spatial...] of rank >= 2");
  const auto *sizeAttr = attr(c.node, "size");
  if (!sizeAttr)
    return c.fail("LRN needs its 'size' attribute (required by ONNX)");
  int64_t size = sizeAttr->i();
  const SmallVector<Dim> &xs = c.shape(0);
  if (!xs[1].isConst())
    return c.fail("LRN with a dynamic channel count is not supported; export "
                  "the model with a static channel dimension");
  int64_t channels = xs[1].c;
  if (size < 1 || size > 2 * channels + 1)
    return c.fail("LRN size " + Twine(size) + " must be in [1, " +
                  Twine(2 * channels + 1) + "] for " + Twine(channels) +
                  " channels");
  // The spatial dims flatten into one, which must be static (as for pools).
  int64_t spatial = 1;
  for (int64_t d = 2; d < r; ++d) {
    if (!xs[d].isConst())
      return c.fail("LRN with a dynamic spatial dimension " + Twine(d) +
                    " is not supported; export the model with static "
                    "spatial sizes");
    if (__builtin_mul_overflow(spatial, xs[d].c, &spatial) || spatial > kMaxDim)
      return c.fail("LRN spatial size overflows");
  }
  float alpha = attrFloat(c.node, "alpha", 1e-4f);
  float beta = attrFloat(c.node, "beta", 0.75f);
  float bias = attrFloat(c.node, "bias", 1.0f);

  Value x = c.input(0);
  if (!x)
    return false;
  OpBuilder &b = c.b();
  Location loc = c.loc();
  int dt = c.dt(0);
  RankedTensorType t = c.typeOf(dt, xs);
  Type et = t.getElementType();
  auto scalar = [&](double v) -> Value {
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get({}, et),
                               b.getFloatAttr(et, v)));
  };

  // The window average of x^2 over the channels, on a [N, 1, C, P] view.
  Value sq = MulOp::create(b, loc, t, x, x);
  SmallVector<Dim> view = {xs[0], Dim::of(1), Dim::of(channels),
                           Dim::of(spatial)};
  RankedTensorType vt = c.typeOf(dt, view);
  Value sqView = ReshapeOp::create(b, loc, vt, sq);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  Value avg =
      PoolOp::create(b, loc, vt, PoolKind::avg, sqView,
                     ArrayRef<int64_t>{size, 1}, ArrayRef<int64_t>{1, 1},
                     ArrayRef<int64_t>{1, 1}, ArrayRef<int64_t>{lo, 0, hi, 0},
                     /*ceil_mode=*/false, /*count_include_pad=*/true);
  Value sum = ReshapeOp::create(b, loc, t, avg);

  // y = x / (bias + alpha * avg)^beta; avg = sum / size.
  Value scale = AddOp::create(b, loc, t, scalar(bias),
                              MulOp::create(b, loc, t, scalar(alpha), sum));
  Value den = PowOp::create(b, loc, t, scale, scalar(beta));
  return c.result(dt, xs, DivOp::create(b, loc, t, x, den));
}

} // namespace

void registerLrnOps(OnnxOpTable &t) {
  t["LRN"] = {emitLrn, {"alpha", "beta", "bias", "size"}, {}, 1};
}

} // namespace loom::onnx_import
