//===- RaiseAttention.cpp - softmax(q k^T s + mask) v -> loom.attention ---===//
//
// The scaled dot-product as exporters write it: MatMul(Softmax(Add(Mul or
// Div(MatMul(q, Transpose(k)), s), mask)), v), the scale sometimes applied
// to q first. Grouped KV heads appear as k[:, :, None].expand(...).reshape
// (Unsqueeze, Expand, Reshape), which loom.attention does natively, so the
// repetition is dropped and the op reads the KV heads directly. Rank-3
// operands (torch MultiheadAttention's [B*H, S, D]) are viewed as one batch
// of B*H heads.
//
//===----------------------------------------------------------------------===//

#include "passes/Raise/Passes.h"
#include "passes/Raise/RaiseUtils.h"

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
  if (!k0 || !t1 || !tb || !t2 || k0.getRank() != 4 || t1.getRank() != 5 || tb.getRank() != 5 ||
      t2.getRank() != 4)
    return k;
  auto s0 = k0.getShape(), s1 = t1.getShape(), sb = tb.getShape(),
       s2 = t2.getShape();
  if (ShapedType::isDynamic(s0[1]) || ShapedType::isDynamic(sb[2]))
    return k;
  bool ok = s1[0] == s0[0] && s1[1] == s0[1] && s1[2] == 1 &&
            s1[3] == s0[2] && s1[4] == s0[3] && sb[1] == s0[1] &&
            sb[3] == s0[2] && sb[4] == s0[3] && s2[1] == s0[1] * sb[2] &&
            s2[2] == s0[2] && s2[3] == s0[3];
  return ok ? r1.getInput() : k;
}

Value reshape4(PatternRewriter &rw, Location loc, Value v) {
  auto t = cast<RankedTensorType>(v.getType()); // rank checked by the caller
  SmallVector<int64_t> s{1};
  s.append(t.getShape().begin(), t.getShape().end());
  return ReshapeOp::create(rw, loc, RankedTensorType::get(s, t.getElementType()),
                           v);
}

struct AttentionPattern : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rw) const override {
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
    Value out = AttentionOp::create(rw, loc, TypeRange{outType}, q, k, v, mask,
                                    Value(), Value(), Value(), Value(),
                                    Value(), UnitAttr(),
                                    rw.getF32FloatAttr(float(scale)))
                    .getOutput();
    if (rank == 3)
      out = ReshapeOp::create(rw, loc, op.getType(), out);
    rw.replaceOp(op, out);
    return success();
  }
};

struct RaiseAttentionPass : loom::impl::RaiseAttentionPassBase<RaiseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AttentionPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
