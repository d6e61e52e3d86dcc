//===- ElementwisePatterns.cpp - elementwise loom ops to linalg -----------===//
//
// Unary, binary, compare, select and cast ops become one
// linalg.generic with numpy broadcasting; loom.constant an arith.constant.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace loom;
using namespace loom::lowering;

namespace {

Value scalarBinary(Operation *op, OpBuilder &b, Location loc, Value x,
                   Value y) {
  Type t = x.getType();
  bool f = isFloat(t);
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) -> Value {
        return f ? arith::AddFOp::create(b, loc, x, y).getResult()
                 : arith::AddIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](SubOp) -> Value {
        return f ? arith::SubFOp::create(b, loc, x, y).getResult()
                 : arith::SubIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](MulOp) -> Value {
        return f ? arith::MulFOp::create(b, loc, x, y).getResult()
                 : arith::MulIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](DivOp) -> Value {
        return f ? arith::DivFOp::create(b, loc, x, y).getResult()
                 : arith::DivSIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](PowOp) -> Value { return math::PowFOp::create(b, loc, x, y); })
      .Case([&](MaxOp) -> Value {
        return f ? arith::MaximumFOp::create(b, loc, x, y).getResult()
                 : arith::MaxSIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](MinOp) -> Value {
        return f ? arith::MinimumFOp::create(b, loc, x, y).getResult()
                 : arith::MinSIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](AndOp) -> Value { return arith::AndIOp::create(b, loc, x, y); })
      .Case([&](OrOp) -> Value { return arith::OrIOp::create(b, loc, x, y); })
      .Default([](Operation *) -> Value { return {}; });
}

Value sigmoidOf(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(t, 1.0));
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

Value scalarUnary(Operation *op, OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  bool f = isFloat(t);
  auto cst = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
  };
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](NegOp) -> Value {
        if (f)
          return arith::NegFOp::create(b, loc, x);
        Value zero = arith::ConstantIntOp::create(b, loc, t, 0);
        return arith::SubIOp::create(b, loc, zero, x);
      })
      .Case([&](AbsOp) -> Value {
        return f ? math::AbsFOp::create(b, loc, x).getResult()
                 : math::AbsIOp::create(b, loc, x).getResult();
      })
      .Case([&](ExpOp) -> Value { return math::ExpOp::create(b, loc, x); })
      .Case([&](LogOp) -> Value { return math::LogOp::create(b, loc, x); })
      .Case([&](SqrtOp) -> Value { return math::SqrtOp::create(b, loc, x); })
      .Case([&](RsqrtOp) -> Value { return math::RsqrtOp::create(b, loc, x); })
      .Case([&](ReciprocalOp) -> Value {
        return arith::DivFOp::create(b, loc, cst(1.0), x);
      })
      .Case([&](SinOp) -> Value { return math::SinOp::create(b, loc, x); })
      .Case([&](CosOp) -> Value { return math::CosOp::create(b, loc, x); })
      .Case([&](TanhOp) -> Value { return math::TanhOp::create(b, loc, x); })
      .Case([&](SigmoidOp) -> Value { return sigmoidOf(b, loc, x); })
      .Case([&](SiluOp) -> Value {
        return arith::MulFOp::create(b, loc, x, sigmoidOf(b, loc, x));
      })
      .Case([&](ReluOp) -> Value {
        return arith::MaximumFOp::create(b, loc, x, cst(0.0));
      })
      .Case([&](ErfOp) -> Value { return math::ErfOp::create(b, loc, x); })
      .Case([&](NotOp) -> Value {
        Value one = arith::ConstantIntOp::create(b, loc, t, 1);
        return arith::XOrIOp::create(b, loc, x, one);
      })
      .Case([&](GeluOp g) -> Value {
        Value half = arith::MulFOp::create(b, loc, x, cst(0.5));
        Value inner;
        if (g.getApproximate() == GeluApproximation::tanh) {
          // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
          Value x3 = arith::MulFOp::create(b, loc, x,
                                           arith::MulFOp::create(b, loc, x, x));
          Value s = arith::AddFOp::create(
              b, loc, x, arith::MulFOp::create(b, loc, x3, cst(0.044715)));
          inner = math::TanhOp::create(
              b, loc,
              arith::MulFOp::create(b, loc, s, cst(std::sqrt(2.0 / M_PI))));
        } else {
          // 0.5 x (1 + erf(x / sqrt(2)))
          inner = math::ErfOp::create(
              b, loc, arith::MulFOp::create(b, loc, x, cst(M_SQRT1_2)));
        }
        return arith::MulFOp::create(
            b, loc, half, arith::AddFOp::create(b, loc, inner, cst(1.0)));
      })
      .Default([](Operation *) -> Value { return {}; });
}

