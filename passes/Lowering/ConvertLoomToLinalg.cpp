//===- ConvertLoomToLinalg.cpp - loom ops to linalg on tensors ------------===//
//
// Lowers every loom compute op to linalg.generic / tensor ops on tensors, and
// every collective to a call into the runtime C ABI on buffers. Composite ops
// (softmax, norms, rotary, attention) become short sequences of generics;
// fusion and bufferization run afterwards.
//
// Dynamic dimensions: a dynamic result size is read from an operand with
// tensor.dim. Broadcasting follows numpy rules, with the restriction that a
// dynamic dimension is never a broadcast 1 at run time (batch and sequence
// dimensions, the only dynamic ones importers produce, never are).
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"
#include "passes/Lowering/QuantKernels.h"

#include "loom/runtime/abi.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/xxhash.h"

#include <cmath>

#define DEBUG_TYPE "loom-convert-loom-to-linalg"

namespace loom {
#define GEN_PASS_DEF_CONVERTLOOMTOLINALGPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

bool isDyn(int64_t d) { return ShapedType::isDynamic(d); }

/// Axis attributes are stored as unsigned 64-bit values: reinterpret them as
/// signed, then count negative axes from the end.
int64_t normAxis(uint64_t raw, int64_t rank) {
  int64_t a = static_cast<int64_t>(raw);
  return a < 0 ? a + rank : a;
}
bool isFloat(Type t) { return isa<FloatType>(t); }

/// The runtime dtype code of an element type (abi.h), or -1.
int32_t runtimeDType(Type t) {
  if (t.isF32())
    return LOOM_RT_F32;
  if (t.isF16())
    return LOOM_RT_F16;
  if (t.isBF16())
    return LOOM_RT_BF16;
  if (t.isF64())
    return LOOM_RT_F64;
  if (t.isInteger(8))
    return LOOM_RT_I8;
  if (t.isInteger(32))
    return LOOM_RT_I32;
  if (t.isInteger(64))
    return LOOM_RT_I64;
  if (t.isInteger(1))
    return LOOM_RT_U8;
  return -1;
}

int32_t runtimeReduction(Reduction r) {
  switch (r) {
  case Reduction::sum:
    return LOOM_RT_SUM;
  case Reduction::prod:
    return LOOM_RT_PROD;
  case Reduction::max:
    return LOOM_RT_MAX;
  case Reduction::min:
    return LOOM_RT_MIN;
  }
  return LOOM_RT_SUM;
}

/// Lowers the loom ops of one module.
class Lowerer {
public:
  /// The pass options: `qmatmul` overrides how quantized matmuls lower,
  /// `gemm` = false generates every matmul instead of calling the
  /// runtime's GEMM (A/B measurements, debugging the generated path).
  Lowerer(ModuleOp module, StringRef qmatmul, bool gemm,
          const QKernelTuning &tuning)
      : module(module), b(module.getContext()), qmatmulMode(qmatmul),
        gemm(gemm), tuning(tuning) {}

  LogicalResult run();

private:
  ModuleOp module;
  OpBuilder b;
  Location loc = UnknownLoc::get(b.getContext());
  std::string qmatmulMode;
  bool gemm;
  QKernelTuning tuning;
  bool gemmDisabled() const { return !gemm; }

  LogicalResult lowerOp(Operation *op);

  // --- small builders ------------------------------------------------------
  Value cIndex(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  Value cI64(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  }
  Value cI32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  static Value cFloat(OpBuilder &bb, Location l, Type t, double v) {
    return arith::ConstantOp::create(bb, l, bb.getFloatAttr(t, v));
  }
  Value dim(Value v, int64_t d) {
    auto t = cast<RankedTensorType>(v.getType());
    if (!t.isDynamicDim(d))
      return cIndex(t.getDimSize(d));
    return tensor::DimOp::create(b, loc, v, d);
  }
  OpFoldResult dimOfr(Value v, int64_t d) {
    auto t = cast<RankedTensorType>(v.getType());
    if (!t.isDynamicDim(d))
      return b.getIndexAttr(t.getDimSize(d));
    return tensor::DimOp::create(b, loc, v, d).getResult();
  }
  /// Product of the given dims of `v` as an index value.
  Value numElements(Value v, int64_t from = 0, int64_t to = -1) {
    auto t = cast<RankedTensorType>(v.getType());
    if (to < 0)
      to = t.getRank();
    Value n = cIndex(1);
    for (int64_t d = from; d < to; ++d)
      n = arith::MulIOp::create(b, loc, n, dim(v, d));
    return n;
  }
  Value indexToI64(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  }
  Value indexToFloat(Value v, Type ft) {
    Value i = indexToI64(v);
    return arith::SIToFPOp::create(b, loc, ft, i);
  }

  /// tensor.empty of `type` whose dynamic sizes are given in order.
  Value empty(RankedTensorType type, ArrayRef<Value> dynSizes) {
    SmallVector<OpFoldResult> sizes;
    unsigned next = 0;
    for (int64_t d : type.getShape())
      sizes.push_back(isDyn(d) ? OpFoldResult(dynSizes[next++])
                               : OpFoldResult(b.getIndexAttr(d)));
    return tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  }
  /// tensor.empty of `type` with every size given (static ones ignored).
  Value emptyAll(RankedTensorType type, ArrayRef<Value> allSizes) {
    SmallVector<Value> dyn;
    for (auto [i, d] : llvm::enumerate(type.getShape()))
      if (isDyn(d))
        dyn.push_back(allSizes[i]);
    return empty(type, dyn);
  }
  Value fill(Value init, Value scalar) {
    return linalg::FillOp::create(b, loc, ValueRange{scalar},
                                  ValueRange{init})
        .getResult(0);
  }

  /// The sizes of a numpy broadcast of `inputs` to `type`.
  SmallVector<Value> broadcastSizes(RankedTensorType type, ValueRange inputs);
  /// Indexing map reading `input` (numpy-aligned) inside `rank` loops.
  AffineMap broadcastMap(Value input, unsigned rank);

  /// A parallel linalg.generic producing `type` from `inputs` read through
  /// `maps`, sizes from `sizes` (all of them).
  Value generic(RankedTensorType type, ValueRange inputs,
                ArrayRef<AffineMap> maps, ArrayRef<Value> sizes, BodyFn body);
  /// Elementwise with numpy broadcasting.
  Value elementwise(RankedTensorType type, ValueRange inputs, BodyFn body) {
    SmallVector<AffineMap> maps;
    for (Value in : inputs)
      maps.push_back(broadcastMap(in, type.getRank()));
    return generic(type, inputs, maps, broadcastSizes(type, inputs), body);
  }
  /// Reduces `input` over `axes` (sorted, normalised) with `combine`,
  /// starting from `init`; the result drops the reduced axes. `pre` maps
  /// each input element before combining (may be null).
  Value reduce(Value input, ArrayRef<int64_t> axes, double init,
               function_ref<Value(OpBuilder &, Location, Value, Value)> combine,
               function_ref<Value(OpBuilder &, Location, Value)> pre = nullptr);
  /// Map from rank-`rank` loops to the non-reduced dims.
  AffineMap dropDimsMap(unsigned rank, ArrayRef<int64_t> axes);
  /// Reshape to `type` for the lowering's own needs (always splittable;
  /// sizes are derived from the input).
  Value reshape(Value input, RankedTensorType type);
  /// Reshape with sizes inferred from the input; fails on `op` when the
  /// dynamic sizes cannot be inferred.
  FailureOr<Value> reshapeTo(Operation *op, Value input,
                             RankedTensorType type);
  Value transpose(Value input, ArrayRef<int64_t> perm);
  Value concat(ValueRange inputs, int64_t axis, RankedTensorType type);
  Value softmax(Value input, int64_t axis);
  Value matmul(Value lhs, Value rhs, bool ta, bool tb, RankedTensorType type);
  /// The same product through the runtime's GEMM (OpenBLAS), or null when
  /// the shapes do not map to one GEMM call.
  Value matmulByGemm(Operation *op, Value lhs, Value rhs, bool ta, bool tb,
                     RankedTensorType type);
  /// c[b,h] = a[b,h] x rhs[b,h/group] (rhs transposed when `tb`) through
  /// the runtime's batched GEMM; all rank 4, f32. Null when not applicable.
  Value attentionGemm(Operation *op, Value a, Value rhs, bool tb,
                      int64_t heads, int64_t group, RankedTensorType type,
                      ArrayRef<Value> sizes, Value rhsCache = {});

  // --- quantized weights -----------------------------------------------------
  /// Entry-point arguments of block type become their bytes
  /// (QTensorType::getStorageType); the quantization of each is kept here.
  llvm::DenseMap<Value, QTensorType> quantOf;
  /// Quantized weights stored in the interleaved layout.
  llvm::DenseSet<Value> interleaved;
  LogicalResult convertQuantizedArguments();
  /// One dequantized element: row `row`, column `k` of the bytes `bytes`.
  static Value dequantElement(OpBuilder &bb, Location l, Value bytes,
                              ValueRange rowIndices, Value k, QuantAttr q);
  FailureOr<Value> dequantize(Operation *op, Value weight);
  FailureOr<Value> quantizedEmbedding(EmbeddingOp op);
  /// Fails the job (loom_rt_index_error) on an id outside [0, rows) of the
  /// table (with `negative`, [-rows, rows): ids that count from the end, as
  /// ONNX Gather), before any row is read: one unsigned compare per id.
  void checkEmbeddingIds(EmbeddingOp op, bool negative);
  /// A pointer to a NUL-terminated constant string (an LLVM global, one
  /// per distinct text).
  Value cString(StringRef text);
  /// loom.qmatmul through a generated vector kernel (QuantKernels.cpp), or
  /// null when none applies (then dequantize + f32 GEMM).
  FailureOr<Value> quantizedMatmulKernel(QMatmulOp op);

  // --- composite ops --------------------------------------------------------
  FailureOr<SmallVector<Value>> lowerAttention(AttentionOp op);
  Value lowerRotary(RotaryOp op);
  SmallVector<Value> lowerRotaryTable(RotaryTableOp op);
  Value lowerGather(Value data, Value indices, int64_t axis,
                    RankedTensorType type);
  Value lowerReduce(ReduceOp op);
  Value lowerRmsNorm(RmsNormOp op);
  Value lowerLayerNorm(LayerNormOp op);
  Value lowerSlice(SliceOp op);

  // --- runtime calls ---------------------------------------------------------
  /// The runtime context of the entry point holding `op`, or null.
  static Value entryContext(Operation *op);
  /// entryContext, with a diagnostic when there is none.
  FailureOr<Value> contextOf(Operation *op);
  /// Calls the runtime function `name` (declared on first use with the
  /// types of `args` and `results`).
  func::CallOp callRuntime(StringRef name, ValueRange args,
                           TypeRange results = {});
  Value bufferOf(Value tensor);
  Value allocLike(RankedTensorType type, ArrayRef<Value> allSizes);
  Value ptrOf(Value memref);
  /// The address of element `offset` (row-major) of an identity-layout f32
  /// buffer.
  Value ptrAt(Value memref, Value offset);
  Value toTensor(Value memref, RankedTensorType type);
  FailureOr<std::pair<int64_t, uint64_t>> groupOf(Operation *op,
                                                  FlatSymbolRefAttr mesh,
                                                  ArrayAttr axes);
  FailureOr<Value> peerRank(Operation *op, Value ctx, FlatSymbolRefAttr mesh,
                            ArrayAttr axes, std::optional<int64_t> peer,
                            std::optional<int64_t> shift);
  FailureOr<Value> lowerCollective(Operation *op);
  FailureOr<Value> lowerLocalSlice(LocalSliceOp op);
};

//===----------------------------------------------------------------------===//
// Scalar bodies
//===----------------------------------------------------------------------===//

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
      .Case([&](PowOp) -> Value {
        return math::PowFOp::create(b, loc, x, y);
      })
      .Case([&](MaxOp) -> Value {
        return f ? arith::MaximumFOp::create(b, loc, x, y).getResult()
                 : arith::MaxSIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](MinOp) -> Value {
        return f ? arith::MinimumFOp::create(b, loc, x, y).getResult()
                 : arith::MinSIOp::create(b, loc, x, y).getResult();
      })
      .Case([&](AndOp) -> Value {
        return arith::AndIOp::create(b, loc, x, y);
      })
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
      .Case([&](RsqrtOp) -> Value {
        return math::RsqrtOp::create(b, loc, x);
      })
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
          Value x3 = arith::MulFOp::create(
              b, loc, x, arith::MulFOp::create(b, loc, x, x));
          Value s = arith::AddFOp::create(
              b, loc, x, arith::MulFOp::create(b, loc, x3, cst(0.044715)));
          inner = math::TanhOp::create(
              b, loc,
              arith::MulFOp::create(b, loc, s,
                                    cst(std::sqrt(2.0 / M_PI))));
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

Value scalarCast(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  bool ff = isFloat(from), ft = isFloat(to);
  if (ff && ft) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      return arith::TruncFOp::create(b, loc, to, x);
    // f16 <-> bf16: through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (ff && !ft) {
    if (to.isInteger(1)) {
      Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(from, 0));
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   zero);
    }
    return arith::FPToSIOp::create(b, loc, to, x);
  }
  if (!ff && ft) {
    if (from.isInteger(1))
      return arith::UIToFPOp::create(b, loc, to, x);
    return arith::SIToFPOp::create(b, loc, to, x);
  }
  unsigned wf = from.getIntOrFloatBitWidth(), wt = to.getIntOrFloatBitWidth();
  if (to.isInteger(1)) {
    Value zero = arith::ConstantIntOp::create(b, loc, from, 0);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (wf < wt)
    return from.isInteger(1) ? arith::ExtUIOp::create(b, loc, to, x).getResult()
                             : arith::ExtSIOp::create(b, loc, to, x).getResult();
  return arith::TruncIOp::create(b, loc, to, x);
}

} // namespace

