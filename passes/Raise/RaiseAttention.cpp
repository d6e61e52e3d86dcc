//===- RaiseAttention.cpp - softmax(q k^T s + mask) v -> loom.attention ---===//
//
// The scaled dot-product as exporters write it: MatMul(Softmax(Add(Mul or
// Div(MatMul(q, Transpose(k)), s), mask)), v), the scale sometimes applied
// to q first. Grouped KV heads appear as k[:, :, None].expand(...).reshape
// (Unsqueeze, Expand, Reshape), which loom.attention does natively, so the
// repetition is dropped and the op reads the KV heads directly. Rank-3
// operands (torch MultiheadAttention's [B*H, S, D]) are viewed as one batch
// of B*H heads, or, when B*H is only known at run time, as [B, H, S, D]
// with H read from the reshape that made the heads (the CPU lowering needs
// a static head count).
//
//===----------------------------------------------------------------------===//

#include "passes/Raise/Passes.h"
#include "passes/Raise/RaiseUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "loom-raise-attention"

namespace loom {
#define GEN_PASS_DEF_RAISEATTENTIONPASS
#include "passes/Raise/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::raise;

namespace {

/// Strips multiplications and divisions by scalar constants, folding them
/// into `scale`.
Value peelScale(Value v, double &scale) {
  while (true) {
    if (auto m = v.getDefiningOp<MulOp>()) {
      if (std::optional<double> c = scalarOf(m.getRhs())) {
        scale *= *c, v = m.getLhs();
        continue;
      }
      if (std::optional<double> c = scalarOf(m.getLhs())) {
        scale *= *c, v = m.getRhs();
        continue;
      }
    }
    if (auto d = v.getDefiningOp<DivOp>())
      if (std::optional<double> c = scalarOf(d.getRhs()); c && *c != 0) {
        scale /= *c, v = d.getLhs();
        continue;
      }
    return v;
  }
}

/// reshape(broadcast(reshape(k0: [B, kv, T, D]) : [B, kv, 1, T, D])
///   : [B, kv, rep, T, D]) : [B, kv*rep, T, D]  ->  k0.
Value ungroup(Value k) {
  auto r2 = k.getDefiningOp<ReshapeOp>();
  if (!r2)
    return k;
  auto bc = r2.getInput().getDefiningOp<BroadcastOp>();
  if (!bc)
    return k;
  auto r1 = bc.getInput().getDefiningOp<ReshapeOp>();
  if (!r1)
    return k;
  auto k0 = dyn_cast<RankedTensorType>(r1.getInput().getType());
  auto t1 = dyn_cast<RankedTensorType>(r1.getType()),
       tb = dyn_cast<RankedTensorType>(bc.getType()),
       t2 = dyn_cast<RankedTensorType>(r2.getType());
  if (!k0 || !t1 || !tb || !t2 || k0.getRank() != 4 || t1.getRank() != 5 ||
      tb.getRank() != 5 || t2.getRank() != 4)
    return k;
  auto s0 = k0.getShape(), s1 = t1.getShape(), sb = tb.getShape(),
       s2 = t2.getShape();
  if (ShapedType::isDynamic(s0[1]) || ShapedType::isDynamic(sb[2]))
    return k;
  bool ok = s1[0] == s0[0] && s1[1] == s0[1] && s1[2] == 1 && s1[3] == s0[2] &&
            s1[4] == s0[3] && sb[1] == s0[1] && sb[3] == s0[2] &&
            sb[4] == s0[3] && s2[1] == s0[1] * sb[2] && s2[2] == s0[2] &&
            s2[3] == s0[3];
  return ok ? r1.getInput() : k;
}

Value reshape4(PatternRewriter &rw, Location loc, Value v) {
  auto t = cast<RankedTensorType>(v.getType()); // rank checked by the caller
  SmallVector<int64_t> s{1};
  s.append(t.getShape().begin(), t.getShape().end());
  return ReshapeOp::create(rw, loc,
                           RankedTensorType::get(s, t.getElementType()), v);
}

/// The head count of a rank-3 [B*H, S, D] operand as torch MHA builds it:
/// transpose([S, B*H, D] = reshape([S, B, H*D])) (scales looked through);
/// nullopt when the producer does not say.
std::optional<int64_t> headsOf(Value v) {
  double unused = 1.0;
  v = peelScale(v, unused);
  // Through one or more transposes (k^T written as two), following where
  // v's dims 0 (B*H) and 2 (D) come from: the reshape's dims 1 and 2.
  int64_t bhDim = 0, dDim = 2;
  auto tr = v.getDefiningOp<TransposeOp>();
  if (!tr)
    return std::nullopt;
  ReshapeOp rs;
  while (tr) {
    ArrayRef<int64_t> perm = tr.getPermutation();
    if (perm.size() != 3)
      return std::nullopt;
    bhDim = perm[bhDim];
    dDim = perm[dDim];
    Value in = tr.getInput();
    rs = in.getDefiningOp<ReshapeOp>();
    tr = in.getDefiningOp<TransposeOp>();
  }
  if (!rs || bhDim != 1 || dDim != 2)
    return std::nullopt;
  auto in = rs.getInput().getType(), out = rs.getType();
  if (in.getRank() != 3 || out.getRank() != 3)
    return std::nullopt;
  int64_t e = in.getDimSize(2), d = out.getDimSize(2);
  if (ShapedType::isDynamic(e) || ShapedType::isDynamic(d) || d <= 0 ||
      e % d != 0)
    return std::nullopt;
  return e / d;
}

/// [B*H, S, D] viewed as [B, H, S, D] for a known H; the dynamic sizes
/// (B = dim 0 / H, S) are computed at run time.
Value splitHeads(PatternRewriter &rw, Location loc, Value v, int64_t heads) {
  auto t = cast<RankedTensorType>(v.getType()); // rank 3, checked
  int64_t bh = t.getDimSize(0);
  SmallVector<int64_t> s{ShapedType::isDynamic(bh) ? bh : bh / heads, heads,
                         t.getDimSize(1), t.getDimSize(2)};
  SmallVector<Value> sizes;
  if (ShapedType::isDynamic(s[0]))
    sizes.push_back(
        arith::DivUIOp::create(rw, loc, tensor::DimOp::create(rw, loc, v, 0),
                               arith::ConstantIndexOp::create(rw, loc, heads)));
  for (int64_t d = 1; d < 3; ++d)
    if (t.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(rw, loc, v, d));
  auto type = RankedTensorType::get(s, t.getElementType());
  if (sizes.size() < 2)
    sizes.clear(); // one dynamic size follows from the element count
  return ReshapeOp::create(rw, loc, type, v, sizes);
}

struct AttentionPattern : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rw) const override {
    if (op.getTransposeA() || op.getTransposeB())
      return failure();
    auto sm = op.getLhs().getDefiningOp<SoftmaxOp>();
    int64_t rank = op.getType().getRank();
    if (!sm || (rank != 3 && rank != 4) ||
        (static_cast<int64_t>(sm.getAxis()) != -1 &&
         static_cast<int64_t>(sm.getAxis()) != rank - 1))
      return failure();
    double scale = 1.0;
    Value s = sm.getInput(), mask;
    if (auto add = s.getDefiningOp<AddOp>()) {
      for (int i = 0; i < 2; ++i) {
        double sc = 1.0;
        if (peelScale(add->getOperand(i), sc).getDefiningOp<MatmulOp>()) {
          s = add->getOperand(i);
          mask = add->getOperand(1 - i);
          break;
        }
      }
      if (!mask)
        return failure();
    }
    s = peelScale(s, scale);
    auto qk = s.getDefiningOp<MatmulOp>();
    if (!qk || qk.getTransposeA() || qk.getType().getRank() != rank)
      return failure();
    Value q = peelScale(qk.getLhs(), scale), k = qk.getRhs(), v = op.getRhs();
    Location loc = op.getLoc();
    // Ranks first: nothing below may index a shape it has not checked, and
    // nothing is created for a match that then fails.
    if (rankOf(q) != rank || rankOf(k) != rank || rankOf(v) != rank ||
        (mask && (!rankOf(mask) || *rankOf(mask) > 4)) || !std::isfinite(scale))
      return failure();
    if (!qk.getTransposeB()) {
      auto tr = k.getDefiningOp<TransposeOp>();
      SmallVector<int64_t> swap;
      for (int64_t i = 0; i < rank; ++i)
        swap.push_back(i);
      std::swap(swap[rank - 1], swap[rank - 2]);
      if (tr && llvm::equal(tr.getPermutation(), swap)) {
        k = tr.getInput();
      } else {
        auto kt = cast<RankedTensorType>(k.getType());
        SmallVector<int64_t> shape;
        for (int64_t p : swap)
          shape.push_back(kt.getDimSize(p));
        k = TransposeOp::create(
            rw, loc, RankedTensorType::get(shape, kt.getElementType()), k,
            swap);
      }
    }
    if (rank == 4) {
      k = ungroup(k);
      v = ungroup(v);
    }
    Type outType = op.getType();
    // Rank 3 with a run-time B*H: the head count from the producers, so
    // that the op's head dimension is static (the CPU lowering needs it).
    std::optional<int64_t> heads;
    if (rank == 3 && cast<RankedTensorType>(q.getType()).isDynamicDim(0)) {
      heads = headsOf(q);
      if (!heads || headsOf(k) != heads || headsOf(v) != heads ||
          (mask && *rankOf(mask) == 3))
        heads.reset();
    }
    if (heads) {
      Value q3 = q;
      q = splitHeads(rw, loc, q, *heads);
      k = splitHeads(rw, loc, k, *heads);
      v = splitHeads(rw, loc, v, *heads);
      auto t = cast<RankedTensorType>(outType);
      auto qt = cast<RankedTensorType>(q.getType());
      auto vt = cast<RankedTensorType>(v.getType());
      auto out4 = RankedTensorType::get(
          {qt.getDimSize(0), *heads, qt.getDimSize(2), vt.getDimSize(3)},
          t.getElementType());
      Value out =
          AttentionOp::create(rw, loc, TypeRange{out4}, q, k, v, mask, Value(),
                              Value(), Value(), Value(), Value(), UnitAttr(),
                              rw.getF32FloatAttr(float(scale)))
              .getOutput();
      // Back to [B*H, S, Dv]: sizes from q's [B*H, S].
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < 2; ++d)
        if (t.isDynamicDim(d))
          sizes.push_back(tensor::DimOp::create(rw, loc, q3, d));
      if (sizes.size() < 2)
        sizes.clear();
      rw.replaceOp(op, ReshapeOp::create(rw, loc, t, out, sizes));
      return success();
    }
    if (rank == 3) {
      q = reshape4(rw, loc, q);
      k = reshape4(rw, loc, k);
      v = reshape4(rw, loc, v);
      if (mask && rankOf(mask) == 3)
        mask = reshape4(rw, loc, mask);
      auto t = cast<RankedTensorType>(outType);
      SmallVector<int64_t> shape{1};
      shape.append(t.getShape().begin(), t.getShape().end());
      outType = RankedTensorType::get(shape, t.getElementType());
    }
    Value out =
        AttentionOp::create(rw, loc, TypeRange{outType}, q, k, v, mask, Value(),
                            Value(), Value(), Value(), Value(), UnitAttr(),
                            rw.getF32FloatAttr(float(scale)))
            .getOutput();
    if (rank == 3)
      out = ReshapeOp::create(rw, loc, op.getType(), out);
    rw.replaceOp(op, out);
    return success();
  }
};

struct RaiseAttentionPass
    : loom::impl::RaiseAttentionPassBase<RaiseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AttentionPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
