//===- QuantizedPatterns.cpp - quantized weights --------------------------===//
//
// !loom.qtensor values (weights outlined to entry-point arguments, GGUF
// blocks or Loom int4/int8 blocks kept as they are) convert to their
// storage tensor; the quantization stays readable from the original value's
// type and the interleaved layout from the argument's `loom.weight`
// attribute. loom.qmatmul lowers to a generated vector kernel
// (QuantKernels.cpp) or, for qmatmul=dequant and formats without one, to a
// dequantizing generic and the f32 GEMM; loom.dequantize to that generic.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"

using namespace mlir;
using namespace loom;
using namespace loom::lowering;

void loom::lowering::addQuantizedTypeConversion(TypeConverter &converter) {
  converter.addConversion([](QTensorType q) -> std::optional<Type> {
    if (RankedTensorType storage = q.getStorageType())
      return storage;
    return std::nullopt;
  });
}

std::optional<QuantizedWeight>
loom::lowering::quantizedWeight(Value original, Value converted) {
  auto q = dyn_cast<QTensorType>(original.getType());
  // Through the conversion's casts and the !loom.qtensor view that
  // loom-gpu-qmatmuls gives a tied embedding of the blocks' bytes (bytes ->
  // qtensor -> bytes) to the argument of the blocks.
  while (auto cast = converted.getDefiningOp<UnrealizedConversionCastOp>()) {
    if (cast->getNumOperands() != 1)
      break;
    converted = cast->getOperand(0);
  }
  auto arg = dyn_cast<BlockArgument>(converted);
  if (!q || !arg || !arg.getOwner()->isEntryBlock() ||
      arg.getType() != q.getStorageType())
    return std::nullopt;
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!fn)
    return std::nullopt;
  QuantizedWeight w{converted, q, false};
  if (auto desc = fn.getArgAttrOfType<WeightAttr>(arg.getArgNumber(),
                                                  LoomDialect::kWeightAttrName))
    w.interleaved = static_cast<bool>(desc.getInterleave());
  return w;
}

LogicalResult loom::lowering::verifyQuantizedArguments(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
      auto q = dyn_cast<QTensorType>(arg.getType());
      if (!q)
        continue;
      RankedTensorType storage = q.getStorageType();
      std::string why;
      if (!storage || !hasQMatmulKernel(q.getQuant(), &why))
        return fn.emitOpError()
               << "argument " << i << " of type " << q << ": " << why;
      if (auto desc =
              fn.getArgAttrOfType<WeightAttr>(i, LoomDialect::kWeightAttrName))
        if (InterleaveAttr il = desc.getInterleave()) {
          // The layout the kernels read; anything else is not ours.
          QWeightInterleave want = interleaveOf(q.getQuant());
          if (il.getRows() != want.rows ||
              il.getBlockBytes() != want.blockBytes ||
              il.getFields() != want.fields ||
              il.getFieldBytes() != want.fieldBytes ||
              il.getUnitBytes() != want.unitBytes)
            return fn.emitOpError()
                   << "argument " << i << ": interleave " << il
                   << " is not the layout of " << q
                   << " that the kernels read (see docs/QUANTIZE.md)";
        }
    }
  }
  return success();
}