//===----------------------------------------------------------------------===//
// Generic builders
//===----------------------------------------------------------------------===//

SmallVector<Value> Lowerer::broadcastSizes(RankedTensorType type,
                                           ValueRange inputs) {
  int64_t rank = type.getRank();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!type.isDynamicDim(d)) {
      sizes.push_back(cIndex(type.getDimSize(d)));
      continue;
    }
    Value size;
    for (Value in : inputs) {
      auto t = cast<RankedTensorType>(in.getType());
      int64_t k = d - (rank - t.getRank());
      if (k < 0 || t.getDimSize(k) == 1)
        continue;
      size = dim(in, k);
      break;
    }
    sizes.push_back(size ? size : cIndex(1));
  }
  return sizes;
}

AffineMap Lowerer::broadcastMap(Value input, unsigned rank) {
  auto t = cast<RankedTensorType>(input.getType());
  SmallVector<AffineExpr> exprs;
  for (int64_t k = 0; k < t.getRank(); ++k) {
    unsigned d = rank - t.getRank() + k;
    exprs.push_back(t.getDimSize(k) == 1 ? b.getAffineConstantExpr(0)
                                         : b.getAffineDimExpr(d));
  }
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

Value Lowerer::generic(RankedTensorType type, ValueRange inputs,
                       ArrayRef<AffineMap> maps, ArrayRef<Value> sizes,
                       BodyFn body) {
  Value init = emptyAll(type, sizes);
  SmallVector<AffineMap> all(maps);
  all.push_back(b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iters(type.getRank(),
                                         utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{type}, inputs, ValueRange{init}, all, iters,
      [&](OpBuilder &bb, Location l, ValueRange args) {
        Value r = body(bb, l, args.drop_back());
        linalg::YieldOp::create(bb, l, r);
      });
  return op.getResult(0);
}

AffineMap Lowerer::dropDimsMap(unsigned rank, ArrayRef<int64_t> axes) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d))
      exprs.push_back(b.getAffineDimExpr(d));
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

Value Lowerer::reduce(
    Value input, ArrayRef<int64_t> axes, double init,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine,
    function_ref<Value(OpBuilder &, Location, Value)> pre) {
  auto t = cast<RankedTensorType>(input.getType());
  unsigned rank = t.getRank();
  SmallVector<int64_t> shape;
  SmallVector<Value> dyn;
  for (unsigned d = 0; d < rank; ++d) {
    if (llvm::is_contained(axes, d))
      continue;
    shape.push_back(t.getDimSize(d));
    if (t.isDynamicDim(d))
      dyn.push_back(dim(input, d));
  }
  Type et = t.getElementType();
  auto outType = RankedTensorType::get(shape, et);
  Value initValue;
  if (isFloat(et)) {
    initValue = cFloat(b, loc, et, init);
  } else if (std::isinf(init)) {
    auto it = cast<IntegerType>(et);
    APInt v = init > 0 ? APInt::getSignedMaxValue(it.getWidth())
                       : APInt::getSignedMinValue(it.getWidth());
    initValue = arith::ConstantOp::create(b, loc, b.getIntegerAttr(et, v));
  } else {
    initValue = arith::ConstantIntOp::create(b, loc, et, (int64_t)init);
  }
  Value out = fill(empty(outType, dyn), initValue);
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank),
                              dropDimsMap(rank, axes)};
  SmallVector<utils::IteratorType> iters;
  for (unsigned d = 0; d < rank; ++d)
    iters.push_back(llvm::is_contained(axes, d)
                        ? utils::IteratorType::reduction
                        : utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{input}, ValueRange{out}, maps,
      iters, [&](OpBuilder &bb, Location l, ValueRange args) {
        Value x = pre ? pre(bb, l, args[0]) : args[0];
        linalg::YieldOp::create(bb, l, combine(bb, l, args.back(), x));
      });
  return op.getResult(0);
}

/// Splits a reshape from `in` to `out` into a kept prefix, a middle that is
/// collapsed and re-expanded, and a kept static suffix, such that the
/// re-expanded middle has at most one dynamic dimension (one expand group
/// cannot hold two dynamic sizes). Returns false when no split exists.
static bool splitReshape(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                         int64_t &prefix, int64_t &suffix) {
  int64_t maxP = 0;
  while (maxP < (int64_t)std::min(in.size(), out.size()) &&
         in[maxP] == out[maxP]) // equal static sizes, or both dynamic
    ++maxP;
  for (int64_t p = maxP; p >= 0; --p) {
    int64_t q = 0;
    while (q < (int64_t)in.size() - p && q < (int64_t)out.size() - p &&
           !isDyn(in[in.size() - 1 - q]) &&
           in[in.size() - 1 - q] == out[out.size() - 1 - q])
      ++q;
    for (; q >= 0; --q) {
      ArrayRef<int64_t> mi = in.slice(p, in.size() - p - q);
      ArrayRef<int64_t> mo = out.slice(p, out.size() - p - q);
      if (mi.empty() != mo.empty())
        continue;
      if (llvm::count_if(mo, isDyn) > 1)
        continue;
      bool staticMid = llvm::none_of(mi, isDyn) && llvm::none_of(mo, isDyn);
      int64_t pi = 1, po = 1;
      for (int64_t d : mi)
        pi *= isDyn(d) ? 1 : d;
      for (int64_t d : mo)
        po *= isDyn(d) ? 1 : d;
      if (staticMid && pi != po)
        continue;
      if (llvm::none_of(mo, isDyn) && llvm::any_of(mi, isDyn))
        continue; // trust a static result only when the input is static too
      prefix = p;
      suffix = q;
      return true;
    }
  }
  return false;
}

FailureOr<Value> Lowerer::reshapeTo(Operation *op, Value input,
                                    RankedTensorType type) {
  if (input.getType() == type)
    return input;
  auto in = cast<RankedTensorType>(input.getType());
  Type et = in.getElementType();
  int64_t p = 0, q = 0;
  bool split = splitReshape(in.getShape(), type.getShape(), p, q);
  if (!split && llvm::count_if(type.getShape(), isDyn) <= 1) {
    p = 0; // one group holding everything
    q = 0;
    split = true;
  }
  if (!split)
    return op->emitOpError()
           << "cannot lower this reshape: its dynamic sizes cannot be "
              "inferred (make all but one of the changed dimensions static)";
  int64_t inMidEnd = in.getRank() - q, outMidEnd = type.getRank() - q;
  // Collapse: prefix dims alone, the middle into one, suffix dims alone.
  SmallVector<ReassociationIndices> collapse;
  SmallVector<int64_t> midShape;
  for (int64_t d = 0; d < p; ++d) {
    collapse.push_back({d});
    midShape.push_back(in.getDimSize(d));
  }
  ReassociationIndices middle;
  int64_t midStatic = 1;
  bool midDyn = false;
  for (int64_t d = p; d < inMidEnd; ++d) {
    middle.push_back(d);
    midDyn |= in.isDynamicDim(d);
    midStatic *= in.isDynamicDim(d) ? 1 : in.getDimSize(d);
  }
  bool hasMiddle = !middle.empty();
  if (hasMiddle) {
    collapse.push_back(middle);
    midShape.push_back(midDyn ? ShapedType::kDynamic : midStatic);
  }
  for (int64_t d = inMidEnd; d < in.getRank(); ++d) {
    collapse.push_back({d});
    midShape.push_back(in.getDimSize(d));
  }
  auto midType = RankedTensorType::get(midShape, et);
  Value mid = input;
  if (midType != in)
    mid = tensor::CollapseShapeOp::create(b, loc, midType, input, collapse);
  if (midType == type)
    return mid;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, mid,
                                           ArrayRef<ReassociationIndices>{})
        .getResult();
  // Expand back: every output size; the middle's dynamic one by division.
  SmallVector<ReassociationIndices> expand;
  SmallVector<OpFoldResult> outShape;
  for (int64_t d = 0; d < p; ++d) {
    expand.push_back({d});
    outShape.push_back(dimOfr(input, d));
  }
  if (hasMiddle || midType.getRank() == 0) {
    ReassociationIndices group;
    int64_t knownOut = 1;
    for (int64_t d = p; d < outMidEnd; ++d) {
      group.push_back(d);
      if (!type.isDynamicDim(d))
        knownOut *= type.getDimSize(d);
    }
    Value midSize = numElements(input, p, inMidEnd);
    for (int64_t d = p; d < outMidEnd; ++d) {
      if (!type.isDynamicDim(d))
        outShape.push_back(b.getIndexAttr(type.getDimSize(d)));
      else
        outShape.push_back(
            arith::DivUIOp::create(b, loc, midSize, cIndex(knownOut))
                .getResult());
    }
    if (midType.getRank() > 0)
      expand.push_back(group);
  }
  for (int64_t d = outMidEnd; d < type.getRank(); ++d) {
    expand.push_back({d});
    outShape.push_back(b.getIndexAttr(type.getDimSize(d)));
  }
  return tensor::ExpandShapeOp::create(b, loc, type, mid, expand, outShape)
      .getResult();
}

Value Lowerer::reshape(Value input, RankedTensorType type) {
  Operation *anchor = input.getDefiningOp();
  if (!anchor)
    anchor = cast<BlockArgument>(input).getOwner()->getParentOp();
  FailureOr<Value> r = reshapeTo(anchor, input, type);
  if (failed(r))
    llvm::report_fatal_error("loom: an internal reshape is not splittable");
  return *r;
}

Value Lowerer::transpose(Value input, ArrayRef<int64_t> perm) {
  auto t = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  for (int64_t p : perm) {
    shape.push_back(t.getDimSize(p));
    sizes.push_back(dim(input, p));
  }
  auto outType = RankedTensorType::get(shape, t.getElementType());
  Value init = emptyAll(outType, sizes);
  return linalg::TransposeOp::create(b, loc, input, init, perm).getResult()[0];
}

