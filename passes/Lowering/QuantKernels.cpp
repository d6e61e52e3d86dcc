//===- QuantKernels.cpp - generated quantized matmul kernels --------------===//
//
// y[m, n] = sum_k x[m, k] * dequant(W)[n, k] for W in rows of blocks (GGUF
// q4_0/q4_1/q8_0, Loom int4/int8; docs/QUANTIZE.md), as MLIR vector code:
//
//   for each register tile of MR rows of x and NR rows of W:
//     for each block along K:
//       load the NR blocks' scales (and mins), and, 16 values at a time,
//       unpack the codes in registers (int4: low nibbles = the first half of
//       the block, high nibbles = the second half), convert to f32 and
//       multiply-add with the matching 16 activations into a per-block
//       partial sum p; then acc += d * p (+ m * sum(x) for mode min)
//     y = horizontal sum of acc
//
// Batch 1 (decode) runs tiles of 1 x 4 rows, larger batches 4 x 2 (each
// weight block is unpacked once for 4 activation rows); remainders run
// 1-wide tiles. The weight is read once per tile row: a GEMV streams it
// exactly once. Vectors are 16 lanes of f32 (one AVX-512 register, two
// AVX2 ones); LLVM picks the instructions for the host CPU.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/QuantKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace loom {

bool hasQMatmulKernel(QuantAttr q, std::string *why) {
  if (!q.isGguf() && q.getMode() == QuantMode::zero_point) {
    if (why)
      *why = "mode zero_point has no CPU kernel (use symmetric or min)";
    return false;
  }
  return true;
}

namespace {

constexpr int64_t VL = 16; // f32 lanes of one vector

struct KernelGen {
  OpBuilder &b;
  Location loc;
  QuantAttr q;
  int64_t K, B, nb, bb, valOff, scaleBytes;
  bool four, sym;
  Type scaleType;
  Value x, w, y;

  KernelGen(OpBuilder &b, Location loc, QuantAttr q, int64_t k)
      : b(b), loc(loc), q(q), K(k) {
    B = q.getBlockSize();
    nb = K / B;
    bb = q.getBlockBytes();
    four = q.getBits() == 4;
    valOff = bb - B * q.getBits() / 8;
    scaleType = q.getScaleType();
    scaleBytes = scaleType.getIntOrFloatBitWidth() / 8;
    sym = q.getMode() != QuantMode::min;
  }

