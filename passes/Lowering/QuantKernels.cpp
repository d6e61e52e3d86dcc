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
// Batch 1 (decode) runs tiles of 1 x 4 rows (1 x 8 with int8
// activations), larger batches 4 x 2 (each weight block is unpacked once
// for 4 activation rows); remainders run 1-wide tiles. The weight is read
// once per tile row: a GEMV streams it exactly once, and each tile
// prefetches the rows of the next one. Vectors are 16 lanes of f32 (one
// AVX-512 register, two AVX2 ones); LLVM picks the instructions for the
// module's loom.target CPU. With int8 activations (the second half of
// KernelGen) the products are integer dot products (vpdpbusd with AVX512-VNNI).
//
// With int8 activations on weights in the interleaved layout (groups of 8
// rows, docs/QUANTIZE.md) the 8 rows of a group are the 8 lanes instead:
// each 4-byte lane of a 32-byte load holds 4 codes of one row, one dot
// product against 4 broadcast activation codes feeds all 8 rows (for each
// of up to 4 rows of x), the group's 8 scales are one vector and the tile
// stores 8 results per row of x without a horizontal sum. Without VNNI in
// the target's features the dot products are AVX2's vpmaddubsw + vpmaddwd,
// without AVX2 generic vector code.
//
// Threads: the tiles are grouped in blocks of 16 rows of x by 16 rows of W
// (multiples of every tile size), an scf.parallel that
// loom-outline-parallel-loops hands to the rank's pool (decode splits W's
// rows, prefill both); each y element keeps the tile code and order of one
// thread, so results do not depend on the thread count.
//
// Tuning knobs (measurements only): the qmm-tile=MRxNR2xNR1 and
// qmm-prefetch (bytes ahead; negative: tiles ahead; 0: none) options of
// loom-convert-loom-to-linalg.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/QuantKernels.h"
#include "passes/Lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <numeric>
#include <string_view>

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
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vf(), b.getF32FloatAttr(0)));
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

  /// Software prefetch of weight row `row`, `prefetchBytes` ahead of the
  /// block at `blkByte`: a tile walks NR rows at once (NR streams whose
  /// stride is a row), which the hardware prefetchers follow badly.
  int64_t prefetchBytes = -1;
  /// The pass options' tile (0: the default tiles).
  QKernelTuning tuning;
  int64_t tileRows = 1;
  void prefetch(Value row, Value blkByte) {
    if (prefetchBytes == 0)
      return;
    if (prefetchBytes < 0) {
      // The same bytes of the row -prefetchBytes tiles further (the next
      // tiles' rows follow this tile's in memory).
      Value n = memref::DimOp::create(b, loc, w, 0);
      Value next = arith::MinUIOp::create(
          b, loc, add(row, ci(-prefetchBytes * tileRows)),
          arith::SubIOp::create(b, loc, n, ci(1)));
      memref::PrefetchOp::create(b, loc, w, ValueRange{next, blkByte}, false, 0,
                                 true);
      return;
    }
    Value rowBytesV = ci(nb * bb);
    // Clamp to the row: the next row's start is prefetched anyway.
    Value off =
        arith::MinUIOp::create(b, loc, add(blkByte, ci(prefetchBytes)),
                               arith::SubIOp::create(b, loc, rowBytesV, ci(1)));
    memref::PrefetchOp::create(b, loc, w, ValueRange{row, off},
                               /*isWrite=*/false, /*localityHint=*/0,
                               /*isDataCache=*/true);
  }

  /// The scale (or min) at byte `off` of weight row `row`, broadcast.
  Value loadScale(Value row, Value off) {
    auto raw = vector::LoadOp::create(
        b, loc, VectorType::get({scaleBytes}, b.getI8Type()), w,
        ValueRange{row, off});
    Value v =
        vector::BitCastOp::create(b, loc, VectorType::get({1}, scaleType), raw);
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

  /// y[m0 + i, n0 + j] = the lanes of acc[i * NR + j], summed.
  void storeSums(ArrayRef<Value> acc, Value m0, Value n0, int64_t MR,
                 int64_t NR) {
    for (int64_t i = 0; i < MR; ++i)
      for (int64_t j = 0; j < NR; ++j) {
        Value s = vector::ReductionOp::create(
            b, loc, vector::CombiningKind::ADD, acc[i * NR + j],
            arith::FastMathFlags::reassoc);
        memref::StoreOp::create(b, loc, s, y,
                                ValueRange{add(m0, ci(i)), add(n0, ci(j))});
      }
  }

  /// One MR x NR tile at rows m0 of x and n0 of W.
  void tile(Value m0, Value n0, int64_t MR, int64_t NR) {
    tileRows = NR;
    SmallVector<Value> inits(MR * NR, zeroF());
    SmallVector<Value> acc = loop(
        ci(0), ci(nb), 1, inits,
        [&](Value blk, ValueRange accs) -> SmallVector<Value> {
          Value blkByte = mul(blk, ci(bb));
          Value kBase = mul(blk, ci(B));
          SmallVector<Value> rows, d, m;
          for (int64_t j = 0; j < NR; ++j) {
            rows.push_back(add(n0, ci(j)));
            prefetch(rows[j], blkByte);
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
                                    b, loc, vf(), x, ValueRange{xrows[i], kHi})
                                    .getResult()
                              : Value();
              if (!sym) {
                Value s =
                    xh ? arith::AddFOp::create(b, loc, xl, xh).getResult() : xl;
                xs[i] =
                    xs[i] ? arith::AddFOp::create(b, loc, xs[i], s).getResult()
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
    storeSums(acc, m0, n0, MR, NR);
  }

  //===--- int8 activations ---------------------------------------------===//
  // x is quantized per weight block (d_x = max|x| / 127, q = round(x / d_x))
  // into scratch buffers; each 32-element chunk of a block is one integer
  // dot product of unsigned weight codes and signed activation codes
  // (vpdpbusd with AVX512-VNNI, else generic vector code), accumulated in
  // 8 i32 lanes whose start value carries the code offset
  // (-8 sum(q_x) for int4 symmetric, -128 sum(q_x) for int8 symmetric with
  // its codes used as w + 128, except on AVX2: signedCodes()), then
  // acc += d_w d_x (float) lanes.
  bool vnni = false;
  bool avx2 = false; // vpmaddubsw + vpmaddwd (no VNNI)
  /// Activation levels: 1 (int8), or 3 (I8x3: x = d (a + b / 254 +
  /// c / 254^2), level l's codes at column l K of xq, its code offsets at
  /// column l nb of biasm).
  int64_t levels = 1;
  ModuleOp module;
  Value xq, dxm, biasm, sxm; // [M, K] i8, [M, nb] f32, [M, nb] i32, [M, nb] f32
  VectorType vi32x8() { return VectorType::get({8}, b.getI32Type()); }
  VectorType vf8() { return VectorType::get({8}, f32()); }
  VectorType vi8x32() { return VectorType::get({32}, b.getI8Type()); }
  int64_t codeOffset() {
    if (!sym)
      return 0;
    return four ? 8 : signedCodes() ? 0 : 128;
  }
  /// Symmetric int8 codes used as they are (AVX2 multiplies their absolute
  /// values by the activations with their signs), not as w + 128.
  bool signedCodes() { return avx2 && !four && sym; }

  Value splat8x32(int64_t c) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vi8x32(), b.getI8IntegerAttr(c)));
  }
  /// The codes of 32 int4 bytes: low nibbles (the first half of a block's
  /// values) and high nibbles (the second half).
  Value lowNibbles(Value v) {
    return arith::AndIOp::create(b, loc, v, splat8x32(15));
  }
  Value highNibbles(Value v) {
    return arith::ShRUIOp::create(b, loc, v, splat8x32(4));
  }
  /// 32 int8 codes as the dot products take them: symmetric codes as
  /// w + 128 (unsigned), unless signedCodes().
  Value int8Codes(Value v) {
    if (!sym || signedCodes())
      return v;
    return arith::XOrIOp::create(b, loc, v, splat8x32(-128));
  }

  void quantizeRows() {
    Value M = memref::DimOp::create(b, loc, x, 0);
    loop(ci(0), M, 1, {}, [&](Value m, ValueRange) {
      loop(ci(0), ci(nb), 1, {}, [&](Value blk, ValueRange) {
        Value kBase = mul(blk, ci(B));
        SmallVector<Value> xv;
        Value amax;
        for (int64_t c = 0; c < B / VL; ++c) {
          xv.push_back(vector::LoadOp::create(
              b, loc, vf(), x, ValueRange{m, add(kBase, ci(c * VL))}));
          Value a = math::AbsFOp::create(b, loc, xv.back());
          amax =
              amax ? arith::MaxNumFOp::create(b, loc, amax, a).getResult() : a;
        }
        Value am = vector::ReductionOp::create(
            b, loc, vector::CombiningKind::MAXNUMF, amax);
        Value c127 = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(127));
        Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
        Value d = arith::DivFOp::create(b, loc, am, c127);
        Value pos =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, am, zero);
        Value inv = arith::SelectOp::create(
            b, loc, pos, arith::DivFOp::create(b, loc, c127, am), zero);
        // Level l codes round the residual of the levels before it at
        // d / 254^l: |residual| <= d / 2 / 254^(l-1), so the codes stay in
        // [-127, 127] (clamped against float rounding).
        SmallVector<Value> sumq(levels);
        Value sumx;
        auto fv = [&](double v) -> Value {
          return vector::BroadcastOp::create(
              b, loc, vf(),
              arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)));
        };
        for (int64_t c = 0; c < B / VL; ++c) {
          Value res = xv[c];
          double unit = 1;
          for (int64_t l = 0; l < levels; ++l, unit *= 254) {
            Value invl = arith::MulFOp::create(
                b, loc, vector::BroadcastOp::create(b, loc, vf(), inv),
                fv(unit));
            Value r = math::RoundEvenOp::create(
                b, loc, arith::MulFOp::create(b, loc, res, invl));
            if (l > 0)
              r = arith::MinimumFOp::create(
                  b, loc, arith::MaximumFOp::create(b, loc, r, fv(-127)),
                  fv(127));
            if (l + 1 < levels) // res -= r * d / unit
              res = vector::FMAOp::create(
                  b, loc, arith::NegFOp::create(b, loc, r),
                  arith::DivFOp::create(
                      b, loc, vector::BroadcastOp::create(b, loc, vf(), d),
                      fv(unit)),
                  res);
            Value qi = arith::FPToSIOp::create(
                b, loc, VectorType::get({VL}, b.getI32Type()), r);
            Value q8 = arith::TruncIOp::create(b, loc, vi8(), qi);
            vector::StoreOp::create(
                b, loc, q8, xq, ValueRange{m, add(kBase, ci(l * K + c * VL))});
            Value sq = vector::ReductionOp::create(
                b, loc, vector::CombiningKind::ADD, qi);
            sumq[l] =
                sumq[l] ? arith::AddIOp::create(b, loc, sumq[l], sq).getResult()
                        : sq;
          }
          if (!sym) {
            Value sx = vector::ReductionOp::create(
                b, loc, vector::CombiningKind::ADD, xv[c],
                arith::FastMathFlags::reassoc);
            sumx =
                sumx ? arith::AddFOp::create(b, loc, sumx, sx).getResult() : sx;
          }
        }
        memref::StoreOp::create(b, loc, d, dxm, ValueRange{m, blk});
        for (int64_t l = 0; l < levels; ++l) {
          Value bias =
              arith::MulIOp::create(b, loc, sumq[l],
                                    arith::ConstantIntOp::create(
                                        b, loc, b.getI32Type(), -codeOffset()));
          memref::StoreOp::create(b, loc, bias, biasm,
                                  ValueRange{m, add(blk, ci(l * nb))});
        }
        if (!sym)
          memref::StoreOp::create(b, loc, sumx, sxm, ValueRange{m, blk});
        return SmallVector<Value>();
      });
      return SmallVector<Value>();
    });
  }

  /// Scale (or min) of weight row `row` at byte `off`, in 8 lanes (a
  /// broadcast of the stored bits, then one conversion).
  Value loadScale8(Value row, Value off) {
    auto raw = vector::LoadOp::create(
        b, loc, VectorType::get({scaleBytes}, b.getI8Type()), w,
        ValueRange{row, off});
    Value v =
        vector::BitCastOp::create(b, loc, VectorType::get({1}, scaleType), raw);
    Value s8 = vector::BroadcastOp::create(
        b, loc, VectorType::get({8}, scaleType),
        vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{0}));
    if (scaleType.isF32())
      return s8;
    return arith::ExtFOp::create(b, loc, vf8(), s8);
  }

  /// The 32-element unsigned code chunks of one block of row `row`.
  SmallVector<Value> weightChunks(Value row, Value blkByte) {
    SmallVector<Value> chunks(B / 32);
    Value base = add(blkByte, ci(valOff));
    if (!four) {
      for (int64_t c = 0; c < B / 32; ++c) {
        chunks[c] = int8Codes(vector::LoadOp::create(
            b, loc, vi8x32(), w, ValueRange{row, add(base, ci(32 * c))}));
      }
      return chunks;
    }
    if (B == 32) {
      Value raw =
          vector::LoadOp::create(b, loc, vi8(), w, ValueRange{row, base});
      Value lo = arith::AndIOp::create(b, loc, raw, splatI8(15));
      Value hi = arith::ShRUIOp::create(b, loc, raw, splatI8(4));
      SmallVector<int64_t> mask;
      for (int64_t i = 0; i < 32; ++i)
        mask.push_back(i);
      chunks[0] = vector::ShuffleOp::create(b, loc, lo, hi, mask);
      return chunks;
    }
    int64_t half = B / 2 / 32;
    for (int64_t c = 0; c < half; ++c) {
      Value raw = vector::LoadOp::create(
          b, loc, vi8x32(), w, ValueRange{row, add(base, ci(32 * c))});
      chunks[c] = lowNibbles(raw);
      chunks[half + c] = highNibbles(raw);
    }
    return chunks;
  }

  /// A call of the LLVM intrinsic `name`: a declaration named like the
  /// intrinsic becomes the intrinsic in LLVM IR (func.call, unlike
  /// llvm.call_intrinsic, has the memory effects the deallocation pipeline
  /// needs).
  Value intrinsic(StringRef name, Type result, ValueRange args) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(module.getBody());
      fn = func::FuncOp::create(b, loc, name,
                                b.getFunctionType(TypeRange(args), {result}));
      fn.setPrivate();
    }
    return func::CallOp::create(b, loc, fn, args).getResult(0);
  }

  /// acc (8 x i32) += dot of the weight codes `wu` (unsigned; signed for
  /// signedCodes()) and signed `xs` (32 bytes each): lane l adds the 4
  /// products of bytes 4l .. 4l + 3 (vpdpbusd).
  Value dot(Value acc, Value wu, Value xs) {
    if (vnni)
      return intrinsic("llvm.x86.avx512.vpdpbusd.256", vi32x8(), {acc, wu, xs});
    if (avx2) {
      // vpmaddubsw sums pairs of u8 x s8 products in i16 (saturating), then
      // vpmaddwd pairs of those, times `scale`, in the i32 lanes. The u8
      // factor stays at most 128 (|pair| <= 2 * 128 * 127) so nothing
      // saturates: 4-bit codes as they are, signed int8 codes as |w| times
      // x with w's sign, unsigned int8 codes as 16 * high + low nibbles.
      auto v16 = VectorType::get({16}, b.getI16Type());
      auto quads = [&](Value u, Value s, int64_t scale) -> Value {
        Value p16 = intrinsic("llvm.x86.avx2.pmadd.ub.sw", v16, {u, s});
        Value k = arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(v16, b.getI16IntegerAttr(scale)));
        return intrinsic("llvm.x86.avx2.pmadd.wd", vi32x8(), {p16, k});
      };
      Value sum;
      if (four) {
        sum = quads(wu, xs, 1);
      } else if (signedCodes()) {
        sum = quads(math::AbsIOp::create(b, loc, wu),
                    intrinsic("llvm.x86.avx2.psign.b", vi8x32(), {xs, wu}), 1);
      } else {
        sum = arith::AddIOp::create(b, loc, quads(highNibbles(wu), xs, 16),
                                    quads(lowNibbles(wu), xs, 1));
      }
      return arith::AddIOp::create(b, loc, acc, sum);
    }
    auto v32 = VectorType::get({32}, b.getI32Type());
    Value p =
        arith::MulIOp::create(b, loc, arith::ExtUIOp::create(b, loc, v32, wu),
                              arith::ExtSIOp::create(b, loc, v32, xs));
    for (int64_t s = 0; s < 4; ++s) {
      SmallVector<int64_t> mask;
      for (int64_t i = 0; i < 8; ++i)
        mask.push_back(4 * i + s);
      acc = arith::AddIOp::create(
          b, loc, acc, vector::ShuffleOp::create(b, loc, p, p, mask));
    }
    return acc;
  }

  /// The integer dots of the activation levels as one f32 sum (8 lanes):
  /// S_0 + S_1 / 254 + S_2 / 254^2, the small terms first.
  Value combineLevels(ArrayRef<Value> dsums) {
    Value t;
    for (int64_t l = levels - 1; l >= 0; --l) {
      Value f = arith::SIToFPOp::create(b, loc, vf8(), dsums[l]);
      if (l == 0) {
        t = t ? arith::AddFOp::create(b, loc, t, f).getResult() : f;
        continue;
      }
      Value k = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(vf8(),
                                 b.getF32FloatAttr(1.0 / std::pow(254.0, l))));
      t = t ? vector::FMAOp::create(b, loc, f, k, t).getResult()
            : arith::MulFOp::create(b, loc, f, k).getResult();
    }
    return t;
  }

  void tileI8(Value m0, Value n0, int64_t MR, int64_t NR) {
    tileRows = NR;
    Value zf = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vf8(), b.getF32FloatAttr(0)));
    Value zi = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vi32x8(), b.getI32IntegerAttr(0)));
    SmallVector<Value> inits(MR * NR, zf);
    SmallVector<Value> acc = loop(
        ci(0), ci(nb), 1, inits,
        [&](Value blk, ValueRange accs) -> SmallVector<Value> {
          Value blkByte = mul(blk, ci(bb));
          Value kBase = mul(blk, ci(B));
          SmallVector<Value> rows, dw, mw;
          SmallVector<SmallVector<Value>> wch;
          for (int64_t j = 0; j < NR; ++j) {
            rows.push_back(add(n0, ci(j)));
            prefetch(rows[j], blkByte);
            dw.push_back(loadScale8(rows[j], blkByte));
            if (!sym)
              mw.push_back(loadScale8(rows[j], add(blkByte, ci(scaleBytes))));
            wch.push_back(weightChunks(rows[j], blkByte));
          }
          SmallVector<Value> next;
          for (int64_t i = 0; i < MR; ++i) {
            Value mi = add(m0, ci(i));
            Value dx = vector::BroadcastOp::create(
                b, loc, vf8(),
                memref::LoadOp::create(b, loc, dxm, ValueRange{mi, blk}));
            SmallVector<Value> start;
            for (int64_t l = 0; l < levels; ++l)
              start.push_back(vector::InsertOp::create(
                  b, loc,
                  memref::LoadOp::create(b, loc, biasm,
                                         ValueRange{mi, add(blk, ci(l * nb))}),
                  zi, ArrayRef<int64_t>{0}));
            Value sx;
            if (!sym)
              sx = vector::InsertOp::create(
                  b, loc,
                  memref::LoadOp::create(b, loc, sxm, ValueRange{mi, blk}), zf,
                  ArrayRef<int64_t>{0});
            SmallVector<SmallVector<Value>> xs(levels);
            for (int64_t l = 0; l < levels; ++l)
              for (int64_t c = 0; c < B / 32; ++c)
                xs[l].push_back(vector::LoadOp::create(
                    b, loc, vi8x32(), xq,
                    ValueRange{mi, add(kBase, ci(l * K + 32 * c))}));
            for (int64_t j = 0; j < NR; ++j) {
              SmallVector<Value> dsum(start);
              for (int64_t l = 0; l < levels; ++l)
                for (int64_t c = 0; c < B / 32; ++c)
                  dsum[l] = dot(dsum[l], wch[j][c], xs[l][c]);
              Value scale = arith::MulFOp::create(b, loc, dw[j], dx);
              Value a = vector::FMAOp::create(b, loc, combineLevels(dsum),
                                              scale, accs[i * NR + j]);
              if (!sym)
                a = vector::FMAOp::create(b, loc, sx, mw[j], a);
              next.push_back(a);
            }
          }
          return next;
        });
    storeSums(acc, m0, n0, MR, NR);
  }

  //===--- interleaved weights: the rows of a group in the lanes ---------===//
  // A full group of 8 rows stores, for each block position, the group's 8
  // scales (then its 8 mins), then the values in 4-byte units, the 8 rows'
  // unit u next to each other (docs/QUANTIZE.md): 8 * bb bytes, addressed
  // through `wflat`, a 1-D view of the weight bytes.
  int64_t G = 0;
  Value wflat;

  /// 4 activation codes of row m at k, broadcast to the 8 lanes.
  Value xCodes4(Value m, Value k) {
    Value raw = vector::LoadOp::create(
        b, loc, VectorType::get({4}, b.getI8Type()), xq, ValueRange{m, k});
    Value word = vector::ExtractOp::create(
        b, loc,
        vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()),
                                  raw),
        ArrayRef<int64_t>{0});
    return vector::BitCastOp::create(
        b, loc, vi8x32(), vector::BroadcastOp::create(b, loc, vi32x8(), word));
  }

  /// The 8 scales (or mins) of a group's block at byte `off` of wflat.
  Value groupScales(Value off) {
    Value raw = vector::LoadOp::create(
        b, loc, VectorType::get({8 * scaleBytes}, b.getI8Type()), wflat,
        ValueRange{off});
    Value v =
        vector::BitCastOp::create(b, loc, VectorType::get({8}, scaleType), raw);
    if (scaleType.isF32())
      return v;
    return arith::ExtFOp::create(b, loc, vf8(), v);
  }

  /// y[m0 .. m0 + MR, n0 .. n0 + 8) for the full group of rows starting at
  /// n0: each 32-byte unit of the group is loaded and unpacked once for the
  /// MR rows of x.
  void groupTileI8(Value m0, Value n0, int64_t MR) {
    Value zf = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vf8(), b.getF32FloatAttr(0)));
    Value groupBase = mul(n0, ci(nb * bb));
    int64_t units = (bb - valOff) / 4;
    SmallVector<Value> ms;
    for (int64_t i = 0; i < MR; ++i)
      ms.push_back(add(m0, ci(i)));
    Value last; // the weight's last byte, bound of the prefetches
    if (prefetchBytes > 0)
      last = arith::SubIOp::create(
          b, loc, memref::DimOp::create(b, loc, wflat, 0), ci(1));
    SmallVector<Value> acc = loop(
        ci(0), ci(nb), 1, SmallVector<Value>(MR, zf),
        [&](Value blk, ValueRange accs) -> SmallVector<Value> {
          Value base = add(groupBase, mul(blk, ci(G * bb)));
          Value kBase = mul(blk, ci(B));
          if (prefetchBytes > 0) {
            // The stream `prefetchBytes` ahead (clamped to the weight).
            for (int64_t off = 0; off < G * bb; off += 64)
              memref::PrefetchOp::create(
                  b, loc, wflat,
                  ValueRange{arith::MinUIOp::create(
                      b, loc, add(base, ci(off + prefetchBytes)), last)},
                  false, 0, true);
          }
          // dsum[i * levels + l]: row i of x, activation level l.
          SmallVector<Value> dsum;
          for (Value m : ms)
            for (int64_t l = 0; l < levels; ++l)
              dsum.push_back(vector::BroadcastOp::create(
                  b, loc, vi32x8(),
                  memref::LoadOp::create(b, loc, biasm,
                                         ValueRange{m, add(blk, ci(l * nb))})));
          Value values = add(base, ci(G * valOff));
          for (int64_t u = 0; u < units; ++u) {
            Value v = vector::LoadOp::create(
                b, loc, vi8x32(), wflat, ValueRange{add(values, ci(32 * u))});
            // (codes, k of their first activation) pairs of this unit.
            SmallVector<std::pair<Value, int64_t>> parts;
            if (four) {
              parts.push_back({lowNibbles(v), 4 * u});
              parts.push_back({highNibbles(v), B / 2 + 4 * u});
            } else {
              parts.push_back({int8Codes(v), 4 * u});
            }
            for (auto [codes, k] : parts)
              for (int64_t i = 0; i < MR; ++i)
                for (int64_t l = 0; l < levels; ++l)
                  dsum[i * levels + l] =
                      dot(dsum[i * levels + l], codes,
                          xCodes4(ms[i], add(kBase, ci(l * K + k))));
          }
          Value dw = groupScales(base);
          Value mw = sym ? Value() : groupScales(add(base, ci(G * scaleBytes)));
          SmallVector<Value> next;
          for (int64_t i = 0; i < MR; ++i) {
            Value dx = vector::BroadcastOp::create(
                b, loc, vf8(),
                memref::LoadOp::create(b, loc, dxm, ValueRange{ms[i], blk}));
            Value a = vector::FMAOp::create(
                b, loc,
                combineLevels(ArrayRef<Value>(dsum).slice(i * levels, levels)),
                arith::MulFOp::create(b, loc, dw, dx), accs[i]);
            if (!sym) {
              Value sx = vector::BroadcastOp::create(
                  b, loc, vf8(),
                  memref::LoadOp::create(b, loc, sxm, ValueRange{ms[i], blk}));
              a = vector::FMAOp::create(b, loc, sx, mw, a);
            }
            next.push_back(a);
          }
          return next;
        });
    for (int64_t i = 0; i < MR; ++i)
      vector::StoreOp::create(b, loc, acc[i], y, ValueRange{ms[i], n0});
  }

  /// All tiles of y: [M, N], as an scf.parallel over blocks of rows of x
  /// (tokens) and rows of W (outputs) that loom-outline-parallel-loops
  /// hands to the rank's threads: decode (one row of x) splits W's rows,
  /// prefill both. Block edges are multiples of every tile size, so each
  /// y element is computed by the same tile code, in the same order, as
  /// without threads: results do not depend on the thread count.
  void body(bool i8 = false) {
    if (i8)
      quantizeRows(); // serial: O(M K), before the tiles read its buffers
    Value M = memref::DimOp::create(b, loc, x, 0);
    Value N = memref::DimOp::create(b, loc, w, 0);
    // Batch-1 tiles: 8 rows with int8 activations (memory-bound: more
    // rows in flight), 4 with f32 activations (compute-bound: registers).
    int64_t MR = 4, NR2 = 2, NR1 = i8 ? 8 : 4;
    if (tuning.mr) // the qmm-tile pass option
      MR = tuning.mr, NR2 = tuning.nr2, NR1 = tuning.nr1;
    int64_t nAlign = std::lcm(std::lcm(NR2, NR1), G ? G : 1);
    int64_t nChunk = nAlign * std::max<int64_t>(1, (16 + nAlign - 1) / nAlign);
    int64_t mChunk = MR * std::max<int64_t>(1, 16 / MR);
    auto ceilDiv = [&](Value v, int64_t d) {
      return arith::DivUIOp::create(b, loc, add(v, ci(d - 1)), ci(d));
    };
    auto par = scf::ParallelOp::create(
        b, loc, ValueRange{ci(0), ci(0)},
        ValueRange{ceilDiv(M, mChunk), ceilDiv(N, nChunk)},
        ValueRange{ci(1), ci(1)});
    // Blocks of nChunk x K multiply-adds: about 64K of them per thread at
    // least, so that small products stay on one thread.
    par->setAttr(kParallelGrainAttrName, b.getI64IntegerAttr(std::max<int64_t>(
                                             1, 65536 / (nChunk * K))));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(par.getBody()->getTerminator());
    Value m0 = mul(par.getInductionVars()[0], ci(mChunk));
    Value n0 = mul(par.getInductionVars()[1], ci(nChunk));
    Value m1 = arith::MinUIOp::create(b, loc, add(m0, ci(mChunk)), M);
    Value n1 = arith::MinUIOp::create(b, loc, add(n0, ci(nChunk)), N);
    tiles(i8, m0, m1, n0, n1, MR, NR2, NR1);
  }

  /// The tiles of y[m0:m1, n0:n1]; m0 is a multiple of MR, n0 of NR2, NR1
  /// (and G), so the tiling is the one of the whole [M, N].
  void tiles(bool i8, Value m0, Value m1, Value n0, Value n1, int64_t MR,
             int64_t NR2, int64_t NR1) {
    auto tileFn = [&](Value mt, Value nt, int64_t mr, int64_t nr) {
      if (i8)
        tileI8(mt, nt, mr, nr);
      else
        tile(mt, nt, mr, nr);
    };
    // lo + (hi - lo) rounded down to a multiple of t.
    auto floorTo = [&](Value lo, Value hi, int64_t t) -> Value {
      Value len = arith::SubIOp::create(b, loc, hi, lo);
      return arith::SubIOp::create(b, loc, hi,
                                   arith::RemUIOp::create(b, loc, len, ci(t)));
    };
    if (G) {
      // Interleaved weights: MR rows of x (then the last ones one by one)
      // against the full groups, then the remaining weight rows (stored as
      // they are) one by one.
      Value N = memref::DimOp::create(b, loc, w, 0);
      Value groups = arith::SubIOp::create(
          b, loc, N, arith::RemUIOp::create(b, loc, N, ci(G)));
      Value gEnd = arith::MinUIOp::create(b, loc, n1, groups);
      Value rStart = arith::MaxUIOp::create(b, loc, n0, groups);
      auto rowsOf = [&](Value mt, int64_t mr) {
        loop(n0, gEnd, G, {}, [&](Value nt, ValueRange) {
          groupTileI8(mt, nt, mr);
          return SmallVector<Value>();
        });
        loop(rStart, n1, 1, {}, [&](Value nt, ValueRange) {
          tileFn(mt, nt, mr, 1);
          return SmallVector<Value>();
        });
      };
      Value mFull = floorTo(m0, m1, MR);
      loop(m0, mFull, MR, {}, [&](Value mt, ValueRange) {
        rowsOf(mt, MR);
        return SmallVector<Value>();
      });
      loop(mFull, m1, 1, {}, [&](Value mt, ValueRange) {
        rowsOf(mt, 1);
        return SmallVector<Value>();
      });
      return;
    }
    Value mFull = floorTo(m0, m1, MR);
    Value nFull2 = floorTo(n0, n1, NR2), nFull1 = floorTo(n0, n1, NR1);
    loop(m0, mFull, MR, {}, [&](Value mt, ValueRange) {
      loop(n0, nFull2, NR2, {}, [&](Value nt, ValueRange) {
        tileFn(mt, nt, MR, NR2);
        return SmallVector<Value>();
      });
      loop(nFull2, n1, 1, {}, [&](Value nt, ValueRange) {
        tileFn(mt, nt, MR, 1);
        return SmallVector<Value>();
      });
      return SmallVector<Value>();
    });
    loop(mFull, m1, 1, {}, [&](Value mt, ValueRange) {
      loop(n0, nFull1, NR1, {}, [&](Value nt, ValueRange) {
        tileFn(mt, nt, 1, NR1);
        return SmallVector<Value>();
      });
      loop(nFull1, n1, 1, {}, [&](Value nt, ValueRange) {
        tileFn(mt, nt, 1, 1);
        return SmallVector<Value>();
      });
      return SmallVector<Value>();
    });
  }
};