Value Lowerer::concat(ValueRange inputs, int64_t axis, RankedTensorType type) {
  SmallVector<Value> sizes;
  Value total = cIndex(0);
  for (Value in : inputs)
    total = arith::AddIOp::create(b, loc, total, dim(in, axis));
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(d == axis ? total : dim(inputs.front(), d));
  Value result = emptyAll(type, sizes);
  Value offset = cIndex(0);
  for (Value in : inputs) {
    auto t = cast<RankedTensorType>(in.getType());
    SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)),
        strides(t.getRank(), b.getIndexAttr(1)), extents;
    offsets[axis] = offset;
    for (int64_t d = 0; d < t.getRank(); ++d)
      extents.push_back(dimOfr(in, d));
    result = tensor::InsertSliceOp::create(b, loc, in, result, offsets,
                                           extents, strides);
    offset = arith::AddIOp::create(b, loc, offset, dim(in, axis));
  }
  return result;
}

Value Lowerer::softmax(Value input, int64_t axis) {
  auto t = cast<RankedTensorType>(input.getType());
  unsigned rank = t.getRank();
  SmallVector<Value> sizes;
  for (unsigned d = 0; d < rank; ++d)
    sizes.push_back(dim(input, d));
  Value m = reduce(
      input, {axis}, -INFINITY,
      [](OpBuilder &bb, Location l, Value acc, Value x) -> Value {
        return arith::MaximumFOp::create(bb, l, acc, x);
      });
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap drop = dropDimsMap(rank, {axis});
  Value e = generic(t, {input, m}, {id, drop}, sizes,
                    [](OpBuilder &bb, Location l, ValueRange a) -> Value {
                      return math::ExpOp::create(
                          bb, l, arith::SubFOp::create(bb, l, a[0], a[1]));
                    });
  Value s = reduce(e, {axis}, 0.0,
                   [](OpBuilder &bb, Location l, Value acc, Value x) -> Value {
                     return arith::AddFOp::create(bb, l, acc, x);
                   });
  return generic(t, {e, s}, {id, drop}, sizes,
                 [](OpBuilder &bb, Location l, ValueRange a) -> Value {
                   return arith::DivFOp::create(bb, l, a[0], a[1]);
                 });
}

Value Lowerer::matmul(Value lhs, Value rhs, bool ta, bool tb,
                      RankedTensorType type) {
  auto lt = cast<RankedTensorType>(lhs.getType());
  auto rt = cast<RankedTensorType>(rhs.getType());
  unsigned batch = type.getRank() - 2;
  unsigned loops = batch + 3; // batch..., m, n, k
  AffineExpr m = b.getAffineDimExpr(batch), n = b.getAffineDimExpr(batch + 1),
             k = b.getAffineDimExpr(batch + 2);
  auto operandMap = [&](RankedTensorType t, AffineExpr r, AffineExpr c) {
    SmallVector<AffineExpr> exprs;
    unsigned ob = t.getRank() - 2;
    for (unsigned i = 0; i < ob; ++i) {
      unsigned d = batch - ob + i;
      exprs.push_back(t.getDimSize(i) == 1 && type.getDimSize(d) != 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(d));
    }
    exprs.push_back(r);
    exprs.push_back(c);
    return AffineMap::get(loops, 0, exprs, b.getContext());
  };
  AffineMap lm = ta ? operandMap(lt, k, m) : operandMap(lt, m, k);
  AffineMap rm = tb ? operandMap(rt, n, k) : operandMap(rt, k, n);
  SmallVector<AffineExpr> outExprs;
  for (unsigned d = 0; d < batch + 2; ++d)
    outExprs.push_back(b.getAffineDimExpr(d));
  AffineMap om = AffineMap::get(loops, 0, outExprs, b.getContext());
  // Result sizes: batch from the broadcast, m from lhs, n from rhs.
  SmallVector<Value> sizes;
  for (unsigned d = 0; d < batch; ++d) {
    Value s;
    for (auto [v, t] : {std::pair{lhs, lt}, std::pair{rhs, rt}}) {
      int64_t k2 = d - (batch - (t.getRank() - 2));
      if (k2 >= 0 && t.getDimSize(k2) != 1) {
        s = dim(v, k2);
        break;
      }
    }
    sizes.push_back(s ? s : cIndex(1));
  }
  sizes.push_back(dim(lhs, ta ? lt.getRank() - 1 : lt.getRank() - 2));
  sizes.push_back(dim(rhs, tb ? rt.getRank() - 2 : rt.getRank() - 1));
  Type et = type.getElementType();
  Value init = fill(emptyAll(type, sizes), cFloat(b, loc, et, 0.0));
  SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init},
      ArrayRef<AffineMap>{lm, rm, om}, iters,
      [](OpBuilder &bb, Location l, ValueRange a) {
        Value p = arith::MulFOp::create(bb, l, a[0], a[1]);
        linalg::YieldOp::create(bb, l,
                                Value(arith::AddFOp::create(bb, l, a[2], p)));
      });
  return op.getResult(0);
}

Value Lowerer::matmulByGemm(Operation *op, Value lhs, Value rhs, bool ta,
                            bool tb, RankedTensorType type) {
  auto lt = cast<RankedTensorType>(lhs.getType());
  auto rt = cast<RankedTensorType>(rhs.getType());
  // One GEMM: f32, a shared rank-2 right operand, and a left operand whose
  // batch dimensions fold into M (so not transposed when batched).
  if (!type.getElementType().isF32() || rt.getRank() != 2 ||
      (ta && lt.getRank() != 2))
    return {};
  Value ctx = entryContext(op);
  if (!ctx || gemmDisabled())
    return {};
  // Small static products stay generated: a call costs more than it saves.
  if (lt.hasStaticShape() && rt.hasStaticShape() &&
      lt.getNumElements() * rt.getDimSize(tb ? 0 : 1) < 32 * 1024)
    return {};
  Value kv = dim(lhs, ta ? 0 : lt.getRank() - 1);
  Value n = dim(rhs, tb ? 0 : 1);
  // A contiguous [..., M, K] is a row-major [B*M, K]: pass the buffers as
  // they are and allocate C with its final shape [..., M, N].
  Value m = ta ? dim(lhs, 1) : numElements(lhs, 0, lt.getRank() - 1);
  SmallVector<Value> cSizes;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    cSizes.push_back(ta ? dim(lhs, 1) : dim(lhs, d));
  cSizes.push_back(n);
  Value bufA = bufferOf(lhs), bufB = bufferOf(rhs);
  Value bufC = allocLike(type, cSizes);
  callRuntime("loom_rt_sgemm", ValueRange{ctx, cI32(ta), cI32(tb), indexToI64(m),
                                  indexToI64(n), indexToI64(kv),
                                  ptrOf(bufA), ptrOf(bufB), ptrOf(bufC)});
  return toTensor(bufC, type);
}

Value Lowerer::attentionGemm(Operation *op, Value a, Value rhs, bool tb,
                             int64_t heads, int64_t group,
                             RankedTensorType type, ArrayRef<Value> sizes,
                             Value rhsCache) {
  Value ctx = entryContext(op);
  if (!type.getElementType().isF32() || !ctx || gemmDisabled())
    return {};
  // m, n, k of each product.
  Value m = dim(a, 2), k = dim(a, 3);
  Value n = tb ? dim(rhs, 2) : dim(rhs, 3);
  if (rhsCache) {
    // `rhs` is rows [0, n) of a KV cache [1, Hkv, C, D]: within one KV head
    // those rows are contiguous, so each KV head's group of query heads is
    // one batched product reading the cache buffer in place (no copy of the
    // filled part into a contiguous tensor).
    if (cast<RankedTensorType>(rhsCache.getType()).getDimSize(0) != 1)
      return {};
    Value bufA = bufferOf(a), bufB = bufferOf(rhsCache);
    Value bufC = allocLike(type, sizes);
    Value rowsA = arith::MulIOp::create(b, loc, m, k);
    Value rowsC = arith::MulIOp::create(b, loc, m, n);
    Value headB = arith::MulIOp::create(b, loc, dim(rhsCache, 2),
                                        dim(rhsCache, 3));
    for (int64_t h = 0; h < heads / group; ++h) {
      auto at = [&](Value buf, Value perHead, int64_t count) {
        return ptrAt(buf, arith::MulIOp::create(b, loc, perHead,
                                                cIndex(h * count)));
      };
      callRuntime("loom_rt_sgemm_batched",
                  ValueRange{ctx, cI32(0), cI32(tb), cI64(group), cI64(group),
                             cI64(group), indexToI64(m), indexToI64(n),
                             indexToI64(k), at(bufA, rowsA, group),
                             at(bufB, headB, 1), at(bufC, rowsC, group)});
    }
    return toTensor(bufC, type);
  }
  Value batch = arith::MulIOp::create(b, loc, dim(a, 0), cIndex(heads));
  Value bufA = bufferOf(a), bufB = bufferOf(rhs);
  Value bufC = allocLike(type, sizes);
  callRuntime("loom_rt_sgemm_batched", ValueRange{ctx, cI32(0), cI32(tb), indexToI64(batch), cI64(heads),
                 cI64(group), indexToI64(m), indexToI64(n), indexToI64(k),
                 ptrOf(bufA), ptrOf(bufB), ptrOf(bufC)});
  return toTensor(bufC, type);
}

//===----------------------------------------------------------------------===//
// Quantized weights (GGUF blocks kept as they are, Loom int4/int8 blocks)
//===----------------------------------------------------------------------===//

LogicalResult Lowerer::convertQuantizedArguments() {
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    SmallVector<Type> inputs(fn.getArgumentTypes());
    bool changed = false;
    for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
      auto q = dyn_cast<QTensorType>(arg.getType());
      if (!q)
        continue;
      RankedTensorType storage = q.getStorageType();
      std::string why;
      if (!storage || !hasQMatmulKernel(q.getQuant(), &why))
        return fn.emitOpError()
               << "argument " << i << " of type " << q << ": " << why;
      quantOf[arg] = q;
      if (auto desc = fn.getArgAttrOfType<DictionaryAttr>(
              i, LoomDialect::kWeightAttrName))
        if (auto il = desc.getAs<DictionaryAttr>("interleave")) {
          // The layout the kernels read; anything else is not ours.
          QWeightInterleave want = interleaveOf(q.getQuant());
          auto is = [&](StringRef key, int64_t v) {
            auto a = il.getAs<IntegerAttr>(key);
            return a && a.getInt() == v;
          };
          if (!is("rows", want.rows) || !is("block_bytes", want.blockBytes) ||
              !is("fields", want.fields) ||
              !is("field_bytes", want.fieldBytes) ||
              !is("unit_bytes", want.unitBytes))
            return fn.emitOpError()
                   << "argument " << i << ": interleave " << il
                   << " is not the layout of " << q
                   << " that the kernels read (see docs/QUANTIZE.md)";
          interleaved.insert(arg);
        }
      arg.setType(storage);
      inputs[i] = storage;
      changed = true;
    }
    if (changed)
      fn.setType(FunctionType::get(fn.getContext(), inputs,
                                   fn.getResultTypes()));
  }
  return success();
}

