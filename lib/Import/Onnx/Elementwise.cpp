//===- Elementwise.cpp - ONNX elementwise ops to loom ---------------------===//
//
// Binary arithmetic and logic (with numpy broadcasting), comparisons,
// unary math, Where, Cast, Gelu, Identity and Dropout (inference).
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Onnx/OnnxImporter.h"

namespace loom::onnx_import {
namespace {

/// The broadcast shape of inputs 0 and 1.
bool broadcast2(EmitContext &c, SmallVector<Dim> &s) {
  return c.im.broadcast(c.shape(0), c.shape(1), s);
}

template <typename OpTy> bool emitBinary(EmitContext &c) {
  Value l = c.input(0), r = c.input(1);
  SmallVector<Dim> s;
  if (!l || !r || !broadcast2(c, s))
    return false;
  Type rt = c.typeOf(c.dt(0), s);
  return c.result(c.dt(0), s, OpTy::create(c.b(), c.loc(), rt, l, r));
}

/// Sum, Max, Min (variadic, numpy broadcasting) and Mean (their sum
/// divided by the count, float only): a chain of binary ops.
template <typename OpTy, bool mean = false> bool emitVariadic(EmitContext &c) {
  int n = c.node.input_size();
  if (mean && !(c.dt(0) == DT_F32 || c.dt(0) == DT_F16 || c.dt(0) == DT_BF16 ||
                c.dt(0) == DT_F64))
    return c.fail("Mean of element type " + Twine(c.dt(0)) +
                  " (ONNX TensorProto code) is not supported (float only)");
  Value acc = c.input(0);
  if (!acc)
    return false;
  SmallVector<Dim> s = c.shape(0);
  for (int i = 1; i < n; ++i) {
    Value r = c.input(i);
    if (!r)
      return false;
    if (c.dt(i) != c.dt(0))
      return c.fail("inputs 0 and " + Twine(i) +
                    " have different element "
                    "types");
    SmallVector<Dim> t;
    if (!c.im.broadcast(s, c.shape(i), t))
      return false;
    s = std::move(t);
    acc = OpTy::create(c.b(), c.loc(), c.typeOf(c.dt(0), s), acc, r);
  }
  if (mean && n > 1) {
    Type et = c.typeOf(c.dt(0), s).getElementType();
    Value k =
        ConstantOp::create(c.b(), c.loc(),
                           DenseElementsAttr::get(RankedTensorType::get({}, et),
                                                  c.b().getFloatAttr(et, n)));
    acc = DivOp::create(c.b(), c.loc(), c.typeOf(c.dt(0), s), acc, k);
  }
  return c.result(c.dt(0), s, acc);
}

/// Pow's exponent may have another element type: cast to the base's.
bool emitPow(EmitContext &c) {
  Value l = c.input(0), r = c.input(1);
  SmallVector<Dim> s;
  if (!l || !r || !broadcast2(c, s))
    return false;
  if (c.dt(1) != c.dt(0))
    r = CastOp::create(c.b(), c.loc(), c.typeOf(c.dt(0), c.shape(1)), r);
  Type rt = c.typeOf(c.dt(0), s);
  return c.result(c.dt(0), s, PowOp::create(c.b(), c.loc(), rt, l, r));
}

template <CompareKind kind> bool emitCompare(EmitContext &c) {
  Value l = c.input(0), r = c.input(1);
  SmallVector<Dim> s;
  if (!l || !r || !broadcast2(c, s))
    return false;
  return c.result(
      DT_BOOL, s,
      CompareOp::create(c.b(), c.loc(), c.typeOf(DT_BOOL, s), kind, l, r));
}

template <typename OpTy> bool emitUnary(EmitContext &c) {
  Value x = c.input(0);
  if (!x)
    return false;
  return c.result(c.dt(0), c.shape(0), OpTy::create(c.b(), c.loc(), x));
}

bool emitIdentity(EmitContext &c) {
  Value x = c.input(0);
  return c.result(c.dt(0), c.shape(0), x);
}

/// Whether a node of the graph reads `name` or the graph returns it.
bool isRead(const onnx::GraphProto &g, const std::string &name) {
  for (const auto &n : g.node())
    if (llvm::is_contained(n.input(), name))
      return true;
  return llvm::any_of(g.output(),
                      [&](const auto &o) { return o.name() == name; });
}

/// Dropout's mask at inference: every element kept (all true, x's shape).
/// Nothing reads it: a placeholder that is never materialised. A graph
/// output: a broadcast true, for a static shape only.
bool emitDropoutMask(EmitContext &c) {
  const std::string &mask = c.node.output(1);
  if (!isRead(c.im.model.graph(), mask)) {
    Val unused;
    unused.dt = DT_BOOL;
    unused.shape = c.shape(0);
    unused.present = false;
    c.out.push_back(std::move(unused));
    return true;
  }
  for (const Dim &d : c.shape(0))
    if (!d.isConst())
      return c.fail("Dropout's mask output '" + mask +
                    "' of a dynamic shape is not supported (inference "
                    "only); use only the output");
  OpBuilder &b = c.b();
  Value t = ConstantOp::create(
      b, c.loc(),
      DenseElementsAttr::get(RankedTensorType::get({}, b.getI1Type()),
                             b.getBoolAttr(true)));
  return c.result(
      DT_BOOL, c.shape(0),
      BroadcastOp::create(b, c.loc(), c.typeOf(DT_BOOL, c.shape(0)), t));
}

/// Dropout at inference is the identity; training_mode must be absent or a
/// constant false. Its mask (output 1) is all true.
bool emitDropout(EmitContext &c) {
  if (c.hasIn(2)) {
    SmallVector<int64_t> mode;
    if (!c.im.constInts(c.in[2], mode, "training_mode"))
      return false;
    if (mode.size() != 1 || mode[0] != 0)
      return c.fail("Dropout with training_mode true is not supported "
                    "(inference only)");
  }
  if (!emitIdentity(c))
    return false;
  if (c.node.output_size() > 1 && !c.node.output(1).empty())
    return emitDropoutMask(c);
  return true;
}

/// Gelu (opset 20): `approximate` is "none" or "tanh"; anything else is
/// refused (it would silently pick the erf form).
bool emitGelu(EmitContext &c) {
  Value x = c.input(0);
  if (!x)
    return false;
  GeluApproximation approx = GeluApproximation::none;
  if (const auto *a = attr(c.node, "approximate")) {
    if (a->s() == "tanh")
      approx = GeluApproximation::tanh;
    else if (a->s() != "none")
      return c.fail("Gelu approximate='" + a->s() +
                    "' is not supported (none or tanh)");
  }
  return c.result(c.dt(0), c.shape(0),
                  GeluOp::create(c.b(), c.loc(), x.getType(), x, approx));
}

bool emitWhere(EmitContext &c) {
  Value cnd = c.input(0), x = c.input(1), y = c.input(2);
  if (!cnd || !x || !y)
    return false;
  SmallVector<Dim> s1, s;
  if (!c.im.broadcast(c.shape(0), c.shape(1), s1) ||
      !c.im.broadcast(s1, c.shape(2), s))
    return false;
  return c.result(
      c.dt(1), s,
      SelectOp::create(c.b(), c.loc(), c.typeOf(c.dt(1), s), cnd, x, y));
}

bool emitCast(EmitContext &c) {
  Value x = c.input(0);
  if (!x)
    return false;
  int to = attrInt(c.node, "to", DT_F32);
  if (!c.im.elemType(to))
    return c.fail("Cast to unsupported element type " + Twine(to));
  if (to == c.dt(0))
    return c.result(to, c.shape(0), x);
  return c.result(to, c.shape(0),
                  CastOp::create(c.b(), c.loc(), c.typeOf(to, c.shape(0)), x));
}

} // namespace

void registerElementwiseOps(OnnxOpTable &t) {
  // Binary ops need both inputs; Max, Min, Sum and Mean are variadic.
  static const std::pair<StringRef, Emitter> binaries[] = {
      {"Add", emitBinary<AddOp>},
      {"Sub", emitBinary<SubOp>},
      {"Mul", emitBinary<MulOp>},
      {"Div", emitBinary<DivOp>},
      {"Pow", emitPow},
      {"And", emitBinary<AndOp>},
      {"Or", emitBinary<OrOp>},
      {"Equal", emitCompare<CompareKind::eq>},
      {"Less", emitCompare<CompareKind::lt>},
      {"Greater", emitCompare<CompareKind::gt>},
      {"LessOrEqual", emitCompare<CompareKind::le>},
      {"GreaterOrEqual", emitCompare<CompareKind::ge>}};
  for (auto [name, emit] : binaries)
    t[name] = {emit, {}, {}, 2};
  t["Max"] = {emitVariadic<MaxOp>, {}, {}, 1};
  t["Min"] = {emitVariadic<MinOp>, {}, {}, 1};
  t["Sum"] = {emitVariadic<AddOp>, {}, {}, 1};
  t["Mean"] = {emitVariadic<AddOp, true>, {}, {}, 1};
  static const std::pair<StringRef, Emitter> unaries[] = {
      {"Neg", emitUnary<NegOp>},   {"Abs", emitUnary<AbsOp>},
      {"Exp", emitUnary<ExpOp>},   {"Log", emitUnary<LogOp>},
      {"Sqrt", emitUnary<SqrtOp>}, {"Reciprocal", emitUnary<ReciprocalOp>},
      {"Sin", emitUnary<SinOp>},   {"Cos", emitUnary<CosOp>},
      {"Tanh", emitUnary<TanhOp>}, {"Sigmoid", emitUnary<SigmoidOp>},
      {"Relu", emitUnary<ReluOp>}, {"Erf", emitUnary<ErfOp>},
      {"Not", emitUnary<NotOp>},   {"Identity", emitIdentity}};
  for (auto [name, emit] : unaries)
    t[name] = {emit, {}, {}, 1};
  t["Gelu"] = {emitGelu, {"approximate"}, {}, 1};
  // `seed` only drives the random mask of training mode, which is refused.
  t["Dropout"] = {emitDropout, {}, {"seed"}, 1};
  t["Where"] = {emitWhere, {}, {}, 3};
  // `saturate` (opset 19) only applies to float8 targets, which Cast
  // refuses.
  t["Cast"] = {emitCast, {"to"}, {"saturate"}, 1};
}

} // namespace loom::onnx_import
