//===- Activation.cpp - ONNX activations decomposed into loom ops ---------===//
//
// Activations that ONNX has as ops of their own and Loom has not: each is
// written at import time with existing elementwise loom ops (compare,
// select, arithmetic, exp/log, reductions), so no new lowering is needed.
// Clip, LeakyRelu, PRelu, Elu, Selu, Celu, ThresholdedRelu, HardSigmoid,
// HardSwish, Softplus, Softsign, Sign, Shrink, LogSoftmax.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Onnx/OnnxImporter.h"

namespace loom::onnx_import {
namespace {

bool isFloatDt(int dt) {
  return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16 || dt == DT_F64;
}

/// Builds `y = f(x)` for one float tensor `x` of type `t`.
struct Builder {
  EmitContext &c;
  RankedTensorType t;

  OpBuilder &b() { return c.b(); }
  Location loc() { return c.loc(); }
  Value k(double v) {
    Type et = t.getElementType();
    Attribute a = isa<FloatType>(et) ? Attribute(b().getFloatAttr(et, v))
                                     : Attribute(b().getIntegerAttr(et, v));
    return ConstantOp::create(
        b(), loc(), DenseElementsAttr::get(RankedTensorType::get({}, et), a));
  }
  Value add(Value l, Value r) { return AddOp::create(b(), loc(), t, l, r); }
  Value sub(Value l, Value r) { return SubOp::create(b(), loc(), t, l, r); }
  Value mul(Value l, Value r) { return MulOp::create(b(), loc(), t, l, r); }
  Value div(Value l, Value r) { return DivOp::create(b(), loc(), t, l, r); }
  Value max(Value l, Value r) { return MaxOp::create(b(), loc(), t, l, r); }
  Value min(Value l, Value r) { return MinOp::create(b(), loc(), t, l, r); }
  Value cmp(CompareKind kind, Value l, Value r) {
    auto bt = RankedTensorType::get(t.getShape(), b().getI1Type());
    return CompareOp::create(b(), loc(), bt, kind, l, r);
  }
  Value select(Value cnd, Value x, Value y) {
    return SelectOp::create(b(), loc(), t, cnd, x, y);
  }
  Value exp(Value x) { return ExpOp::create(b(), loc(), x); }
  Value log(Value x) { return LogOp::create(b(), loc(), x); }
  Value abs(Value x) { return AbsOp::create(b(), loc(), x); }
};

/// The input as a float tensor, or a refusal naming the op and the type.
Value floatInput(EmitContext &c) {
  if (!c.hasIn(0))
    return c.input(0);
  if (!isFloatDt(c.dt(0))) {
    c.fail(c.op() + " of element type " + Twine(c.dt(0)) +
           " (ONNX TensorProto code) is not supported (float types only)");
    return {};
  }
  return c.input(0);
}

/// The input of an op that compares with signed values (Sign, Shrink,
/// Clip): bool and uint8 (compared as signed i8 by loom) are refused.
Value signedInput(EmitContext &c) {
  if (c.hasIn(0) && (c.dt(0) == DT_BOOL || c.dt(0) == DT_U8)) {
    c.fail(c.op() + " of " + (c.dt(0) == DT_BOOL ? "bool" : "uint8") +
           " tensors is not supported");
    return {};
  }
  return c.input(0);
}

using Body = Value (*)(Builder &, Value x, const onnx::NodeProto &n);

template <Body body> bool emitActivation(EmitContext &c) {
  Value x = floatInput(c);
  if (!x)
    return false;
  Builder f{c, cast<RankedTensorType>(x.getType())};
  return c.result(c.dt(0), c.shape(0), body(f, x, c.node));
}

// x < 0 ? alpha * x : x
Value leakyRelu(Builder &f, Value x, const onnx::NodeProto &n) {
  float alpha = attrFloat(n, "alpha", 0.01f);
  return f.select(f.cmp(CompareKind::lt, x, f.k(0)), f.mul(x, f.k(alpha)), x);
}

// x < 0 ? alpha * (exp(x) - 1) : x
Value elu(Builder &f, Value x, const onnx::NodeProto &n) {
  float alpha = attrFloat(n, "alpha", 1.0f);
  Value neg = f.mul(f.k(alpha), f.sub(f.exp(x), f.k(1)));
  return f.select(f.cmp(CompareKind::lt, x, f.k(0)), neg, x);
}

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
Value celu(Builder &f, Value x, const onnx::NodeProto &n) {
  float alpha = attrFloat(n, "alpha", 1.0f);
  Value e = f.mul(f.k(alpha), f.sub(f.exp(f.div(x, f.k(alpha))), f.k(1)));
  return f.add(f.max(x, f.k(0)), f.min(e, f.k(0)));
}

// x <= 0 ? gamma * (alpha * exp(x) - alpha) : gamma * x
Value selu(Builder &f, Value x, const onnx::NodeProto &n) {
  float alpha = attrFloat(n, "alpha", 1.67326319217681884765625f);
  float gamma = attrFloat(n, "gamma", 1.05070102214813232421875f);
  Value neg = f.sub(f.mul(f.k(alpha), f.exp(x)), f.k(alpha));
  return f.mul(f.k(gamma), f.select(f.cmp(CompareKind::le, x, f.k(0)), neg, x));
}

// x > alpha ? x : 0
Value thresholdedRelu(Builder &f, Value x, const onnx::NodeProto &n) {
  float alpha = attrFloat(n, "alpha", 1.0f);
  return f.select(f.cmp(CompareKind::gt, x, f.k(alpha)), x, f.k(0));
}

// max(0, min(1, alpha * x + beta))
Value hardSigmoid(Builder &f, Value x, const onnx::NodeProto &n) {
  float alpha = attrFloat(n, "alpha", 0.2f);
  float beta = attrFloat(n, "beta", 0.5f);
  Value y = f.add(f.mul(x, f.k(alpha)), f.k(beta));
  return f.max(f.min(y, f.k(1)), f.k(0));
}

// x * max(0, min(1, x / 6 + 1 / 2))
Value hardSwish(Builder &f, Value x, const onnx::NodeProto &) {
  Value y = f.add(f.mul(x, f.k(1.0 / 6)), f.k(0.5));
  return f.mul(x, f.max(f.min(y, f.k(1)), f.k(0)));
}

// log(1 + exp(x)), as max(x, 0) + log(1 + exp(-|x|)) so that a large x
// does not overflow.
Value softplus(Builder &f, Value x, const onnx::NodeProto &) {
  Value e = f.exp(f.sub(f.k(0), f.abs(x)));
  return f.add(f.max(x, f.k(0)), f.log(f.add(e, f.k(1))));
}

// x / (1 + |x|)
Value softsign(Builder &f, Value x, const onnx::NodeProto &) {
  return f.div(x, f.add(f.abs(x), f.k(1)));
}

/// Sign: 1, -1, or x itself (0, -0 and NaN stay as numpy has them). Any
/// numeric type.
bool emitSign(EmitContext &c) {
  Value x = signedInput(c);
  if (!x)
    return false;
  Builder f{c, cast<RankedTensorType>(x.getType())};
  Value y = f.select(f.cmp(CompareKind::lt, x, f.k(0)), f.k(-1), x);
  return c.result(c.dt(0), c.shape(0),
                  f.select(f.cmp(CompareKind::gt, x, f.k(0)), f.k(1), y));
}

/// Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0.
bool emitShrink(EmitContext &c) {
  Value x = signedInput(c);
  if (!x)
    return false;
  float lambd = attrFloat(c.node, "lambd", 0.5f);
  float bias = attrFloat(c.node, "bias", 0.0f);
  Builder f{c, cast<RankedTensorType>(x.getType())};
  if (!isFloatDt(c.dt(0)) &&
      (lambd != std::trunc(lambd) || bias != std::trunc(bias)))
    return c.fail("Shrink of an integer tensor with a fractional lambd or "
                  "bias is not supported");
  Value y = f.select(f.cmp(CompareKind::gt, x, f.k(lambd)), f.sub(x, f.k(bias)),
                     f.k(0));
  return c.result(
      c.dt(0), c.shape(0),
      f.select(f.cmp(CompareKind::lt, x, f.k(-lambd)), f.add(x, f.k(bias)), y));
}

/// PRelu: x < 0 ? slope * x : x, with `slope` broadcast to x
/// (unidirectional: the result has x's shape).
bool emitPRelu(EmitContext &c) {
  Value x = floatInput(c), slope = c.input(1);
  if (!x || !slope)
    return false;
  // Unidirectional numpy broadcasting (opset 7 and later).
  const SmallVector<Dim> &xs = c.shape(0), &ss = c.shape(1);
  bool ok = ss.size() <= xs.size();
  for (size_t i = 0; ok && i < ss.size(); ++i) {
    const Dim &d = ss[ss.size() - 1 - i];
    ok = (d.isConst() && d.c == 1) || d == xs[xs.size() - 1 - i];
  }
  if (!ok)
    return c.fail("a PRelu slope that does not broadcast to the input's "
                  "shape with numpy rules is not supported (opset 6's "
                  "per-channel slope of shape [C] is reshaped to [C, 1, ..., "
                  "1] in opset 7 and later: export at opset 7 or newer)");
  Builder f{c, cast<RankedTensorType>(x.getType())};
  return c.result(
      c.dt(0), c.shape(0),
      f.select(f.cmp(CompareKind::lt, x, f.k(0)), f.mul(x, slope), x));
}

/// Clip(x, min, max) (opset 11+: bounds as optional inputs; the version
/// converter moves the attributes of older opsets there):
/// min(max(x, lo), hi).
bool emitClip(EmitContext &c) {
  Value x = signedInput(c);
  if (!x)
    return false;
  Builder f{c, cast<RankedTensorType>(x.getType())};
  for (int i = 1; i <= 2; ++i) {
    if (!c.hasIn(i))
      continue;
    if (c.rank(i) != 0 &&
        !(c.rank(i) == 1 && c.shape(i)[0].isConst() && c.shape(i)[0].c == 1))
      return c.fail("Clip " + Twine(i == 1 ? "min" : "max") +
                    " must be a scalar");
    Value bound = c.input(i);
    if (!bound)
      return false;
    if (c.rank(i) == 1)
      bound = c.im.reshapeTo(*c.in[i], {});
    x = i == 1 ? f.max(x, bound) : f.min(x, bound);
  }
  return c.result(c.dt(0), c.shape(0), x);
}

/// LogSoftmax: x - max - log(sum(exp(x - max))) along `axis`.
bool emitLogSoftmax(EmitContext &c) {
  Value x = floatInput(c);
  if (!x)
    return false;
  int64_t r = c.rank(0);
  int64_t axis = attrInt(c.node, "axis", -1);
  if (!c.axisIn(axis, r, "axis"))
    return false;
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> kept(t.getShape());
  kept[axis] = 1;
  auto kt = RankedTensorType::get(kept, t.getElementType());
  Builder f{c, t};
  OpBuilder &b = c.b();
  SmallVector<int64_t> axes{axis};
  Value mx = ReduceOp::create(b, c.loc(), kt, ReduceKind::max, x, axes, true);
  Value d = f.sub(x, mx);
  Value s =
      ReduceOp::create(b, c.loc(), kt, ReduceKind::sum, f.exp(d), axes, true);
  return c.result(c.dt(0), c.shape(0), f.sub(d, LogOp::create(b, c.loc(), s)));
}

/// BatchNormalization in inference (training_mode = 0; `momentum` only
/// changes training): (x - mean) * (scale / sqrt(var + epsilon)) + B, the
/// [C] parameters viewed as [C, 1, ..., 1] against x's axis 1.
bool emitBatchNorm(EmitContext &c) {
  if (attrInt(c.node, "training_mode", 0))
    return c.fail("BatchNormalization training_mode=1 is not supported "
                  "(inference only)");
  for (int i = 1; i < c.node.output_size(); ++i)
    if (!c.node.output(i).empty())
      return c.fail("BatchNormalization running mean/var outputs are not "
                    "supported (inference only)");
  Value x = floatInput(c);
  if (!x)
    return false;
  int64_t r = c.rank(0);
  if (r < 2)
    return c.fail("BatchNormalization of a rank-" + Twine(r) +
                  " input is not supported (rank 2 or more)");
  SmallVector<Dim> ps{c.shape(0)[1]};
  for (int64_t i = 2; i < r; ++i)
    ps.push_back(Dim::of(1));
  Value p[4];
  for (int i = 1; i <= 4; ++i) {
    if (c.rank(i) != 1 || c.shape(i)[0] != c.shape(0)[1])
      return c.fail("BatchNormalization input " + Twine(i) +
                    " must have shape [C] (C = the input's dimension 1)");
    if (c.dt(i) != c.dt(0))
      return c.fail("BatchNormalization input " + Twine(i) +
                    " has another "
                    "element type than X, which is not supported");
    if (!c.input(i))
      return false;
    p[i - 1] = c.im.reshapeTo(*c.in[i], ps);
  }
  float eps = attrFloat(c.node, "epsilon", 1e-5f);
  auto xt = cast<RankedTensorType>(x.getType());
  Builder pf{c, c.typeOf(c.dt(0), ps)}, f{c, xt};
  Value k = pf.mul(
      p[0], ReciprocalOp::create(
                c.b(), c.loc(),
                SqrtOp::create(c.b(), c.loc(), pf.add(p[3], pf.k(eps)))));
  return c.result(c.dt(0), c.shape(0), f.add(f.mul(f.sub(x, p[2]), k), p[1]));
}

/// InstanceNormalization: per (n, c), over the spatial axes 2.. :
/// (x - mean) / sqrt(var + epsilon) * scale + B (biased variance), the [C]
/// parameters viewed as [C, 1, ..., 1].
bool emitInstanceNorm(EmitContext &c) {
  Value x = floatInput(c);
  if (!x)
    return false;
  int64_t r = c.rank(0);
  if (r < 3)
    return c.fail("InstanceNormalization of a rank-" + Twine(r) +
                  " input is not supported (rank 3 or more)");
  SmallVector<Dim> ps{c.shape(0)[1]};
  for (int64_t i = 2; i < r; ++i)
    ps.push_back(Dim::of(1));
  Value p[2];
  for (int i = 1; i <= 2; ++i) {
    if (c.rank(i) != 1 || c.shape(i)[0] != c.shape(0)[1] || c.dt(i) != c.dt(0))
      return c.fail("InstanceNormalization input " + Twine(i) +
                    " must have shape [C] (C = the input's dimension 1) and "
                    "the input's element type");
    if (!c.input(i))
      return false;
    p[i - 1] = c.im.reshapeTo(*c.in[i], ps);
  }
  float eps = attrFloat(c.node, "epsilon", 1e-5f);
  auto xt = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> kept(xt.getShape()), axes;
  for (int64_t i = 2; i < r; ++i) {
    kept[i] = 1;
    axes.push_back(i);
  }
  auto kt = RankedTensorType::get(kept, xt.getElementType());
  Builder f{c, xt}, kf{c, kt};
  OpBuilder &b = c.b();
  Value mean =
      ReduceOp::create(b, c.loc(), kt, ReduceKind::mean, x, axes, true);
  Value d = f.sub(x, mean);
  Value var = ReduceOp::create(b, c.loc(), kt, ReduceKind::mean, f.mul(d, d),
                               axes, true);
  Value inv = ReciprocalOp::create(
      b, c.loc(), SqrtOp::create(b, c.loc(), kf.add(var, kf.k(eps))));
  return c.result(c.dt(0), c.shape(0), f.add(f.mul(f.mul(d, inv), p[0]), p[1]));
}

} // namespace

void registerActivationOps(OnnxOpTable &t) {
  t["InstanceNormalization"] = {emitInstanceNorm, {"epsilon"}, {}, 3};
  t["BatchNormalization"] = {
      emitBatchNorm, {"epsilon", "training_mode"}, {"momentum"}, 5};
  t["LeakyRelu"] = {emitActivation<leakyRelu>, {"alpha"}, {}, 1};
  t["Elu"] = {emitActivation<elu>, {"alpha"}, {}, 1};
  t["Celu"] = {emitActivation<celu>, {"alpha"}, {}, 1};
  t["Selu"] = {emitActivation<selu>, {"alpha", "gamma"}, {}, 1};
  t["ThresholdedRelu"] = {emitActivation<thresholdedRelu>, {"alpha"}, {}, 1};
  t["HardSigmoid"] = {emitActivation<hardSigmoid>, {"alpha", "beta"}, {}, 1};
  t["HardSwish"] = {emitActivation<hardSwish>, {}, {}, 1};
  t["Softplus"] = {emitActivation<softplus>, {}, {}, 1};
  t["Softsign"] = {emitActivation<softsign>, {}, {}, 1};
  t["Sign"] = {emitSign, {}, {}, 1};
  t["Shrink"] = {emitShrink, {"bias", "lambd"}, {}, 1};
  t["PRelu"] = {emitPRelu, {}, {}, 2};
  t["Clip"] = {emitClip, {}, {}, 1};
  t["LogSoftmax"] = {emitLogSoftmax, {"axis"}, {}, 1};
}

} // namespace loom::onnx_import