Value Lowerer::dequantElement(OpBuilder &bb, Location l, Value bytes,
                              ValueRange rowIndices, Value k, QuantAttr q) {
  // Block layouts (docs/QUANTIZE.md; GGUF's in docs/REFERENCES.md): scale,
  // [min, for mode min], values. int4: byte j holds element j (low nibble)
  // and j + block/2 (high nibble); symmetric stores q + 8 (x = d (q - 8)),
  // min stores q (x = d q + m). int8: int8 q (x = d q) or uint8 q
  // (x = d q + m). q4_0, q4_1 and q8_0 are the block-32 f16 cases.
  auto ci = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(bb, l, v);
  };
  Type i8 = bb.getI8Type(), f32 = bb.getF32Type();
  int64_t blockBytes = q.getBlockBytes(), block = q.getBlockSize();
  Type scaleType = q.getScaleType();
  int64_t scaleBytes = scaleType.getIntOrFloatBitWidth() / 8;
  bool sym = q.getMode() != QuantMode::min;
  int64_t valOff = blockBytes - block * q.getBits() / 8;
  Value blk = arith::DivUIOp::create(bb, l, k, ci(block));
  Value j = arith::RemUIOp::create(bb, l, k, ci(block));
  Value base = arith::MulIOp::create(bb, l, blk, ci(blockBytes));
  auto byteAt = [&](Value off) -> Value {
    SmallVector<Value> idx(rowIndices);
    idx.push_back(off);
    return tensor::ExtractOp::create(bb, l, bytes, idx);
  };
  auto scaleAt = [&](Value off) -> Value {
    Type it = bb.getIntegerType(scaleBytes * 8);
    Value bits;
    for (int64_t i = 0; i < scaleBytes; ++i) {
      Value byte = arith::ExtUIOp::create(
          bb, l, it,
          byteAt(i ? arith::AddIOp::create(bb, l, off, ci(i)).getResult()
                   : off));
      if (i)
        byte = arith::ShLIOp::create(
            bb, l, byte, arith::ConstantIntOp::create(bb, l, it, 8 * i));
      bits = bits ? arith::OrIOp::create(bb, l, bits, byte).getResult()
                  : byte;
    }
    Value h = arith::BitcastOp::create(bb, l, scaleType, bits);
    return scaleType.isF32() ? h : arith::ExtFOp::create(bb, l, f32, h);
  };
  Value d = scaleAt(base);
  Value valBase = arith::AddIOp::create(bb, l, base, ci(valOff));
  Value qv;
  if (q.getBits() == 8) {
    Value v = byteAt(arith::AddIOp::create(bb, l, valBase, j));
    qv = sym ? arith::SIToFPOp::create(bb, l, f32, v).getResult()
             : arith::UIToFPOp::create(bb, l, f32, v).getResult();
  } else {
    Value jh = arith::RemUIOp::create(bb, l, j, ci(block / 2));
    Value byte = byteAt(arith::AddIOp::create(bb, l, valBase, jh));
    Value high = arith::CmpIOp::create(bb, l, arith::CmpIPredicate::uge, j,
                                       ci(block / 2));
    Value shift = arith::SelectOp::create(
        bb, l, high, arith::ConstantIntOp::create(bb, l, i8, 4),
        arith::ConstantIntOp::create(bb, l, i8, 0));
    Value nib = arith::AndIOp::create(
        bb, l, arith::ShRUIOp::create(bb, l, byte, shift),
        arith::ConstantIntOp::create(bb, l, i8, 15));
    qv = arith::UIToFPOp::create(bb, l, f32, nib);
    if (sym)
      qv = arith::SubFOp::create(
          bb, l, qv, arith::ConstantOp::create(bb, l, bb.getF32FloatAttr(8.0)));
  }
  Value p = arith::MulFOp::create(bb, l, d, qv);
  if (sym)
    return p;
  Value m = scaleAt(arith::AddIOp::create(bb, l, base, ci(scaleBytes)));
  return arith::AddFOp::create(bb, l, p, m);
}

FailureOr<Value> Lowerer::dequantize(Operation *op, Value weight) {
  auto it = quantOf.find(weight);
  if (it == quantOf.end())
    return op->emitOpError()
           << "quantized values lower to CPU code only when they are "
              "weights of an entry point (GGUF blocks)";
  if (interleaved.contains(weight))
    return op->emitOpError() << "cannot dequantize a weight stored in the "
                                "interleaved layout (only loom.qmatmul "
                                "kernels read it)";
  QTensorType q = it->second;
  auto type = q.getDequantizedType();
  SmallVector<Value> sizes;
  for (int64_t d : type.getShape())
    sizes.push_back(cIndex(d));
  QuantAttr quant = q.getQuant();
  int64_t rank = type.getRank();
  return generic(type, {}, {}, sizes,
                 [&](OpBuilder &bb, Location l, ValueRange) -> Value {
                   SmallVector<Value> rows;
                   for (int64_t d = 0; d + 1 < rank; ++d)
                     rows.push_back(linalg::IndexOp::create(bb, l, d));
                   Value k = linalg::IndexOp::create(bb, l, rank - 1);
                   return dequantElement(bb, l, weight, rows, k, quant);
                 });
}

FailureOr<Value> Lowerer::quantizedMatmulKernel(QMatmulOp op) {
  auto it = quantOf.find(op.getWeight());
  if (it == quantOf.end())
    return op->emitOpError()
           << "quantized values lower to CPU code only when they are "
              "weights of an entry point";
  QTensorType qt = it->second;
  Value x = op.getInput();
  auto xt = cast<RankedTensorType>(x.getType());
  auto type = op.getResult().getType();
  bool interleave = interleaved.contains(op.getWeight());
  QMatmulLowering how = chooseQMatmulLowering(op, qt, qmatmulMode);
  if (interleave && (!how.kernel || !activationLevels(how.act)))
    return op->emitOpError()
           << "the weight is in the interleaved layout, which only the "
              "int8-activation kernel reads";
  if (!how.kernel)
    return Value();
  int64_t k = qt.getShape()[1];
  func::FuncOp kernel =
      getOrCreateQMatmulKernel(module, qt.getQuant(), k, how.act,
                               how.targetIsa, interleave, tuning);
  int64_t dyn = ShapedType::kDynamic;
  int64_t rank = xt.getRank();
  // x as [M, K], y allocated with its final shape [..., N] and passed as
  // [M, N]: contiguous row-major views of the same buffers.
  auto collapse = [&](Value m) -> Value {
    if (rank == 2)
      return m;
    SmallVector<ReassociationIndices> re(2);
    for (int64_t d = 0; d + 1 < rank; ++d)
      re[0].push_back(d);
    re[1].push_back(rank - 1);
    return memref::CollapseShapeOp::create(b, loc, m, re);
  };
  auto castTo = [&](Value m, ArrayRef<int64_t> shape, Type elt) -> Value {
    return memref::CastOp::create(b, loc, MemRefType::get(shape, elt), m);
  };
  SmallVector<Value> ySizes;
  for (int64_t d = 0; d + 1 < rank; ++d)
    ySizes.push_back(dim(x, d));
  ySizes.push_back(cIndex(qt.getShape()[0]));
  Value xb = castTo(collapse(bufferOf(x)), {dyn, k}, b.getF32Type());
  Value wv = op.getWeight();
  auto wst = cast<RankedTensorType>(wv.getType());
  Value wb = castTo(bufferOf(wv), {dyn, wst.getShape().back()},
                    b.getI8Type());
  Value yAlloc = allocLike(type, ySizes);
  Value yb = castTo(collapse(yAlloc), {dyn, dyn}, b.getF32Type());
  SmallVector<Value> args{xb, wb, yb};
  if (int64_t levels = activationLevels(how.act)) {
    // Scratch of the int8 activations: codes, scales, offsets, sums.
    Value m = numElements(x, 0, rank - 1);
    int64_t nb = k / qt.getQuant().getBlockSize();
    for (auto [cols, elt] :
         {std::pair<int64_t, Type>{levels * k, b.getI8Type()},
          {nb, b.getF32Type()},
          {levels * nb, b.getI32Type()},
          {nb, b.getF32Type()}})
      args.push_back(memref::AllocOp::create(
          b, loc, MemRefType::get({dyn, cols}, elt), ValueRange{m}));
  }
  func::CallOp::create(b, loc, kernel, args);
  return toTensor(yAlloc, type);
}

Value Lowerer::cString(StringRef text) {
  std::string name =
      "loom.str." + llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true);
  if (auto g = module.lookupSymbol<LLVM::GlobalOp>(name))
    return LLVM::AddressOfOp::create(b, loc, g);
  std::string nul = text.str();
  nul.push_back('\0');
  return LLVM::createGlobalString(loc, b, name, nul, LLVM::Linkage::Internal);
}

void Lowerer::checkEmbeddingIds(EmbeddingOp op, bool negative) {
  Value ctx = entryContext(op);
  Value ids = op.getIds(), table = op.getTable();
  auto idType = dyn_cast<RankedTensorType>(ids.getType());
  auto tableType = dyn_cast<RankedTensorType>(table.getType());
  if (!ctx || !idType || !tableType || tableType.getRank() < 1 ||
      !idType.getElementType().isSignlessInteger())
    return; // no context to fail through (a private function)
  // The input the ids come from, as the manifest names it.
  std::string input = "ids";
  if (auto arg = dyn_cast<BlockArgument>(ids);
      arg && arg.getOwner()->isEntryBlock()) {
    auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    unsigned n = 0;
    for (unsigned i = 1; i < arg.getArgNumber(); ++i)
      n += !fn.getArgAttr(i, LoomDialect::kWeightAttrName);
    // An outlined layer's arguments are not the entry's inputs.
    if (fn->hasAttr(LoomDialect::kEntryAttrName))
      input = "input" + std::to_string(n);
    if (auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    "loom.name"))
      input = name.str();
  }
  Type i64 = b.getI64Type();
  Value rows = arith::IndexCastOp::create(b, loc, i64, dim(table, 0));
  // id in [lo, rows) <=> (id - lo) <u (rows - lo), lo = 0 or -rows.
  Value lo = negative ? arith::SubIOp::create(
                            b, loc, arith::ConstantIntOp::create(b, loc, i64, 0),
                            rows)
                      : arith::ConstantIntOp::create(b, loc, i64, 0).getResult();
  Value span = arith::SubIOp::create(b, loc, rows, lo);
  Value inputName = cString(input), opName = cString("loom.embedding");
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d = 0; d < idType.getRank(); ++d) {
    lbs.push_back(cIndex(0));
    ubs.push_back(dim(ids, d));
    steps.push_back(cIndex(1));
  }
  scf::buildLoopNest(
      b, loc, lbs, ubs, steps,
      [&](OpBuilder &bb, Location l, ValueRange ivs) {
        Value id = tensor::ExtractOp::create(bb, l, ids, ivs);
        if (id.getType() != i64)
          id = arith::ExtSIOp::create(bb, l, i64, id);
        // Below lo is huge unsigned: one compare covers both ends.
        Value bad = arith::CmpIOp::create(
            bb, l, arith::CmpIPredicate::uge,
            negative ? arith::SubIOp::create(bb, l, id, lo).getResult() : id,
            span);
        scf::IfOp::create(bb, l, bad, [&](OpBuilder &tb, Location tl) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
          callRuntime("loom_rt_index_error",
                      ValueRange{ctx, inputName, id, lo, rows, opName});
          scf::YieldOp::create(tb, tl);
        });
      });
}

FailureOr<Value> Lowerer::quantizedEmbedding(EmbeddingOp op) {
  Value table = op.getTable();
  auto it = quantOf.find(table);
  if (it == quantOf.end())
    return op.emitOpError() << "quantized embedding tables lower to CPU "
                               "code only as entry-point weights";
  if (interleaved.contains(table))
    return op.emitOpError() << "an embedding table cannot be stored in the "
                               "interleaved layout";
  QuantAttr quant = it->second.getQuant();
  Value ids = op.getIds();
  auto type = op.getResult().getType();
  unsigned rank = type.getRank();
  SmallVector<Value> sizes;
  for (unsigned d = 0; d + 1 < rank; ++d)
    sizes.push_back(dim(ids, d));
  sizes.push_back(cIndex(type.getShape().back()));
  SmallVector<AffineExpr> idExprs;
  for (unsigned d = 0; d + 1 < rank; ++d)
    idExprs.push_back(b.getAffineDimExpr(d));
  AffineMap idMap = AffineMap::get(rank, 0, idExprs, b.getContext());
  return generic(type, {ids}, {idMap}, sizes,
                 [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
                   Value row = arith::IndexCastOp::create(
                       bb, l, bb.getIndexType(), a[0]);
                   Value k = linalg::IndexOp::create(bb, l, rank - 1);
                   return dequantElement(bb, l, table, ValueRange{row}, k,
                                         quant);
                 });
}

//===----------------------------------------------------------------------===//
// Composite ops
//===----------------------------------------------------------------------===//

