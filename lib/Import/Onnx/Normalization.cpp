//===- Normalization.cpp - ONNX reductions, softmax and norms to loom -----===//
//
// ReduceMean/Sum/Max/Min/Prod (axes as attribute or input), Softmax,
// LayerNormalization and SimplifiedLayerNormalization (-> loom.rms_norm).
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Onnx/OnnxImporter.h"

namespace loom::onnx_import {
namespace {

bool emitSoftmax(EmitContext &c) {
  Value x = c.input(0);
  if (!x)
    return false;
  int64_t axis = attrInt(c.node, "axis", -1);
  return c.result(
      c.dt(0), c.shape(0),
      SoftmaxOp::create(c.b(), c.loc(), x, c.b().getI64IntegerAttr(axis)));
}

template <ReduceKind kind> bool emitReduce(EmitContext &c) {
  Value x = c.input(0);
  if (!x)
    return false;
  int64_t r = c.rank(0);
  SmallVector<int64_t> axes;
  if (c.hasIn(1)) {
    if (!c.im.constInts(c.in[1], axes, "axes"))
      return false;
  } else if (auto a = attrInts(c.node, "axes")) {
    axes = *a;
  }
  if (axes.empty()) {
    if (attrInt(c.node, "noop_with_empty_axes", 0))
      return c.result(c.dt(0), c.shape(0), x);
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  }
  for (int64_t &a : axes) {
    // An axes input is not seen by importNode's attribute checks.
    if (!c.axisIn(a, r, "axis"))
      return false;
  }
  llvm::sort(axes);
  bool keep = attrInt(c.node, "keepdims", 1);
  SmallVector<Dim> s;
  for (int64_t i = 0; i < r; ++i) {
    if (!llvm::is_contained(axes, i))
      s.push_back(c.shape(0)[i]);
    else if (keep)
      s.push_back(Dim::of(1));
  }
  return c.result(c.dt(0), s,
                  ReduceOp::create(c.b(), c.loc(), c.typeOf(c.dt(0), s), kind,
                                   x, axes, keep));
}

/// LayerNormalization and SimplifiedLayerNormalization. Loom's norms
/// compute in f32 (ONNX's default `stash_type` = 1); another stash type is
/// refused.
bool emitNorm(EmitContext &c) {
  Value x = c.input(0);
  if (!x)
    return false;
  const std::string &op = c.op();
  for (int i = 1; i < c.node.output_size(); ++i)
    if (!c.node.output(i).empty())
      return c.fail(op + " outputs Mean/InvStdDev, which are not supported");
  int64_t stash = attrInt(c.node, "stash_type", 1);
  if (stash != 1)
    return c.fail(op + " stash_type=" + Twine(stash) +
                  " is not supported (Loom computes norms in f32, "
                  "stash_type=1)");
  int64_t r = c.rank(0);
  int64_t axis = attrInt(c.node, "axis", -1);
  if (!c.axisIn(axis, r, op + " axis"))
    return false;
  float eps = attrFloat(c.node, "epsilon", 1e-5f);
  Value scale = c.hasIn(1) ? c.input(1) : Value();
  Value bias = c.hasIn(2) ? c.input(2) : Value();
  OpBuilder &b = c.b();
  if (op == "SimplifiedLayerNormalization") {
    if (axis != r - 1)
      return c.fail("SimplifiedLayerNormalization over more than the last "
                    "axis is not supported");
    return c.result(c.dt(0), c.shape(0),
                    RmsNormOp::create(b, c.loc(), x.getType(), x, scale,
                                      b.getF32FloatAttr(eps)));
  }
  return c.result(c.dt(0), c.shape(0),
                  LayerNormOp::create(b, c.loc(), x.getType(), x, scale, bias,
                                      b.getI64IntegerAttr(axis - r),
                                      b.getF32FloatAttr(eps)));
}

} // namespace

void registerNormalizationOps(OnnxOpTable &t) {
  t["Softmax"] = {emitSoftmax, {"axis"}, {}, 1};
  auto reduce = [&](StringRef name, Emitter e) {
    t[name] = {e, {"axes", "keepdims", "noop_with_empty_axes"}, {}, 1};
  };
  reduce("ReduceMean", emitReduce<ReduceKind::mean>);
  reduce("ReduceSum", emitReduce<ReduceKind::sum>);
  reduce("ReduceMax", emitReduce<ReduceKind::max>);
  reduce("ReduceMin", emitReduce<ReduceKind::min>);
  reduce("ReduceProd", emitReduce<ReduceKind::prod>);
  t["LayerNormalization"] = {
      emitNorm, {"axis", "epsilon", "stash_type"}, {}, 2};
  t["SimplifiedLayerNormalization"] = {
      emitNorm, {"axis", "epsilon", "stash_type"}, {}, 2};
}

} // namespace loom::onnx_import