Value scalarCompare(CompareKind kind, OpBuilder &b, Location loc, Value x,
                    Value y) {
  // Indexed by CompareKind: eq, ne, lt, le, gt, ge (ordered float compares,
  // except `ne`, which is true for NaN as in numpy; signed integers).
  static constexpr arith::CmpFPredicate kFloat[] = {
      arith::CmpFPredicate::OEQ, arith::CmpFPredicate::UNE,
      arith::CmpFPredicate::OLT, arith::CmpFPredicate::OLE,
      arith::CmpFPredicate::OGT, arith::CmpFPredicate::OGE};
  static constexpr arith::CmpIPredicate kInt[] = {
      arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,
      arith::CmpIPredicate::slt, arith::CmpIPredicate::sle,
      arith::CmpIPredicate::sgt, arith::CmpIPredicate::sge};
  auto index = static_cast<size_t>(kind);
  if (isFloat(x.getType()))
    return arith::CmpFOp::create(b, loc, kFloat[index], x, y);
  return arith::CmpIOp::create(b, loc, kInt[index], x, y);
}

/// An elementwise op whose scalar body `Body::build` computes from the
/// (broadcast) operands.
template <typename Op, typename Body>
struct ElementwiseLowering : LoomPattern<Op> {
  using LoomPattern<Op>::LoomPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Emitter e = this->emitter(rewriter, op);
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Value result =
        e.elementwise(type, adaptor.getOperands(),
                      [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
                        return Body::build(op, bb, l, a);
                      });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct BinaryBody {
  static Value build(Operation *op, OpBuilder &b, Location l, ValueRange a) {
    return scalarBinary(op, b, l, a[0], a[1]);
  }
};
struct UnaryBody {
  static Value build(Operation *op, OpBuilder &b, Location l, ValueRange a) {
    return scalarUnary(op, b, l, a[0]);
  }
};
struct CompareBody {
  static Value build(CompareOp op, OpBuilder &b, Location l, ValueRange a) {
    return scalarCompare(op.getPredicate(), b, l, a[0], a[1]);
  }
};
struct SelectBody {
  static Value build(SelectOp, OpBuilder &b, Location l, ValueRange a) {
    return arith::SelectOp::create(b, l, a[0], a[1], a[2]);
  }
};
struct CastBody {
  static Value build(CastOp op, OpBuilder &b, Location l, ValueRange a) {
    return scalarCast(b, l, a[0], op.getResult().getType().getElementType());
  }
};
struct ConstantLowering : LoomPattern<ConstantOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};

template <typename Body, typename... Ops>
void addAll(RewritePatternSet &patterns, TypeConverter &converter,
            const LoweringOptions &opts) {
  (patterns.add<ElementwiseLowering<Ops, Body>>(converter,
                                                patterns.getContext(), opts),
   ...);
}

} // namespace

void loom::lowering::populateElementwisePatterns(TypeConverter &converter,
                                                 RewritePatternSet &patterns,
                                                 const LoweringOptions &opts) {
  addAll<BinaryBody, AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, AndOp,
         OrOp>(patterns, converter, opts);
  addAll<UnaryBody, NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp,
         SinOp, CosOp, TanhOp, SigmoidOp, SiluOp, ReluOp, ErfOp, NotOp, GeluOp>(
      patterns, converter, opts);
  addAll<CompareBody, CompareOp>(patterns, converter, opts);
  addAll<SelectBody, SelectOp>(patterns, converter, opts);
  addAll<CastBody, CastOp>(patterns, converter, opts);
  patterns.add<ConstantLowering>(converter, patterns.getContext(), opts);
}