std::string kernelName(QuantAttr q, int64_t k, QKernelActivations act,
                       int64_t interleaveRows) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "__loom_qmm_" << stringifyQuantFormat(q.getFormat()) << "_b"
     << q.getBlockSize() << "_" << stringifyQuantMode(q.getMode()) << "_"
     << q.getScaleType() << "_k" << k
     << (act == QKernelActivations::I8     ? "_i8"
         : act == QKernelActivations::I8x3 ? "_i8x3"
                                           : "");
  if (interleaveRows)
    os << "_r" << interleaveRows;
  return s;
}

} // namespace

bool isQMatmulMode(StringRef mode) {
  return mode.empty() || mode == "f32" || mode == "i8" || mode == "i8x3" ||
         mode == "dequant";
}

bool parseQKernelTuning(StringRef tile, StringRef prefetch,
                        QKernelTuning &tuning, std::string &error) {
  tuning = QKernelTuning();
  if (!tile.empty()) {
    SmallVector<StringRef> parts;
    tile.split(parts, 'x');
    int64_t v[3];
    bool ok = parts.size() == 3;
    for (size_t i = 0; ok && i < 3; ++i)
      ok = !parts[i].getAsInteger(10, v[i]) && v[i] >= 1 && v[i] <= 64;
    if (!ok) {
      error = ("qmm-tile=" + tile +
               ": expected MRxNR2xNR1, three integers from 1 to 64 "
               "(e.g. 4x2x8)")
                  .str();
      return false;
    }
    tuning.mr = v[0], tuning.nr2 = v[1], tuning.nr1 = v[2];
  }
  if (!prefetch.empty()) {
    int64_t bytes;
    if (prefetch.getAsInteger(10, bytes)) {
      error = ("qmm-prefetch=" + prefetch +
               ": expected an integer (bytes ahead, 0: none, -N: N tiles "
               "ahead)")
                  .str();
      return false;
    }
    tuning.prefetchBytes = bytes;
  }
  return true;
}