Value Lowerer::lowerReduce(ReduceOp op) {
  Value input = op.getInput();
  auto t = op.getInput().getType();
  SmallVector<int64_t> axes;
  for (int64_t a : op.getAxes())
    axes.push_back(a < 0 ? a + t.getRank() : a);
  llvm::sort(axes);
  Type et = t.getElementType();
  bool f = isFloat(et);
  Value r;
  switch (op.getKind()) {
  case ReduceKind::sum:
  case ReduceKind::mean:
    r = reduce(input, axes, 0.0,
               [f](OpBuilder &bb, Location l, Value acc, Value x) -> Value {
                 return f ? arith::AddFOp::create(bb, l, acc, x).getResult()
                          : arith::AddIOp::create(bb, l, acc, x).getResult();
               });
    break;
  case ReduceKind::prod:
    r = reduce(input, axes, 1.0,
               [f](OpBuilder &bb, Location l, Value acc, Value x) -> Value {
                 return f ? arith::MulFOp::create(bb, l, acc, x).getResult()
                          : arith::MulIOp::create(bb, l, acc, x).getResult();
               });
    break;
  case ReduceKind::max:
    r = reduce(input, axes, -INFINITY,
               [f](OpBuilder &bb, Location l, Value acc, Value x) -> Value {
                 return f ? arith::MaximumFOp::create(bb, l, acc, x)
                                .getResult()
                          : arith::MaxSIOp::create(bb, l, acc, x).getResult();
               });
    break;
  case ReduceKind::min:
    r = reduce(input, axes, INFINITY,
               [f](OpBuilder &bb, Location l, Value acc, Value x) -> Value {
                 return f ? arith::MinimumFOp::create(bb, l, acc, x)
                                .getResult()
                          : arith::MinSIOp::create(bb, l, acc, x).getResult();
               });
    break;
  }
  auto rt = cast<RankedTensorType>(r.getType());
  if (op.getKind() == ReduceKind::mean) {
    Value count = cIndex(1);
    for (int64_t a : axes)
      count = arith::MulIOp::create(b, loc, count, dim(input, a));
    Value n = indexToFloat(count, et);
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < rt.getRank(); ++d)
      sizes.push_back(dim(r, d));
    r = generic(rt, {r}, {b.getMultiDimIdentityMap(rt.getRank())}, sizes,
                [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
                  return arith::DivFOp::create(bb, l, a[0], n);
                });
  }
  if (!op.getKeepDims())
    return r;
  return reshape(r, op.getResult().getType());
}

Value Lowerer::lowerRmsNorm(RmsNormOp op) {
  Value x = op.getInput();
  auto t = op.getInput().getType();
  Type et = t.getElementType();
  int64_t rank = t.getRank(), last = rank - 1;
  Value ss = reduce(
      x, {last}, 0.0,
      [](OpBuilder &bb, Location l, Value acc, Value v) -> Value {
        return arith::AddFOp::create(bb, l, acc, v);
      },
      [](OpBuilder &bb, Location l, Value v) -> Value {
        return arith::MulFOp::create(bb, l, v, v);
      });
  Value n = indexToFloat(dim(x, last), et);
  Value eps = cFloat(b, loc, et, op.getEpsilon().convertToDouble());
  SmallVector<Value> inputs{x, ss};
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank),
                              dropDimsMap(rank, {last})};
  if (op.getScale()) {
    inputs.push_back(op.getScale());
    maps.push_back(AffineMap::get(rank, 0, {b.getAffineDimExpr(last)},
                                  b.getContext()));
  }
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(dim(x, d));
  bool hasScale = static_cast<bool>(op.getScale());
  return generic(op.getResult().getType(), inputs, maps, sizes,
                 [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
                   Value ms = arith::DivFOp::create(bb, l, a[1], n);
                   Value r = math::RsqrtOp::create(
                       bb, l, arith::AddFOp::create(bb, l, ms, eps));
                   Value y = arith::MulFOp::create(bb, l, a[0], r);
                   if (hasScale)
                     y = arith::MulFOp::create(bb, l, y, a[2]);
                   return y;
                 });
}

Value Lowerer::lowerLayerNorm(LayerNormOp op) {
  Value x = op.getInput();
  auto t = op.getInput().getType();
  Type et = t.getElementType();
  int64_t rank = t.getRank();
  int64_t axis = normAxis(op.getAxis(), rank);
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  Value n = indexToFloat(numElements(x, axis, rank), et);
  auto add = [](OpBuilder &bb, Location l, Value acc, Value v) -> Value {
    return arith::AddFOp::create(bb, l, acc, v);
  };
  Value sum = reduce(x, axes, 0.0, add);
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap drop = dropDimsMap(rank, axes);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(dim(x, d));
  // Centre first, then the variance of the centred values (two passes:
  // better conditioned than E[x^2] - E[x]^2).
  Value centred = generic(t, {x, sum}, {id, drop}, sizes,
                          [&](OpBuilder &bb, Location l, ValueRange a) {
                            Value mean = arith::DivFOp::create(bb, l, a[1], n);
                            return Value(
                                arith::SubFOp::create(bb, l, a[0], mean));
                          });
  Value sq = reduce(
      centred, axes, 0.0, add, [](OpBuilder &bb, Location l, Value v) {
        return Value(arith::MulFOp::create(bb, l, v, v));
      });
  Value eps = cFloat(b, loc, et, op.getEpsilon().convertToDouble());
  SmallVector<Value> inputs{centred, sq};
  SmallVector<AffineMap> maps{id, drop};
  SmallVector<AffineExpr> tail;
  for (int64_t d = axis; d < rank; ++d)
    tail.push_back(b.getAffineDimExpr(d));
  AffineMap tailMap = AffineMap::get(rank, 0, tail, b.getContext());
  bool hasScale = static_cast<bool>(op.getScale());
  bool hasBias = static_cast<bool>(op.getBias());
  if (hasScale) {
    inputs.push_back(op.getScale());
    maps.push_back(tailMap);
  }
  if (hasBias) {
    inputs.push_back(op.getBias());
    maps.push_back(tailMap);
  }
  return generic(op.getResult().getType(), inputs, maps, sizes,
                 [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
                   Value var = arith::DivFOp::create(bb, l, a[1], n);
                   Value r = math::RsqrtOp::create(
                       bb, l, arith::AddFOp::create(bb, l, var, eps));
                   Value y = arith::MulFOp::create(bb, l, a[0], r);
                   unsigned next = 2;
                   if (hasScale)
                     y = arith::MulFOp::create(bb, l, y, a[next++]);
                   if (hasBias)
                     y = arith::AddFOp::create(bb, l, y, a[next++]);
                   return y;
                 });
}

Value Lowerer::lowerSlice(SliceOp op) {
  Value x = op.getInput();
  auto t = op.getInput().getType();
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    int64_t start = op.getStarts()[d], limit = op.getLimits()[d],
            step = op.getSteps()[d];
    offsets.push_back(b.getIndexAttr(start));
    strides.push_back(b.getIndexAttr(step));
    if (!t.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr((limit - start + step - 1) / step));
      continue;
    }
    // size = max(0, ceil((min(limit, dim) - start) / step))
    Value end = arith::MinUIOp::create(b, loc, dim(x, d), cIndex(limit));
    Value span = arith::SubIOp::create(
        b, loc, arith::MaxUIOp::create(b, loc, end, cIndex(start)),
        cIndex(start));
    Value n = arith::CeilDivUIOp::create(b, loc, span, cIndex(step));
    sizes.push_back(n);
  }
  auto type = op.getResult().getType();
  auto slice = tensor::ExtractSliceOp::create(b, loc, x, offsets, sizes,
                                              strides);
  Value v = slice.getResult();
  if (v.getType() != type)
    v = tensor::CastOp::create(b, loc, type, v);
  return v;
}

Value Lowerer::lowerGather(Value data, Value indices, int64_t axis,
                           RankedTensorType type) {
  auto it = cast<RankedTensorType>(indices.getType());
  unsigned rank = type.getRank(), ir = it.getRank();
  SmallVector<Value> sizes;
  for (unsigned d = 0; d < rank; ++d) {
    if (d < axis)
      sizes.push_back(dim(data, d));
    else if (d < axis + ir)
      sizes.push_back(dim(indices, d - axis));
    else
      sizes.push_back(dim(data, d - ir + 1));
  }
  SmallVector<AffineExpr> idxExprs;
  for (unsigned k = 0; k < ir; ++k)
    idxExprs.push_back(b.getAffineDimExpr(axis + k));
  AffineMap idxMap = AffineMap::get(rank, 0, idxExprs, b.getContext());
  Value axisSize = dim(data, axis);
  return generic(
      type, {indices}, {idxMap}, sizes,
      [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
        Value idx = arith::IndexCastOp::create(bb, l, bb.getIndexType(), a[0]);
        // Negative indices count from the end (ONNX Gather).
        Value zero = arith::ConstantIndexOp::create(bb, l, 0);
        Value neg = arith::CmpIOp::create(bb, l, arith::CmpIPredicate::slt,
                                          idx, zero);
        idx = arith::SelectOp::create(
            bb, l, neg, arith::AddIOp::create(bb, l, idx, axisSize), idx);
        SmallVector<Value> coords;
        for (unsigned d = 0; d < axis; ++d)
          coords.push_back(linalg::IndexOp::create(bb, l, d));
        coords.push_back(idx);
        for (unsigned d = axis + ir; d < rank; ++d)
          coords.push_back(linalg::IndexOp::create(bb, l, d));
        return tensor::ExtractOp::create(bb, l, data, coords);
      });
}

Value Lowerer::lowerRotary(RotaryOp op) {
  Value x = op.getInput(), cosT = op.getCos(), sinT = op.getSin();
  auto t = op.getInput().getType();
  auto ct = op.getCos().getType();
  bool interleaved = op.getStyle() == RotaryStyle::interleaved;
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < 4; ++d)
    sizes.push_back(dim(x, d));
  Value r = dim(cosT, ct.getRank() - 1);
  bool batchedTable = ct.getRank() == 3;
  bool broadcastBatch = batchedTable && ct.getDimSize(0) == 1;
  return generic(
      t, {x}, {b.getMultiDimIdentityMap(4)}, sizes,
      [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
        auto ci = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(bb, l, v);
        };
        Value bi = linalg::IndexOp::create(bb, l, 0);
        Value hi = linalg::IndexOp::create(bb, l, 1);
        Value si = linalg::IndexOp::create(bb, l, 2);
        Value di = linalg::IndexOp::create(bb, l, 3);
        Value twoR = arith::MulIOp::create(bb, l, r, ci(2));
        Value inRot = arith::CmpIOp::create(bb, l, arith::CmpIPredicate::ult,
                                            di, twoR);
        Value first, idx, partner;
        if (interleaved) {
          // pairs (2i, 2i+1): even d pairs with d+1 (sign -), odd with d-1.
          idx = arith::DivUIOp::create(bb, l, di, ci(2));
          Value odd = arith::RemUIOp::create(bb, l, di, ci(2));
          first = arith::CmpIOp::create(bb, l, arith::CmpIPredicate::eq, odd,
                                        ci(0));
          partner = arith::SelectOp::create(
              bb, l, first, arith::AddIOp::create(bb, l, di, ci(1)),
              arith::SubIOp::create(bb, l, di, ci(1)));
        } else {
          // halves: d < R pairs with d+R (sign -), R <= d < 2R with d-R.
          first = arith::CmpIOp::create(bb, l, arith::CmpIPredicate::ult, di,
                                        r);
          Value dMinusR = arith::SubIOp::create(bb, l, di, r);
          idx = arith::SelectOp::create(bb, l, first, di, dMinusR);
          partner = arith::SelectOp::create(
              bb, l, first, arith::AddIOp::create(bb, l, di, r), dMinusR);
        }
        // Outside the rotated part, read safe in-bounds positions.
        idx = arith::SelectOp::create(bb, l, inRot, idx, ci(0));
        partner = arith::SelectOp::create(bb, l, inRot, partner, di);
        SmallVector<Value> tc;
        if (batchedTable)
          tc.push_back(broadcastBatch ? ci(0) : bi);
        tc.push_back(si);
        tc.push_back(idx);
        Value c = tensor::ExtractOp::create(bb, l, cosT, tc);
        Value s = tensor::ExtractOp::create(bb, l, sinT, tc);
        Value xp = tensor::ExtractOp::create(bb, l, x,
                                             ValueRange{bi, hi, si, partner});
        Value sx = arith::MulFOp::create(bb, l, xp, s);
        Value signed_ = arith::SelectOp::create(
            bb, l, first, arith::NegFOp::create(bb, l, sx), sx);
        Value rot = arith::AddFOp::create(
            bb, l, arith::MulFOp::create(bb, l, a[0], c), signed_);
        return arith::SelectOp::create(bb, l, inRot, rot, a[0]);
      });
}