  Type f32() { return b.getF32Type(); }
  VectorType vf() { return VectorType::get({VL}, f32()); }
  VectorType vi8() { return VectorType::get({VL}, b.getI8Type()); }
  Value ci(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }
  Value mul(Value a, Value c) { return arith::MulIOp::create(b, loc, a, c); }
  Value zeroF() {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(
                                                 vf(), b.getF32FloatAttr(0)));
  }
  Value splatI8(int64_t v) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vi8(), b.getI8IntegerAttr(v)));
  }
  Value fma(Value a, Value c, Value acc) {
    if (!acc)
      return arith::MulFOp::create(b, loc, a, c);
    return vector::FMAOp::create(b, loc, a, c, acc);
  }

  /// scf.for with iteration values; `body` returns the values to yield.
  SmallVector<Value>
  loop(Value lb, Value ub, int64_t step, ValueRange inits,
       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto forOp = scf::ForOp::create(b, loc, lb, ub, ci(step), inits);
    OpBuilder::InsertionGuard guard(b);
    Block *blk = forOp.getBody();
    if (inits.empty())
      b.setInsertionPoint(blk->getTerminator());
    else
      b.setInsertionPointToStart(blk);
    SmallVector<Value> yields =
        body(forOp.getInductionVar(), forOp.getRegionIterArgs());
    if (!inits.empty())
      scf::YieldOp::create(b, loc, yields);
    return SmallVector<Value>(forOp.getResults());
  }

  /// The scale (or min) at byte `off` of weight row `row`, broadcast.
  Value loadScale(Value row, Value off) {
    auto raw = vector::LoadOp::create(
        b, loc, VectorType::get({scaleBytes}, b.getI8Type()), w,
        ValueRange{row, off});
    Value v = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, scaleType), raw);
    Value s = vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{0});
    if (!scaleType.isF32())
      s = arith::ExtFOp::create(b, loc, f32(), s);
    return vector::BroadcastOp::create(b, loc, vf(), s);
  }

  /// Codes as f32: (low, high) halves for int4, (all, null) for int8.
  std::pair<Value, Value> unpack(Value raw) {
    auto toF = [&](Value v) -> Value {
      if (sym)
        return arith::SIToFPOp::create(b, loc, vf(), v);
      return arith::UIToFPOp::create(b, loc, vf(), v);
    };
    if (!four)
      return {toF(raw), Value()};
    Value lo = arith::AndIOp::create(b, loc, raw, splatI8(15));
    Value hi = arith::ShRUIOp::create(b, loc, raw, splatI8(4));
    if (sym) {
      lo = arith::SubIOp::create(b, loc, lo, splatI8(8));
      hi = arith::SubIOp::create(b, loc, hi, splatI8(8));
    }
    return {toF(lo), toF(hi)};
  }

  /// One MR x NR tile at rows m0 of x and n0 of W.
  void tile(Value m0, Value n0, int64_t MR, int64_t NR) {
    SmallVector<Value> inits(MR * NR, zeroF());
    SmallVector<Value> acc = loop(
        ci(0), ci(nb), 1, inits,
        [&](Value blk, ValueRange accs) -> SmallVector<Value> {
          Value blkByte = mul(blk, ci(bb));
          Value kBase = mul(blk, ci(B));
          SmallVector<Value> rows, d, m;
          for (int64_t j = 0; j < NR; ++j) {
            rows.push_back(add(n0, ci(j)));
            d.push_back(loadScale(rows[j], blkByte));
            if (!sym)
              m.push_back(loadScale(rows[j], add(blkByte, ci(scaleBytes))));
          }
          SmallVector<Value> xrows;
          for (int64_t i = 0; i < MR; ++i)
            xrows.push_back(add(m0, ci(i)));
          SmallVector<Value> p(MR * NR), xs(MR);
          int64_t chunks = (four ? B / 2 : B) / VL;
          for (int64_t c = 0; c < chunks; ++c) {
            Value off = add(blkByte, ci(valOff + c * VL));
            SmallVector<std::pair<Value, Value>> wv;
            for (int64_t j = 0; j < NR; ++j)
              wv.push_back(unpack(vector::LoadOp::create(
                  b, loc, vi8(), w, ValueRange{rows[j], off})));
            Value kLo = add(kBase, ci(c * VL));
            Value kHi = four ? add(kBase, ci(B / 2 + c * VL)) : Value();
            for (int64_t i = 0; i < MR; ++i) {
              Value xl = vector::LoadOp::create(b, loc, vf(), x,
                                                ValueRange{xrows[i], kLo});
              Value xh = four ? vector::LoadOp::create(
                                    b, loc, vf(), x,
                                    ValueRange{xrows[i], kHi})
                                    .getResult()
                              : Value();
              if (!sym) {
                Value s = xh ? arith::AddFOp::create(b, loc, xl, xh)
                                   .getResult()
                             : xl;
                xs[i] = xs[i] ? arith::AddFOp::create(b, loc, xs[i], s)
                                    .getResult()
                              : s;
              }
              for (int64_t j = 0; j < NR; ++j) {
                Value &pij = p[i * NR + j];
                pij = fma(wv[j].first, xl, pij);
                if (four)
                  pij = fma(wv[j].second, xh, pij);
              }
            }
          }
          SmallVector<Value> next;
          for (int64_t i = 0; i < MR; ++i)
            for (int64_t j = 0; j < NR; ++j) {
              Value a = fma(p[i * NR + j], d[j], accs[i * NR + j]);
              if (!sym)
                a = fma(xs[i], m[j], a);
              next.push_back(a);
            }
          return next;
        });
    for (int64_t i = 0; i < MR; ++i)
      for (int64_t j = 0; j < NR; ++j) {
        Value s = vector::ReductionOp::create(
            b, loc, vector::CombiningKind::ADD, acc[i * NR + j],
            arith::FastMathFlags::reassoc);
        memref::StoreOp::create(b, loc, s, y,
                                ValueRange{add(m0, ci(i)), add(n0, ci(j))});
      }
  }

  /// All tiles of y: [M, N].
  void body() {
    Value M = memref::DimOp::create(b, loc, x, 0);
    Value N = memref::DimOp::create(b, loc, w, 0);
    auto floorTo = [&](Value v, int64_t t) {
      return arith::SubIOp::create(
          b, loc, v, arith::RemUIOp::create(b, loc, v, ci(t)));
    };
    const int64_t MR = 4, NR2 = 2, NR1 = 4;
    Value mFull = floorTo(M, MR);
    Value nFull2 = floorTo(N, NR2), nFull1 = floorTo(N, NR1);
    loop(ci(0), mFull, MR, {}, [&](Value m0, ValueRange) {
      loop(ci(0), nFull2, NR2, {}, [&](Value n0, ValueRange) {
        tile(m0, n0, MR, NR2);
        return SmallVector<Value>();
      });
      loop(nFull2, N, 1, {}, [&](Value n0, ValueRange) {
        tile(m0, n0, MR, 1);
        return SmallVector<Value>();
      });
      return SmallVector<Value>();
    });
    loop(mFull, M, 1, {}, [&](Value m0, ValueRange) {
      loop(ci(0), nFull1, NR1, {}, [&](Value n0, ValueRange) {
        tile(m0, n0, 1, NR1);
        return SmallVector<Value>();
      });
      loop(nFull1, N, 1, {}, [&](Value n0, ValueRange) {
        tile(m0, n0, 1, 1);
        return SmallVector<Value>();
      });
      return SmallVector<Value>();
    });
  }
};

std::string kernelName(QuantAttr q, int64_t k, QKernelActivations act) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "__loom_qmm_" << stringifyQuantFormat(q.getFormat()) << "_b"
     << q.getBlockSize() << "_" << stringifyQuantMode(q.getMode()) << "_"
     << q.getScaleType() << "_k" << k
     << (act == QKernelActivations::I8 ? "_i8" : "");
  return s;
}

} // namespace

func::FuncOp getOrCreateQMatmulKernel(ModuleOp module, QuantAttr q, int64_t k,
                                      QKernelActivations act) {
  std::string name = kernelName(q, k, act);
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  int64_t dyn = ShapedType::kDynamic;
  int64_t rowBytes = k / q.getBlockSize() * q.getBlockBytes();
  auto xt = MemRefType::get({dyn, k}, b.getF32Type());
  auto wt = MemRefType::get({dyn, rowBytes}, b.getI8Type());
  auto yt = MemRefType::get({dyn, dyn}, b.getF32Type());
  auto fn = func::FuncOp::create(b, loc, name,
                                 b.getFunctionType({xt, wt, yt}, {}));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  KernelGen gen(b, loc, q, k);
  gen.x = entry->getArgument(0);
  gen.w = entry->getArgument(1);
  gen.y = entry->getArgument(2);
  (void)act; // int8 activations: see getOrCreateQMatmulKernel's callers
  gen.body();
  func::ReturnOp::create(b, loc);
  return fn;
}

} // namespace loom
