//===- RaiseRotary.cpp - x * cos + rotate_half(x) * sin -> loom.rotary ----===//
//
// Hugging Face's apply_rotary_pos_emb on [B, H, S, 2R]:
//   x * cos + cat(-x[..., R:], x[..., :R], -1) * sin
// with cos/sin [S, 2R] built as cat(freqs, freqs): both halves are equal,
// so loom.rotary (style = half) takes their first halves [S, R]. The pass
// relies on that construction (it cannot see the tables' values when they
// are weights); a model whose tables differ between halves is not
// Hugging Face rotary.
//
//===----------------------------------------------------------------------===//

#include "passes/Raise/Passes.h"
#include "passes/Raise/RaiseUtils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "loom-raise-rotary"

namespace loom {
#define GEN_PASS_DEF_RAISEROTARYPASS
#include "passes/Raise/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::raise;

namespace {

/// Whether `v` is x[..., a:b] (a slice of only the last axis, step 1).
bool isLastSlice(Value v, Value x, int64_t a, int64_t b) {
  auto sl = v.getDefiningOp<SliceOp>();
  if (!sl || sl.getInput() != x)
    return false;
  auto in = dyn_cast<RankedTensorType>(sl.getInput().getType());
  auto out = dyn_cast<RankedTensorType>(sl.getType());
  if (!in || !out || out.getRank() != in.getRank() || in.getRank() < 1)
    return false;
  int64_t r = out.getRank();
  auto st = sl.getStarts(), li = sl.getLimits(), sp = sl.getSteps();
  if (int64_t(st.size()) != r || int64_t(li.size()) != r ||
      int64_t(sp.size()) != r)
    return false;
  for (int64_t i = 0; i < r - 1; ++i)
    if (st[i] != 0 || sp[i] != 1 ||
        (!in.isDynamicDim(i) && li[i] != in.getDimSize(i)))
      return false;
  return st[r - 1] == a && li[r - 1] == b && sp[r - 1] == 1;
}

/// Whether `v` is cat(-x[..., R:], x[..., :R], -1) and x's last dim is 2R.
bool isRotateHalf(Value v, Value x) {
  auto cat = v.getDefiningOp<ConcatOp>();
  auto xt = dyn_cast<RankedTensorType>(x.getType());
  if (!cat || !xt || xt.getRank() < 1)
    return false;
  int64_t r = xt.getRank(), d = xt.getDimSize(r - 1);
  if (cat.getInputs().size() != 2 || ShapedType::isDynamic(d) || d % 2 ||
      (static_cast<int64_t>(cat.getAxis()) != -1 &&
       static_cast<int64_t>(cat.getAxis()) != r - 1))
    return false;
  auto neg = cat.getInputs()[0].getDefiningOp<NegOp>();
  return neg && isLastSlice(neg.getInput(), x, d / 2, d) &&
         isLastSlice(cat.getInputs()[1], x, 0, d / 2);
}

/// Whether `t` is a table [1.., S, d] that halfTable can cut.
bool isTable(Value t, int64_t d) {
  auto tt = dyn_cast<RankedTensorType>(t.getType());
  if (!tt || tt.getRank() < 2 || tt.getDimSize(tt.getRank() - 1) != d)
    return false;
  for (int64_t i = 0; i + 2 < tt.getRank(); ++i)
    if (tt.getDimSize(i) != 1)
      return false;
  return true;
}

/// The table as [S, R]: leading unit dims dropped, first half kept (`t`
/// passed isTable: nothing is created for a pattern that then fails).
Value halfTable(PatternRewriter &rw, Location loc, Value t, int64_t d) {
  auto tt = cast<RankedTensorType>(t.getType());
  int64_t s = tt.getDimSize(tt.getRank() - 2);
  if (tt.getRank() != 2)
    t = ReshapeOp::create(
        rw, loc, RankedTensorType::get({s, d}, tt.getElementType()), t);
  int64_t big = ShapedType::isDynamic(s) ? int64_t(1) << 31 : s;
  return SliceOp::create(
      rw, loc, RankedTensorType::get({s, d / 2}, tt.getElementType()), t,
      ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{big, d / 2},
      ArrayRef<int64_t>{1, 1});
}

struct RotaryPattern : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rw) const override {
    for (int i = 0; i < 2; ++i) {
      auto m1 = op->getOperand(i).getDefiningOp<MulOp>();
      auto m2 = op->getOperand(1 - i).getDefiningOp<MulOp>();
      if (!m1 || !m2)
        continue;
      for (int a = 0; a < 2; ++a)
        for (int c = 0; c < 2; ++c) {
          Value x = m1->getOperand(a), cos = m1->getOperand(1 - a);
          Value rot = m2->getOperand(c), sin = m2->getOperand(1 - c);
          auto xt = dyn_cast<RankedTensorType>(x.getType());
          if (!xt || xt.getRank() != 4 || x.getType() != op.getType() ||
              !isRotateHalf(rot, x))
            continue;
          int64_t d = xt.getDimSize(3);
          if (!isTable(cos, d) || !isTable(sin, d))
            continue;
          Value ch = halfTable(rw, op.getLoc(), cos, d);
          Value sh = halfTable(rw, op.getLoc(), sin, d);
          rw.replaceOpWithNewOp<RotaryOp>(op, x.getType(), x, ch, sh,
                                          RotaryStyle::half);
          return success();
        }
    }
    return failure();
  }
};

struct RaiseRotaryPass : loom::impl::RaiseRotaryPassBase<RaiseRotaryPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RotaryPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