Value loom::lowering::dequantElement(OpBuilder &bb, Location l, Value bytes,
                                     ValueRange rowIndices, Value k,
                                     QuantAttr q) {
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
      bits = bits ? arith::OrIOp::create(bb, l, bits, byte).getResult() : byte;
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
    Value nib =
        arith::AndIOp::create(bb, l, arith::ShRUIOp::create(bb, l, byte, shift),
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

namespace {

struct QuantEmitter : Emitter {
  using Emitter::Emitter;
  /// The dequantized f32 tensor of the weight `original` (converted:
  /// `weight`) as one generic.
  FailureOr<Value> dequantize(Operation *op, Value original, Value weight);
  /// loom.qmatmul through a generated vector kernel (QuantKernels.cpp), or
  /// null when none applies (then dequantize + f32 GEMM).
  FailureOr<Value> quantizedMatmulKernel(QMatmulOp op, QMatmulOp::Adaptor a);
};

} // namespace

FailureOr<Value> QuantEmitter::dequantize(Operation *op, Value original,
                                          Value weight) {
  std::optional<QuantizedWeight> w = quantizedWeight(original, weight);
  if (!w)
    return op->emitOpError()
           << "quantized values lower to CPU code only when they are "
              "weights of an entry point (GGUF blocks)";
  if (w->interleaved)
    return op->emitOpError() << "cannot dequantize a weight stored in the "
                                "interleaved layout (only loom.qmatmul "
                                "kernels read it)";
  QTensorType q = w->type;
  auto type = q.getDequantizedType();
  SmallVector<Value> sizes;
  for (int64_t d : type.getShape())
    sizes.push_back(cIndex(d));
  return dequantizeRows(type, sizes, weight, q.getQuant());
}

FailureOr<Value> QuantEmitter::quantizedMatmulKernel(QMatmulOp op,
                                                     QMatmulOp::Adaptor a) {
  std::optional<QuantizedWeight> w =
      quantizedWeight(op.getWeight(), a.getWeight());
  if (!w)
    return op->emitOpError()
           << "quantized values lower to CPU code only when they are "
              "weights of an entry point";
  QTensorType qt = w->type;
  Value x = a.getInput();
  auto xt = cast<RankedTensorType>(x.getType());
  auto type = op.getResult().getType();
  bool interleave = w->interleaved;
  QMatmulLowering how = chooseQMatmulLowering(op, qt, opts.qmatmul);
  if (interleave && (!how.kernel || !activationLevels(how.act)))
    return op->emitOpError()
           << "the weight is in the interleaved layout, which only the "
              "int8-activation kernel reads";
  if (!how.kernel)
    return Value();
  int64_t k = qt.getShape()[1];
  func::FuncOp fn = getOrCreateQMatmulKernel(
      b, op->getParentOfType<ModuleOp>(), qt.getQuant(), k, how.act,
      how.targetIsa, interleave, opts.tuning);
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
  Value wv = w->bytes;
  int64_t wCols = cast<RankedTensorType>(wv.getType()).getShape().back();
  Value m = activationLevels(how.act) ? numElements(x, 0, rank - 1) : Value();
  return kernel({x, wv}, type, ySizes, [&](ValueRange bufs) {
    SmallVector<Value> args{
        castTo(collapse(bufs[0]), {dyn, k}, b.getF32Type()),
        castTo(bufs[1], {dyn, wCols}, b.getI8Type()),
        castTo(collapse(bufs[2]), {dyn, dyn}, b.getF32Type())};
    if (int64_t levels = activationLevels(how.act)) {
      // Scratch of the int8 activations: codes, scales, offsets, sums.
      int64_t nb = k / qt.getQuant().getBlockSize();
      for (auto [cols, elt] :
           {std::pair<int64_t, Type>{levels * k, b.getI8Type()},
            {nb, b.getF32Type()},
            {levels * nb, b.getI32Type()},
            {nb, b.getF32Type()}})
        args.push_back(memref::AllocOp::create(
            b, loc, MemRefType::get({dyn, cols}, elt), ValueRange{m}));
    }
    func::CallOp::create(b, loc, fn, args);
  });
}

namespace {

struct QMatmulPattern : LoomPattern<QMatmulOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(QMatmulOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    // The generated kernel (QuantKernels.cpp) multiplies in the blocks;
    // the qmatmul=dequant option selects the reference path: dequantize
    // the weight, then the f32 GEMM.
    QuantEmitter e(rewriter, op.getLoc(), opts);
    FailureOr<Value> k = e.quantizedMatmulKernel(op, a);
    if (failed(k))
      return failure();
    if (*k) {
      rewriter.replaceOp(op, *k);
      return success();
    }
    FailureOr<Value> w = e.dequantize(op, op.getWeight(), a.getWeight());
    if (failed(w))
      return failure();
    auto type = op.getResult().getType();
    Value x = a.getInput();
    if (cast<RankedTensorType>(x.getType()).getRank() < 2)
      return op->emitOpError() << "a rank-1 input is not lowered yet";
    Value result = e.matmulByGemm(op, x, *w, false, true, type);
    if (!result)
      result = e.matmul(x, *w, false, true, type);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct DequantizeLowering : LoomPattern<DequantizeOp> {
  using LoomPattern::LoomPattern;
  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    QuantEmitter e(rewriter, op.getLoc(), opts);
    return replaceOrFail(rewriter, op,
                         e.dequantize(op, op.getInput(), a.getInput()));
  }
};

struct QuantizeRefusal : LoomPattern<QuantizeOp> {
  using LoomPattern::LoomPattern;
  LogicalResult matchAndRewrite(QuantizeOp op, OpAdaptor,
                                ConversionPatternRewriter &) const override {
    return op->emitOpError()
           << "loom.quantize is not lowered to CPU code yet (the quantize "
              "phase quantizes weights at compile time)";
  }
};

} // namespace

void loom::lowering::populateQuantizedPatterns(TypeConverter &converter,
                                               RewritePatternSet &patterns,
                                               const LoweringOptions &opts) {
  patterns.add<QMatmulPattern, DequantizeLowering, QuantizeRefusal>(
      converter, patterns.getContext(), opts);
}