SmallVector<Value> Lowerer::lowerRotaryTable(RotaryTableOp op) {
  Value pos = op.getPositions();
  auto type = op.getCos().getType();
  unsigned rank = type.getRank();
  Type et = type.getElementType();
  SmallVector<Value> sizes;
  for (unsigned d = 0; d + 1 < rank; ++d)
    sizes.push_back(dim(pos, d));
  sizes.push_back(cIndex(op.getDim() / 2));
  Value initC = emptyAll(type, sizes), initS = emptyAll(type, sizes);
  SmallVector<AffineExpr> pe;
  for (unsigned d = 0; d + 1 < rank; ++d)
    pe.push_back(b.getAffineDimExpr(d));
  SmallVector<AffineMap> maps{
      AffineMap::get(rank, 0, pe, b.getContext()),
      b.getMultiDimIdentityMap(rank), b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  double logTheta = std::log((double)op.getTheta().convertToFloat());
  int64_t dimAttr = op.getDim();
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{type, type}, ValueRange{pos},
      ValueRange{initC, initS}, maps, iters,
      [&](OpBuilder &bb, Location l, ValueRange a) {
        Value i = linalg::IndexOp::create(bb, l, rank - 1);
        Value fi = arith::SIToFPOp::create(
            bb, l, bb.getF32Type(),
            arith::IndexCastOp::create(bb, l, bb.getI64Type(), i));
        // inv_freq = theta^(-2i/dim) = exp(-2i/dim * ln(theta))
        Value k = cFloat(bb, l, bb.getF32Type(), -2.0 * logTheta / dimAttr);
        Value inv = math::ExpOp::create(
            bb, l, arith::MulFOp::create(bb, l, fi, k));
        Value p = arith::SIToFPOp::create(bb, l, bb.getF32Type(), a[0]);
        Value ang = arith::MulFOp::create(bb, l, p, inv);
        Value c = scalarCast(bb, l, math::CosOp::create(bb, l, ang), et);
        Value s = scalarCast(bb, l, math::SinOp::create(bb, l, ang), et);
        linalg::YieldOp::create(bb, l, ValueRange{c, s});
      });
  return {g.getResult(0), g.getResult(1)};
}

FailureOr<SmallVector<Value>> Lowerer::lowerAttention(AttentionOp op) {
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  auto qt = op.getQuery().getType();
  auto kt = op.getKey().getType();
  Type et = qt.getElementType();
  int64_t hq = qt.getDimSize(1), hkv = kt.getDimSize(1);
  if (isDyn(hq) || isDyn(hkv))
    return op.emitOpError() << "the CPU lowering needs static head counts";
  int64_t group = hq / hkv;
  SmallVector<Value> results;
  if (op.getPastKey()) {
    auto pk = cast<RankedTensorType>(op.getPresent()[0].getType());
    auto pv = cast<RankedTensorType>(op.getPresent()[1].getType());
    k = concat({op.getPastKey(), k}, 2, pk);
    v = concat({op.getPastValue(), v}, 2, pv);
  }
  Value cacheKey, cacheValue;
  if (op.getCacheKey()) {
    // Write the S new rows at [p0, p0 + S) of the caches (in place when the
    // caches are writable entry arguments), then attend over [0, p0 + S)
    // of the updated caches: only the filled part is read.
    Value p0 = tensor::ExtractOp::create(b, loc, op.getCachePositions(),
                                         ValueRange{cIndex(0)});
    p0 = arith::IndexCastOp::create(b, loc, b.getIndexType(), p0);
    Value len = dim(k, 2);
    Value filled = arith::AddIOp::create(b, loc, p0, len);
    auto write = [&](Value cache, Value rows) {
      auto ct = cast<RankedTensorType>(cache.getType());
      SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(0),
                                        p0, b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes, viewSizes;
      for (unsigned i = 0; i < 4; ++i) {
        sizes.push_back(i == 2 ? OpFoldResult(len) : dimOfr(rows, i));
        viewSizes.push_back(i == 2 ? OpFoldResult(filled) : dimOfr(cache, i));
      }
      SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
      SmallVector<OpFoldResult> zeros(4, b.getIndexAttr(0));
      Value updated = tensor::InsertSliceOp::create(b, loc, rows, cache,
                                                    offsets, sizes, ones);
      SmallVector<int64_t> viewShape(ct.getShape());
      viewShape[2] = ShapedType::kDynamic;
      Value view = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get(viewShape, ct.getElementType()),
          updated, zeros, viewSizes, ones);
      return std::make_pair(updated, view);
    };
    std::tie(cacheKey, k) = write(op.getCacheKey(), k);
    std::tie(cacheValue, v) = write(op.getCacheValue(), v);
  }
  auto kAll = cast<RankedTensorType>(k.getType());
  Value B = dim(q, 0), S = dim(q, 2), T = dim(k, 2),
        Dv = dim(v, 3);
  int64_t headDim = qt.getDimSize(3);
  double scale = op.getScale() ? op.getScale()->convertToDouble()
                               : 1.0 / std::sqrt((double)headDim);
  if (isDyn(headDim) && !op.getScale())
    return op.emitOpError() << "the CPU lowering needs a static head_dim "
                               "or an explicit scale";
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
  AffineExpr kvHead = d(1).floorDiv(group);

  // scores[b,h,s,t] = scale * sum_d q[b,h,s,d] k[b,h/G,t,d]
  auto scoresType = RankedTensorType::get(
      {qt.getDimSize(0), hq, qt.getDimSize(2), kAll.getDimSize(2)}, et);
  SmallVector<utils::IteratorType> it5(5, utils::IteratorType::parallel);
  it5[4] = utils::IteratorType::reduction;
  Value scores = attentionGemm(op, q, k, /*tb=*/true, hq, group, scoresType,
                               {B, cIndex(hq), S, T}, cacheKey);
  if (!scores) {
    Value init = fill(emptyAll(scoresType, {B, cIndex(hq), S, T}),
                      cFloat(b, loc, et, 0.0));
    scores =
        linalg::GenericOp::create(
            b, loc, TypeRange{scoresType}, ValueRange{q, k}, ValueRange{init},
            ArrayRef<AffineMap>{
                AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx),
                AffineMap::get(5, 0, {d(0), kvHead, d(3), d(4)}, ctx),
                AffineMap::get(5, 0, {d(0), d(1), d(2), d(3)}, ctx)},
            it5,
            [](OpBuilder &bb, Location l, ValueRange a) {
              Value p = arith::MulFOp::create(bb, l, a[0], a[1]);
              linalg::YieldOp::create(
                  bb, l, Value(arith::AddFOp::create(bb, l, a[2], p)));
            })
            .getResult(0);
  }

  // Scale, then the causal and explicit masks.
  Value mask = op.getMask();
  bool causal = op.getCausal();
  bool boolMask = mask && cast<RankedTensorType>(mask.getType())
                              .getElementType()
                              .isInteger(1);
  SmallVector<Value> ins{scores};
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(4)};
  if (mask) {
    ins.push_back(mask);
    maps.push_back(broadcastMap(mask, 4));
  }
  Value offset = arith::SubIOp::create(b, loc, T, S); // cache length
  scores = generic(
      scoresType, ins, maps, {B, cIndex(hq), S, T},
      [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
        Value s = arith::MulFOp::create(bb, l, a[0],
                                        cFloat(bb, l, et, scale));
        Value ninf = cFloat(bb, l, et, -INFINITY);
        if (mask) {
          if (boolMask)
            s = arith::SelectOp::create(bb, l, a[1], s, ninf);
          else
            s = arith::AddFOp::create(bb, l, s, scalarCast(bb, l, a[1], et));
        }
        if (causal) {
          Value si = linalg::IndexOp::create(bb, l, 2);
          Value ti = linalg::IndexOp::create(bb, l, 3);
          Value limit = arith::AddIOp::create(bb, l, si, offset);
          Value future = arith::CmpIOp::create(
              bb, l, arith::CmpIPredicate::ugt, ti, limit);
          s = arith::SelectOp::create(bb, l, future, ninf, s);
        }
        return s;
      });
  Value probs = softmax(scores, 3);

  // out[b,h,s,e] = sum_t p[b,h,s,t] v[b,h/G,t,e]
  auto outType = op.getOutput().getType();
  Value out = attentionGemm(op, probs, v, /*tb=*/false, hq, group, outType,
                            {B, cIndex(hq), S, Dv}, cacheValue);
  if (!out) {
    Value outInit = fill(emptyAll(outType, {B, cIndex(hq), S, Dv}),
                         cFloat(b, loc, et, 0));
    out = linalg::GenericOp::create(
              b, loc, TypeRange{outType}, ValueRange{probs, v},
              ValueRange{outInit},
              ArrayRef<AffineMap>{
                  AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx),
                  AffineMap::get(5, 0, {d(0), kvHead, d(4), d(3)}, ctx),
                  AffineMap::get(5, 0, {d(0), d(1), d(2), d(3)}, ctx)},
              it5,
              [](OpBuilder &bb, Location l, ValueRange a) {
                Value p = arith::MulFOp::create(bb, l, a[0], a[1]);
                linalg::YieldOp::create(
                    bb, l, Value(arith::AddFOp::create(bb, l, a[2], p)));
              })
              .getResult(0);
  }
  results.push_back(out);
  if (op.getPastKey()) {
    Value pk = k, pv = v;
    if (pk.getType() != op.getPresent()[0].getType())
      pk = tensor::CastOp::create(b, loc, op.getPresent()[0].getType(), pk);
    if (pv.getType() != op.getPresent()[1].getType())
      pv = tensor::CastOp::create(b, loc, op.getPresent()[1].getType(), pv);
    results.push_back(pk);
    results.push_back(pv);
  }
  if (cacheKey) {
    results.push_back(cacheKey);
    results.push_back(cacheValue);
  }
  return results;
}

//===----------------------------------------------------------------------===//
// Runtime calls
//===----------------------------------------------------------------------===//

Value Lowerer::entryContext(Operation *op) {
  auto fn = op->getParentOfType<func::FuncOp>();
  // Layers outlined from entry points take the caller's context first.
  if (!fn ||
      !(fn->hasAttr(LoomDialect::kEntryAttrName) ||
        fn->hasAttr(LoomDialect::kLayerAttrName)) ||
      fn.getNumArguments() == 0 ||
      !isa<LLVM::LLVMPointerType>(fn.getArgument(0).getType()))
    return {};
  return fn.getArgument(0);
}

FailureOr<Value> Lowerer::contextOf(Operation *op) {
  if (Value ctx = entryContext(op))
    return ctx;
  return op->emitOpError()
         << "collectives lower only inside entry points with a runtime "
            "context; run loom-prepare-entry-points first (collectives "
            "in private functions other than outlined layers are not "
            "supported)";
}

func::CallOp Lowerer::callRuntime(StringRef name, ValueRange args,
                                  TypeRange results) {
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    fn = func::FuncOp::create(b, module.getLoc(), name,
                              b.getFunctionType(args.getTypes(), results));
    fn.setPrivate();
  }
  return func::CallOp::create(b, loc, fn, args);
}

/// The buffer of `tensor` for a runtime call that reads it right after.
/// Each call gets its own to_buffer at the call site (CSE must not merge
/// them): the one-shot analysis sees the read there, and keeps the buffer
/// unmodified until then.
Value Lowerer::bufferOf(Value tensor) {
  auto t = cast<RankedTensorType>(tensor.getType());
  auto mt = MemRefType::get(t.getShape(), t.getElementType());
  return bufferization::ToBufferOp::create(b, loc, mt, tensor,
                                           /*read_only=*/true);
}

