//===- Matmul.cpp - ONNX MatMul and Gemm to loom --------------------------===//
//
// MatMul with numpy batch broadcasting; Gemm as a matmul with transposed
// operands, then alpha * AB + beta * C.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Onnx/OnnxImporter.h"

namespace loom::onnx_import {
namespace {

bool emitMatmul(EmitContext &c) {
  Value a = c.input(0), w = c.input(1);
  if (!a || !w)
    return false;
  bool gemm = c.op() == "Gemm";
  bool ta = gemm && attrInt(c.node, "transA", 0);
  bool tb = gemm && attrInt(c.node, "transB", 0);
  SmallVector<Dim> as = c.shape(0), bs = c.shape(1);
  if (as.size() < 2 || bs.size() < 2)
    return c.fail("MatMul with a rank-1 operand is not supported; reshape "
                  "it to rank 2 in the model");
  SmallVector<Dim> s;
  if (!c.im.broadcast(ArrayRef<Dim>(as).drop_back(2),
                      ArrayRef<Dim>(bs).drop_back(2), s))
    return false;
  s.push_back(ta ? as.back() : as[as.size() - 2]);
  s.push_back(tb ? bs[bs.size() - 2] : bs.back());
  RankedTensorType rt = c.typeOf(c.dt(0), s);
  OpBuilder &b = c.b();
  Value v = MatmulOp::create(b, c.loc(), rt, a, w, ta, tb);
  if (!gemm)
    return c.result(c.dt(0), s, v);
  float alpha = attrFloat(c.node, "alpha", 1);
  float beta = attrFloat(c.node, "beta", 1);
  auto scalar = [&](float f) {
    Type et = rt.getElementType();
    return ConstantOp::create(
        b, c.loc(),
        DenseElementsAttr::get(RankedTensorType::get({}, et),
                               b.getFloatAttr(et, f)));
  };
  if (alpha != 1)
    v = MulOp::create(b, c.loc(), rt, v, scalar(alpha));
  if (c.hasIn(2)) {
    Value bias = c.input(2);
    if (!bias)
      return false;
    if (beta != 1)
      bias = MulOp::create(b, c.loc(), bias.getType(), bias, scalar(beta));
    v = AddOp::create(b, c.loc(), rt, v, bias);
  }
  return c.result(c.dt(0), s, v);
}

} // namespace

void registerMatmulOps(OnnxOpTable &t) {
  t["MatMul"] = {emitMatmul, {}, {}, 2};
  t["Gemm"] = {emitMatmul, {"alpha", "beta", "transA", "transB"}, {}, 2};
}

} // namespace loom::onnx_import