namespace {
/// The integer dot-product instructions the kernels may use on `target`:
/// AVX512-VNNI (vpdpbusd on 256-bit vectors: needs AVX512-VL), else AVX2's
/// byte dot products, else none (generic vector code). Null target: none.
enum class IntegerDots { None, Avx2, Vnni };
IntegerDots integerDotsOf(CpuTargetAttr target) {
  if (!target)
    return IntegerDots::None;
  if (target.hasFeature("avx512vnni") && target.hasFeature("avx512vl"))
    return IntegerDots::Vnni;
  return target.hasFeature("avx2") ? IntegerDots::Avx2 : IntegerDots::None;
}
} // namespace

QMatmulLowering chooseQMatmulLowering(QMatmulOp op, QTensorType qt,
                                      StringRef mode) {
  // The qmatmul pass option (f32 | i8 | i8x3 | dequant) overrides the
  // choice that `loomc --quant-act` recorded on the op.
  QMatmulLowering l;
  if (mode.empty()) {
    if (std::optional<QuantActivations> a = op.getQuantActivations()) {
      switch (*a) {
      case QuantActivations::f32:
        mode = "f32";
        break;
      case QuantActivations::int8:
      case QuantActivations::int8_portable:
        mode = "i8";
        break;
      case QuantActivations::int8x3:
      case QuantActivations::int8x3_portable:
        mode = "i8x3";
        break;
      }
      l.targetIsa = *a != QuantActivations::int8_portable &&
                    *a != QuantActivations::int8x3_portable;
    } else {
      // Unmarked (`--quant-act auto`, the default): three int8 levels where
      // the module's target has integer dot products (AVX2 or AVX512-VNNI),
      // about f32's accuracy at integer-dot speed; f32 activations where the
      // kernels would be generic vector code (docs/QUANTIZE.md).
      auto module = op->getParentOfType<ModuleOp>();
      auto target = module ? module->getAttrOfType<CpuTargetAttr>(
                                 LoomDialect::kTargetAttrName)
                           : CpuTargetAttr();
      mode = integerDotsOf(target) != IntegerDots::None ? "i8x3" : "f32";
    }
  }
  auto xt = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto yt = dyn_cast<RankedTensorType>(op.getResult().getType());
  l.kernel = mode != "dequant" && qt && qt.getStorageType() && xt && yt &&
             xt.getRank() >= 2 && xt.getElementType().isF32() &&
             yt.getElementType().isF32() && hasQMatmulKernel(qt.getQuant());
  if (mode == "i8")
    l.act = QKernelActivations::I8;
  else if (mode == "i8x3")
    l.act = QKernelActivations::I8x3;
  return l;
}