Value Lowerer::allocLike(RankedTensorType type, ArrayRef<Value> allSizes) {
  auto mt = MemRefType::get(type.getShape(), type.getElementType());
  SmallVector<Value> dyn;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    if (isDyn(d))
      dyn.push_back(allSizes[i]);
  return memref::AllocOp::create(b, loc, mt, dyn);
}

Value Lowerer::ptrOf(Value memref) {
  Value idx = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
  return LLVM::IntToPtrOp::create(b, loc,
                                  LLVM::LLVMPointerType::get(b.getContext()),
                                  i64);
}

Value Lowerer::ptrAt(Value memref, Value offset) {
  Value idx = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  int64_t bytes =
      cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
  idx = arith::AddIOp::create(
      b, loc, idx, arith::MulIOp::create(b, loc, offset, cIndex(bytes)));
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
  return LLVM::IntToPtrOp::create(b, loc,
                                  LLVM::LLVMPointerType::get(b.getContext()),
                                  i64);
}

Value Lowerer::toTensor(Value memref, RankedTensorType type) {
  // Not writable: a runtime call reads its inputs through raw pointers that
  // the bufferization analysis cannot see, so a buffer handed to one call
  // must never be overwritten in place by a later op (to_buffer of this
  // tensor folds to `memref` itself).
  return bufferization::ToTensorOp::create(b, loc, type, memref,
                                           /*restrict=*/true,
                                           /*writable=*/false);
}

FailureOr<std::pair<int64_t, uint64_t>>
Lowerer::groupOf(Operation *op, FlatSymbolRefAttr meshSym, ArrayAttr axes) {
  MeshOp mesh = lookupMesh(op, meshSym);
  if (!mesh)
    return op->emitOpError() << "unknown mesh " << meshSym;
  uint64_t mask = 0;
  for (Attribute a : axes) {
    auto idx = mesh.getMesh().getAxisIndex(cast<StringAttr>(a).getValue());
    if (!idx || *idx >= LOOM_RT_MAX_AXES)
      return op->emitOpError() << "mesh axis " << a
                               << " is not usable by the runtime (at most "
                               << LOOM_RT_MAX_AXES << " axes)";
    mask |= uint64_t(1) << *idx;
  }
  return std::pair{getGroupSize(mesh.getMesh(), axes), mask};
}

FailureOr<Value> Lowerer::peerRank(Operation *op, Value ctx,
                                   FlatSymbolRefAttr meshSym, ArrayAttr axes,
                                   std::optional<int64_t> peer,
                                   std::optional<int64_t> shift) {
  MeshOp meshOp = lookupMesh(op, meshSym);
  if (!meshOp)
    return op->emitOpError() << "unknown mesh " << meshSym;
  MeshAttr mesh = meshOp.getMesh();
  FailureOr<std::pair<int64_t, uint64_t>> group = groupOf(op, meshSym, axes);
  if (failed(group))
    return failure();
  int64_t p = group->first;
  // This rank's coordinates, and its index in the group (row-major over the
  // masked axes in increasing axis order).
  SmallVector<Value> coords;
  for (unsigned a = 0; a < mesh.getNumAxes(); ++a)
    coords.push_back(
        callRuntime("loom_rt_coord", {ctx, cI32(a)}, b.getI64Type())
            .getResult(0));
  SmallVector<unsigned> masked;
  for (unsigned a = 0; a < mesh.getNumAxes(); ++a)
    if (group->second & (uint64_t(1) << a))
      masked.push_back(a);
  Value target;
  if (peer) {
    target = cI64(*peer);
  } else {
    Value mine = cI64(0);
    for (unsigned a : masked)
      mine = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, mine,
                                cI64(mesh.getAxisSizes()[a])),
          coords[a]);
    // (mine + shift) mod p, kept non-negative.
    int64_t s = ((*shift % p) + p) % p;
    target = arith::RemUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, mine, cI64(s)), cI64(p));
  }
  // Delinearise the target over the masked axes, keep the other coordinates.
  for (auto it = masked.rbegin(); it != masked.rend(); ++it) {
    Value size = cI64(mesh.getAxisSizes()[*it]);
    coords[*it] = arith::RemUIOp::create(b, loc, target, size);
    target = arith::DivUIOp::create(b, loc, target, size);
  }
  Value rank = cI64(0);
  for (unsigned a = 0; a < mesh.getNumAxes(); ++a)
    rank = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, rank,
                                      cI64(mesh.getAxisSizes()[a])),
        coords[a]);
  return rank;
}

FailureOr<Value> Lowerer::lowerCollective(Operation *op) {
  FailureOr<Value> ctxOr = contextOf(op);
  if (failed(ctxOr))
    return failure();
  Value ctx = *ctxOr;
  auto dtypeOf = [&](Type t) -> FailureOr<int32_t> {
    int32_t d = runtimeDType(getElementTypeOrSelf(t));
    if (d < 0)
      return op->emitOpError() << "element type " << getElementTypeOrSelf(t)
                               << " cannot be communicated by the runtime";
    return d;
  };
  auto sizesOf = [&](Value v) {
    SmallVector<Value> s;
    for (int64_t d = 0; d < cast<RankedTensorType>(v.getType()).getRank();
         ++d)
      s.push_back(dim(v, d));
    return s;
  };

  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    auto group = groupOf(op, ar.getMeshAttr(), ar.getMeshAxes());
    FailureOr<int32_t> dt = dtypeOf(ar.getType());
    if (failed(group) || failed(dt))
      return failure();
    auto type = cast<RankedTensorType>(ar.getType());
    Value in = bufferOf(ar.getInput());
    Value out = allocLike(type, sizesOf(ar.getInput()));
    callRuntime("loom_rt_all_reduce", ValueRange{ctx, cI32(*dt), cI32(runtimeReduction(ar.getReduction())),
                   ptrOf(in), ptrOf(out),
                   indexToI64(numElements(ar.getInput())),
                   cI64((int64_t)group->second)});
    return toTensor(out, type);
  }
  if (auto ag = dyn_cast<AllGatherOp>(op)) {
    auto group = groupOf(op, ag.getMeshAttr(), ag.getMeshAxes());
    FailureOr<int32_t> dt = dtypeOf(ag.getType());
    if (failed(group) || failed(dt))
      return failure();
    auto inT = cast<RankedTensorType>(ag.getInput().getType());
    auto type = cast<RankedTensorType>(ag.getType());
    int64_t gd = normAxis(ag.getGatherDim(), inT.getRank());
    SmallVector<Value> sizes = sizesOf(ag.getInput());
    sizes[gd] = arith::MulIOp::create(b, loc, sizes[gd],
                                      cIndex(group->first));
    Value in = bufferOf(ag.getInput());
    Value out = allocLike(type, sizes);
    callRuntime("loom_rt_all_gather", ValueRange{ctx, cI32(*dt), ptrOf(in), ptrOf(out),
                   indexToI64(numElements(ag.getInput(), 0, gd)),
                   indexToI64(numElements(ag.getInput(), gd)),
                   cI64((int64_t)group->second)});
    return toTensor(out, type);
  }
  if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    auto group = groupOf(op, rs.getMeshAttr(), rs.getMeshAxes());
    FailureOr<int32_t> dt = dtypeOf(rs.getType());
    if (failed(group) || failed(dt))
      return failure();
    auto inT = cast<RankedTensorType>(rs.getInput().getType());
    auto type = cast<RankedTensorType>(rs.getType());
    int64_t sd = normAxis(rs.getScatterDim(), inT.getRank());
    SmallVector<Value> sizes = sizesOf(rs.getInput());
    sizes[sd] = arith::DivUIOp::create(b, loc, sizes[sd],
                                       cIndex(group->first));
    Value in = bufferOf(rs.getInput());
    Value out = allocLike(type, sizes);
    // inner = (in[sd] / p) * prod(in[sd+1:])
    Value inner = arith::MulIOp::create(
        b, loc, sizes[sd], numElements(rs.getInput(), sd + 1));
    callRuntime("loom_rt_reduce_scatter", ValueRange{ctx, cI32(*dt), cI32(runtimeReduction(rs.getReduction())),
                   ptrOf(in), ptrOf(out),
                   indexToI64(numElements(rs.getInput(), 0, sd)),
                   indexToI64(inner), cI64((int64_t)group->second)});
    return toTensor(out, type);
  }
  if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    auto group = groupOf(op, a2a.getMeshAttr(), a2a.getMeshAxes());
    FailureOr<int32_t> dt = dtypeOf(a2a.getType());
    if (failed(group) || failed(dt))
      return failure();
    int64_t p = group->first;
    Value x = a2a.getInput();
    auto inT = cast<RankedTensorType>(x.getType());
    int64_t rank = inT.getRank();
    int64_t sd = normAxis(a2a.getSplitDim(), rank);
    int64_t cd = normAxis(a2a.getConcatDim(), rank);
    Type et = inT.getElementType();
    // 1. [.., S[sd], ..] -> [.., p, S[sd]/p, ..] -> move p to the front so
    //    that block j (for member j) is contiguous.
    SmallVector<int64_t> s1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == sd) {
        s1.push_back(p);
        s1.push_back(isDyn(inT.getDimSize(d)) ? ShapedType::kDynamic
                                              : inT.getDimSize(d) / p);
      } else {
        s1.push_back(inT.getDimSize(d));
      }
    }
    Value x1 = reshape(x, RankedTensorType::get(s1, et));
    SmallVector<int64_t> perm{sd};
    for (int64_t d = 0; d <= rank; ++d)
      if (d != sd)
        perm.push_back(d);
    Value x2 = transpose(x1, perm);
    auto t2 = cast<RankedTensorType>(x2.getType());
    SmallVector<Value> s2 = sizesOf(x2);
    Value in = bufferOf(x2);
    Value out = allocLike(t2, s2);
    Value block = arith::DivUIOp::create(b, loc, numElements(x2), cIndex(p));
    callRuntime("loom_rt_all_to_all", ValueRange{ctx, cI32(*dt), ptrOf(in), ptrOf(out),
                                    indexToI64(block),
                                    cI64((int64_t)group->second)});
    Value y2 = toTensor(out, t2);
    // 2. [p, L...] -> move p just before L[cd] and merge the two.
    SmallVector<int64_t> back;
    for (int64_t d = 1; d <= rank; ++d) {
      if (d - 1 == cd)
        back.push_back(0);
      back.push_back(d);
    }
    Value y3 = transpose(y2, back);
    return reshape(y3, cast<RankedTensorType>(a2a.getType()));
  }
  if (auto send = dyn_cast<SendOp>(op)) {
    FailureOr<int32_t> dt = dtypeOf(send.getInput().getType());
    FailureOr<Value> peer =
        peerRank(op, ctx, send.getMeshAttr(), send.getMeshAxes(),
                 send.getPeer(), send.getShift());
    if (failed(dt) || failed(peer))
      return failure();
    Value in = bufferOf(send.getInput());
    callRuntime("loom_rt_send", ValueRange{ctx, cI32(*dt), ptrOf(in),
                                    indexToI64(numElements(send.getInput())),
                                    *peer, cI64(send.getChannel())});
    return Value();
  }
  if (auto recv = dyn_cast<RecvOp>(op)) {
    auto type = cast<RankedTensorType>(recv.getType());
    if (!type.hasStaticShape())
      return op->emitOpError() << "loom.recv needs a static shape to lower";
    FailureOr<int32_t> dt = dtypeOf(type);
    FailureOr<Value> peer =
        peerRank(op, ctx, recv.getMeshAttr(), recv.getMeshAxes(),
                 recv.getPeer(), recv.getShift());
    if (failed(dt) || failed(peer))
      return failure();
    Value out = allocLike(type, {});
    callRuntime("loom_rt_recv", ValueRange{ctx, cI32(*dt), ptrOf(out), cI64(type.getNumElements()),
                   *peer, cI64(recv.getChannel())});
    return toTensor(out, type);
  }
  return op->emitOpError() << "is not a collective";
}

/// This rank's block of a replicated value: the block index of dimension d
/// is the row-major linearisation of the rank's coordinates over split[d]
/// in the listed order (one loom_rt_group_index when that is mesh order, as
/// the runtime numbers groups). The block is copied into a fresh tensor so
/// that a runtime call reading it gets a contiguous buffer.
FailureOr<Value> Lowerer::lowerLocalSlice(LocalSliceOp op) {
  MeshOp meshOp = lookupMesh(op, op.getMeshAttr());
  if (!meshOp)
    return op.emitOpError() << "unknown mesh " << op.getMeshAttr();
  MeshAttr mesh = meshOp.getMesh();
  FailureOr<Value> ctxOr = contextOf(op);
  if (failed(ctxOr))
    return failure();
  Value ctx = *ctxOr;
  Value in = op.getInput();
  auto type = op.getResult().getType();
  SmallVector<OpFoldResult> offsets, sizes,
      strides(type.getRank(), b.getIndexAttr(1));
  for (auto [d, entry] : llvm::enumerate(op.getSplit())) {
    auto axes = cast<ArrayAttr>(entry);
    if (axes.empty()) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(dimOfr(in, d));
      continue;
    }
    SmallVector<unsigned> idx;
    int64_t parts = 1;
    for (Attribute a : axes) {
      auto ax = mesh.getAxisIndex(cast<StringAttr>(a).getValue());
      if (!ax || *ax >= LOOM_RT_MAX_AXES)
        return op.emitOpError() << "mesh axis " << a
                                << " is not usable by the runtime (at most "
                                << LOOM_RT_MAX_AXES << " axes)";
      idx.push_back(*ax);
      parts *= mesh.getAxisSizes()[*ax];
    }
    Value block;
    if (llvm::is_sorted(idx)) {
      uint64_t mask = 0;
      for (unsigned ax : idx)
        mask |= uint64_t(1) << ax;
      block = callRuntime("loom_rt_group_index", {ctx, cI64((int64_t)mask)},
                          b.getI64Type())
                  .getResult(0);
    } else {
      block = cI64(0);
      for (unsigned ax : idx) {
        Value c = callRuntime("loom_rt_coord", {ctx, cI32(ax)},
                              b.getI64Type())
                      .getResult(0);
        block = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, block,
                                  cI64(mesh.getAxisSizes()[ax])),
            c);
      }
    }
    Value local = type.isDynamicDim(d)
                      ? arith::DivUIOp::create(b, loc, dim(in, d),
                                               cIndex(parts))
                            .getResult()
                      : cIndex(type.getDimSize(d));
    Value blockIdx =
        arith::IndexCastOp::create(b, loc, b.getIndexType(), block);
    offsets.push_back(
        arith::MulIOp::create(b, loc, blockIdx, local).getResult());
    sizes.push_back(type.isDynamicDim(d) ? OpFoldResult(local)
                                         : b.getIndexAttr(type.getDimSize(d)));
  }
  Value slice = tensor::ExtractSliceOp::create(b, loc, type, in, offsets,
                                               sizes, strides);
  return elementwise(
      type, ValueRange{slice},
      [](OpBuilder &, Location, ValueRange a) -> Value { return a[0]; });
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult Lowerer::lowerOp(Operation *op) {
  loc = op->getLoc();
  b.setInsertionPoint(op);
  Value result;
  if (auto w = dyn_cast<WeightOp>(op))
    return w.emitOpError() << "weights must be outlined to arguments first "
                              "(loom-prepare-entry-points)";
  if (auto c = dyn_cast<ConstantOp>(op)) {
    result = arith::ConstantOp::create(b, loc, cast<TypedAttr>(c.getValue()));
  } else if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, AndOp,
                 OrOp>(op)) {
    result = elementwise(
        cast<RankedTensorType>(op->getResult(0).getType()),
        op->getOperands(),
        [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
          return scalarBinary(op, bb, l, a[0], a[1]);
        });
  } else if (isa<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp,
                 SinOp, CosOp, TanhOp, SigmoidOp, SiluOp, ReluOp, ErfOp,
                 NotOp, GeluOp>(op)) {
    result = elementwise(
        cast<RankedTensorType>(op->getResult(0).getType()),
        op->getOperands(),
        [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
          return scalarUnary(op, bb, l, a[0]);
        });
  } else if (auto cmp = dyn_cast<CompareOp>(op)) {
    CompareKind kind = cmp.getPredicate();
    result = elementwise(
        cmp.getResult().getType(), op->getOperands(),
        [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
          return scalarCompare(kind, bb, l, a[0], a[1]);
        });
  } else if (auto sel = dyn_cast<SelectOp>(op)) {
    result = elementwise(
        sel.getResult().getType(), op->getOperands(),
        [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
          return arith::SelectOp::create(bb, l, a[0], a[1], a[2]);
        });
  } else if (auto cast_ = dyn_cast<CastOp>(op)) {
    Type to = cast_.getResult().getType().getElementType();
    result = elementwise(
        cast_.getResult().getType(), op->getOperands(),
        [&](OpBuilder &bb, Location l, ValueRange a) -> Value {
          return scalarCast(bb, l, a[0], to);
        });
  } else if (auto bc = dyn_cast<BroadcastOp>(op)) {
    result = elementwise(
        bc.getResult().getType(), op->getOperands(),
        [](OpBuilder &, Location, ValueRange a) -> Value { return a[0]; });
  } else if (auto mm = dyn_cast<MatmulOp>(op)) {
    result = matmulByGemm(op, mm.getLhs(), mm.getRhs(), mm.getTransposeA(),
                          mm.getTransposeB(), mm.getResult().getType());
    if (!result)
      result = matmul(mm.getLhs(), mm.getRhs(), mm.getTransposeA(),
                      mm.getTransposeB(), mm.getResult().getType());
  } else if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    int64_t rank = sm.getInput().getType().getRank();
    int64_t axis = normAxis(sm.getAxis(), rank);
    result = softmax(sm.getInput(), axis);
  } else if (auto red = dyn_cast<ReduceOp>(op)) {
    result = lowerReduce(red);
  } else if (auto rms = dyn_cast<RmsNormOp>(op)) {
    result = lowerRmsNorm(rms);
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    result = lowerLayerNorm(ln);
  } else if (auto rs = dyn_cast<ReshapeOp>(op)) {
    FailureOr<Value> r = reshapeTo(op, rs.getInput(),
                                   rs.getResult().getType());
    if (failed(r))
      return failure();
    result = *r;
  } else if (auto tr = dyn_cast<TransposeOp>(op)) {
    result = transpose(tr.getInput(), tr.getPermutation());
    if (result.getType() != tr.getResult().getType())
      result = tensor::CastOp::create(b, loc, tr.getResult().getType(),
                                      result);
  } else if (auto cc = dyn_cast<ConcatOp>(op)) {
    int64_t rank = cc.getResult().getType().getRank();
    int64_t axis = normAxis(cc.getAxis(), rank);
    result = concat(cc.getInputs(), axis, cc.getResult().getType());
  } else if (auto sl = dyn_cast<SliceOp>(op)) {
    result = lowerSlice(sl);
  } else if (auto g = dyn_cast<GatherOp>(op)) {
    int64_t rank = g.getInput().getType().getRank();
    int64_t axis = normAxis(g.getAxis(), rank);
    result = lowerGather(g.getInput(), g.getIndices(), axis,
                         g.getResult().getType());
  } else if (auto e = dyn_cast<EmbeddingOp>(op)) {
    bool quantized = quantOf.count(e.getTable()) ||
                     isa<QTensorType>(e.getTable().getType());
    // The f32 path is lowerGather's, where negative ids count from the end.
    checkEmbeddingIds(e, /*negative=*/!quantized);
    if (quantized) {
      FailureOr<Value> r = quantizedEmbedding(e);
      if (failed(r))
        return failure();
      result = *r;
    } else {
      result = lowerGather(e.getTable(), e.getIds(), 0,
                           e.getResult().getType());
    }
  } else if (auto rot = dyn_cast<RotaryOp>(op)) {
    result = lowerRotary(rot);
  } else if (auto tab = dyn_cast<RotaryTableOp>(op)) {
    SmallVector<Value> cs = lowerRotaryTable(tab);
    op->replaceAllUsesWith(cs);
    op->erase();
    return success();
  } else if (auto att = dyn_cast<AttentionOp>(op)) {
    FailureOr<SmallVector<Value>> rs = lowerAttention(att);
    if (failed(rs))
      return failure();
    op->replaceAllUsesWith(*rs);
    op->erase();
    return success();
  } else if (auto sh = dyn_cast<ShardOp>(op)) {
    // An annotation for the planner; by now the program is per rank.
    result = sh.getInput();
  } else if (auto ls = dyn_cast<LocalSliceOp>(op)) {
    FailureOr<Value> r = lowerLocalSlice(ls);
    if (failed(r))
      return failure();
    result = *r;
  } else if (isa<CollectiveOpInterface>(op)) {
    FailureOr<Value> r = lowerCollective(op);
    if (failed(r))
      return failure();
    result = *r;
  } else if (auto qm = dyn_cast<QMatmulOp>(op)) {
    // The generated kernel (QuantKernels.cpp) multiplies in the blocks;
    // the qmatmul=dequant option selects the reference path: dequantize
    // the weight, then the f32 GEMM.
    FailureOr<Value> k = quantizedMatmulKernel(qm);
    if (failed(k))
      return failure();
    if (*k) {
      op->getResult(0).replaceAllUsesWith(*k);
      op->erase();
      return success();
    }
    FailureOr<Value> w = dequantize(op, qm.getWeight());
    if (failed(w))
      return failure();
    auto type = qm.getResult().getType();
    Value x = qm.getInput();
    if (cast<RankedTensorType>(x.getType()).getRank() < 2) {
      return op->emitOpError() << "a rank-1 input is not lowered yet";
    }
    result = matmulByGemm(op, x, *w, false, true, type);
    if (!result)
      result = matmul(x, *w, false, true, type);
  } else if (auto dq = dyn_cast<DequantizeOp>(op)) {
    FailureOr<Value> w = dequantize(op, dq.getInput());
    if (failed(w))
      return failure();
    result = *w;
  } else if (isa<QuantizeOp>(op)) {
    return op->emitOpError()
           << "loom.quantize is not lowered to CPU code yet (the quantize "
              "phase quantizes weights at compile time)";
  } else {
    return op->emitOpError() << "has no CPU lowering";
  }
  if (op->getNumResults() == 1 && result)
    op->getResult(0).replaceAllUsesWith(result);
  op->erase();
  return success();
}

LogicalResult Lowerer::run() {
  if (failed(convertQuantizedArguments()))
    return failure();
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<LoomDialect>(op->getDialect()) && !isa<MeshOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops)
    if (failed(lowerOp(op)))
      return failure();
  // Meshes are fully consumed: collectives now name ranks and masks.
  for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
    mesh.erase();
  // Discardable loom.* attributes of arguments and results have no meaning
  // below (and LLVM translation warns about each): drop them all.
  auto withoutLoom = [](DictionaryAttr attrs) {
    SmallVector<NamedAttribute> kept;
    if (attrs)
      for (NamedAttribute a : attrs)
        if (!a.getName().getValue().starts_with("loom."))
          kept.push_back(a);
    return kept;
  };
  module.walk([&](func::FuncOp fn) {
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.setArgAttrs(i, withoutLoom(fn.getArgAttrDict(i)));
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.setResultAttrs(i, withoutLoom(fn.getResultAttrDict(i)));
  });
  return success();
}

namespace {
struct ConvertLoomToLinalgPass
    : loom::impl::ConvertLoomToLinalgPassBase<ConvertLoomToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    QKernelTuning tuning;
    std::string error;
    if (!isQMatmulMode(qmatmul))
      error = "qmatmul=" + qmatmul + ": expected f32, i8, i8x3 or dequant";
    else
      parseQKernelTuning(qmmTile, qmmPrefetch, tuning, error);
    if (!error.empty()) {
      getOperation().emitError() << "loom-convert-loom-to-linalg: " << error;
      return signalPassFailure();
    }
    Lowerer lowerer(getOperation(), qmatmul, gemm, tuning);
    if (failed(lowerer.run()))
      signalPassFailure();
  }
};
} // namespace