QWeightInterleave interleaveOf(QuantAttr q) {
  int64_t scaleBytes = q.getScaleType().getIntOrFloatBitWidth() / 8;
  int64_t head = q.getBlockBytes() - q.getBlockSize() * q.getBits() / 8;
  QWeightInterleave il;
  il.rows = kQWeightInterleaveRows;
  il.blockBytes = q.getBlockBytes();
  il.fieldBytes = scaleBytes;
  il.fields = head / scaleBytes;
  il.unitBytes = 4;
  return il;
}

func::FuncOp getOrCreateQMatmulKernel(OpBuilder &b, ModuleOp module,
                                      QuantAttr q, int64_t k,
                                      QKernelActivations act, bool targetIsa,
                                      bool interleaved,
                                      const QKernelTuning &tuning) {
  // The instructions of the module's target, never the host's: without a
  // loom.target, generic code.
  auto target =
      module->getAttrOfType<CpuTargetAttr>(LoomDialect::kTargetAttrName);
  IntegerDots dots = targetIsa ? integerDotsOf(target) : IntegerDots::None;
  bool vnni = dots == IntegerDots::Vnni;
  // Without VNNI, AVX2's byte dot products.
  bool avx2 = dots == IntegerDots::Avx2;
  int64_t levels = activationLevels(act);
  assert((!interleaved || levels) &&
         "interleaved weights are read by the int8-activation kernels");
  std::string name =
      kernelName(q, k, act, interleaved ? kQWeightInterleaveRows : 0);
  if (levels && !vnni)
    name += avx2 ? "_avx2" : "_generic";
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  // Through `b` (a pattern's rewriter), at module scope: the function and
  // its body are created as the rewriter's own changes.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  int64_t dyn = ShapedType::kDynamic;
  int64_t rowBytes = k / q.getBlockSize() * q.getBlockBytes();
  auto xt = MemRefType::get({dyn, k}, b.getF32Type());
  auto wt = MemRefType::get({dyn, rowBytes}, b.getI8Type());
  auto yt = MemRefType::get({dyn, dyn}, b.getF32Type());
  bool i8 = levels > 0;
  int64_t nb = k / q.getBlockSize();
  SmallVector<Type> args{xt, wt, yt};
  if (i8) {
    args.push_back(MemRefType::get({dyn, levels * k}, b.getI8Type()));
    args.push_back(MemRefType::get({dyn, nb}, b.getF32Type()));
    args.push_back(MemRefType::get({dyn, levels * nb}, b.getI32Type()));
    args.push_back(MemRefType::get({dyn, nb}, b.getF32Type()));
  }
  auto fn = func::FuncOp::create(b, loc, name, b.getFunctionType(args, {}));
  fn.setPrivate();
  Block *entry = b.createBlock(&fn.getBody(), fn.getBody().end(), args,
                               SmallVector<Location>(args.size(), loc));
  KernelGen gen(b, loc, q, k);
  gen.x = entry->getArgument(0);
  gen.w = entry->getArgument(1);
  gen.y = entry->getArgument(2);
  gen.module = module;
  // Interleaved weights stream sequentially: the int8 kernel keeps up with
  // the hardware prefetchers (software prefetches only cost time), the
  // three-level one does not (4 KB ahead: 0.62 vs 0.90 ms at 4096x4096).
  if (interleaved)
    gen.prefetchBytes = levels == 3 ? 4096 : 0;
  if (tuning.prefetchBytes) // the qmm-prefetch pass option
    gen.prefetchBytes = *tuning.prefetchBytes;
  gen.tuning = tuning;
  if (i8) {
    gen.xq = entry->getArgument(3);
    gen.dxm = entry->getArgument(4);
    gen.biasm = entry->getArgument(5);
    gen.sxm = entry->getArgument(6);
    gen.vnni = vnni;
    gen.avx2 = avx2;
    gen.levels = levels;
  }
  if (interleaved) {
    gen.G = kQWeightInterleaveRows;
    gen.wflat = memref::CollapseShapeOp::create(
        b, loc, gen.w, SmallVector<ReassociationIndices>{{0, 1}});
  }
  gen.body(i8);
  func::ReturnOp::create(b, loc);
  return fn;
}

} // namespace loom
