//===- AttentionPatterns.cpp - attention and rotary embeddings ------------===//
//
// loom.attention (grouped KV heads, masks, past key/values and in-place KV
// caches) becomes two products, through the runtime's batched GEMM when f32,
// around a masked softmax; rotary and its table become generics. With
// `fusedAttention` (the GPU lowering) an f32 attention is instead two loop
// nests with an online softmax over chunks of keys (flash-decoding style:
// no scores buffer, each key read once per query row).
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/LoweringUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace loom;
using namespace loom::lowering;

namespace {

struct AttentionEmitter : Emitter {
  using Emitter::Emitter;
  /// c[b,h] = a[b,h] x rhs[b,h/group] (rhs transposed when `tb`) through
  /// the runtime's batched GEMM; all rank 4, f32. Null when not applicable.
  Value attentionGemm(Operation *op, Value a, Value rhs, bool tb, int64_t heads,
                      int64_t group, RankedTensorType type,
                      ArrayRef<Value> sizes, Value rhsCache = {});
  /// out[b,h,s,j] = sum_r lhs[b,h,s,r] rhs(rhsMap) as a generated generic
  /// over (b, h, s, j, r), from a zero fill of `type` sized `sizes`.
  Value headProduct(RankedTensorType type, Value lhs, Value rhs,
                    ArrayRef<Value> sizes, AffineMap rhsMap);
  /// out[b,h,s,:] = softmax(scale * q[b,h,s,:] . k[b,h/G,t,:] + masks over
  /// t < T) . v[b,h/G,t,:] as two loop nests (`fusedAttention`): each
  /// (b, h, row, chunk) folds its keys into a running max, sum and Dv
  /// accumulators (online softmax), then each output element combines its
  /// row's chunks. A decode step (one query row) splits its keys into
  /// chunks of kChunk for parallelism; otherwise a row is one chunk. `k`,
  /// `v` may be whole KV caches of which rows [0, T) are read in place.
  Value fusedAttention(AttentionOp op, Value q, Value k, Value v, Value mask,
                       Value T, int64_t group, double scale);
  FailureOr<SmallVector<Value>> lowerAttention(AttentionOp op,
                                               AttentionOp::Adaptor a);
  Value lowerRotary(RotaryOp op, RotaryOp::Adaptor a);
  SmallVector<Value> lowerRotaryTable(RotaryTableOp op,
                                      RotaryTableOp::Adaptor a);
};

} // namespace

Value AttentionEmitter::attentionGemm(Operation *op, Value a, Value rhs,
                                      bool tb, int64_t heads, int64_t group,
                                      RankedTensorType type,
                                      ArrayRef<Value> sizes, Value rhsCache) {
  Value ctx = entryContext(op);
  if (!type.getElementType().isF32() || !ctx || !opts.gemm)
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
    Value rowsA = arith::MulIOp::create(b, loc, m, k);
    Value rowsC = arith::MulIOp::create(b, loc, m, n);
    Value headB =
        arith::MulIOp::create(b, loc, dim(rhsCache, 2), dim(rhsCache, 3));
    Value mv = indexToI64(m), nv = indexToI64(n), kv = indexToI64(k);
    Value tb32 = cI32(tb), zero = cI32(0), g = cI64(group);
    return kernel({a, rhsCache}, type, sizes, [&](ValueRange bufs) {
      for (int64_t h = 0; h < heads / group; ++h) {
        auto at = [&](Value buf, Value perHead, int64_t count) {
          return ptrAt(
              buf, arith::MulIOp::create(b, loc, perHead, cIndex(h * count)));
        };
        callRuntime("loom_rt_sgemm_batched",
                    ValueRange{ctx, zero, tb32, g, g, g, mv, nv, kv,
                               at(bufs[0], rowsA, group), at(bufs[1], headB, 1),
                               at(bufs[2], rowsC, group)});
      }
    });
  }
  Value batch = arith::MulIOp::create(b, loc, dim(a, 0), cIndex(heads));
  SmallVector<Value> args{
      ctx,         cI32(0),       cI32(tb),      indexToI64(batch), cI64(heads),
      cI64(group), indexToI64(m), indexToI64(n), indexToI64(k)};
  return kernel({a, rhs}, type, sizes, [&](ValueRange bufs) {
    SmallVector<Value> all = args;
    for (Value buf : bufs)
      all.push_back(ptrOf(buf));
    callRuntime("loom_rt_sgemm_batched", all);
  });
}

Value AttentionEmitter::headProduct(RankedTensorType type, Value lhs, Value rhs,
                                    ArrayRef<Value> sizes, AffineMap rhsMap) {
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
  Value init =
      fill(emptyAll(type, sizes), cFloat(b, loc, type.getElementType(), 0.0));
  SmallVector<utils::IteratorType> iters(5, utils::IteratorType::parallel);
  iters[4] = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init},
             ArrayRef<AffineMap>{
                 AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx), rhsMap,
                 AffineMap::get(5, 0, {d(0), d(1), d(2), d(3)}, ctx)},
             iters,
             [](OpBuilder &bb, Location l, ValueRange a) {
               Value p = arith::MulFOp::create(bb, l, a[0], a[1]);
               linalg::YieldOp::create(
                   bb, l, Value(arith::AddFOp::create(bb, l, a[2], p)));
             })
      .getResult(0);
}

/// Keys per chunk of a decode step's fused attention.
static constexpr int64_t kChunk = 64;

Value AttentionEmitter::fusedAttention(AttentionOp op, Value q, Value k,
                                       Value v, Value mask, Value T,
                                       int64_t group, double scale) {
  auto outType = op.getOutput().getType();
  int64_t hq = outType.getDimSize(1), dv = outType.getDimSize(3);
  bool causal = op.getCausal();
  Value B = dim(q, 0), S = dim(q, 2);
  // The causal limit of row s is s + (T - S): the cache's filled length.
  Value offset = arith::SubIOp::create(b, loc, T, S);
  SmallVector<Value> inputs{q, k, v};
  if (mask)
    inputs.push_back(mask);
  return kernel(
      inputs, outType, {B, cIndex(hq), S, cIndex(dv)}, [&](ValueRange bufs) {
        Value qb = bufs[0], kb = bufs[1], vb = bufs[2], out = bufs.back();
        Value mb = mask ? bufs[3] : Value();
        Type f32 = b.getF32Type();
        Value zero = cIndex(0), one = cIndex(1), D = dim(qb, 3);
        Value fzero = cFloat(b, loc, f32, 0.0),
              ninf = cFloat(b, loc, f32, -INFINITY);
        // A decode step (one row) splits its keys into chunks; a longer call
        // has parallelism enough in its rows. Either S or chunks is 1, so the
        // work items S x chunks are S + chunks - 1 (a sum the memory plan
        // bounds).
        Value step =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, S, one);
        Value chunks = arith::SelectOp::create(
            b, loc, step, arith::CeilDivUIOp::create(b, loc, T, cIndex(kChunk)),
            one);
        Value work = arith::SubIOp::create(
            b, loc, arith::AddIOp::create(b, loc, S, chunks), one);
        // Per work item: Dv accumulators, the running max and the sum.
        int64_t batch = outType.getDimSize(0);
        auto partialType =
            MemRefType::get({batch, hq, ShapedType::kDynamic, dv + 2}, f32);
        SmallVector<Value> partialSizes;
        if (isDyn(batch))
          partialSizes.push_back(B);
        partialSizes.push_back(work);
        Value partial =
            memref::AllocOp::create(b, loc, partialType, partialSizes);
        Value cDv = cIndex(dv), cDv1 = cIndex(dv + 1);
        auto isNegInf = [&](OpBuilder &bb, Location l, Value x) {
          return arith::CmpFOp::create(bb, l, arith::CmpFPredicate::OEQ, x,
                                       ninf);
        };

        scf::ParallelOp::create(
            b, loc, ValueRange{zero, zero, zero},
            ValueRange{B, cIndex(hq), work}, ValueRange{one, one, one},
            [&](OpBuilder &pb, Location l, ValueRange iv) {
              Value bi = iv[0], hi = iv[1], w = iv[2];
              Value si = arith::DivUIOp::create(pb, l, w, chunks);
              Value ci = arith::RemUIOp::create(pb, l, w, chunks);
              Value kvh = arith::DivUIOp::create(
                  pb, l, hi, arith::ConstantIndexOp::create(pb, l, group));
              // Keys [t0, t1): a chunk of kChunk (decode) or all T.
              Value t0 = arith::MulIOp::create(
                  pb, l, ci, arith::ConstantIndexOp::create(pb, l, kChunk));
              Value t1 = arith::SelectOp::create(
                  pb, l, step,
                  arith::MinUIOp::create(
                      pb, l,
                      arith::AddIOp::create(
                          pb, l, t0,
                          arith::ConstantIndexOp::create(pb, l, kChunk)),
                      T),
                  T);
              if (causal)
                t1 = arith::MinUIOp::create(
                    pb, l, t1,
                    arith::AddIOp::create(
                        pb, l, arith::AddIOp::create(pb, l, si, offset), one));
              auto accType = MemRefType::get({dv}, f32);
              Value acc = memref::AllocaOp::create(pb, l, accType);
              scf::ForOp::create(
                  pb, l, zero, cDv, one, ValueRange{},
                  [&](OpBuilder &fb, Location fl, Value e, ValueRange) {
                    memref::StoreOp::create(fb, fl, fzero, acc, e);
                    scf::YieldOp::create(fb, fl);
                  });
              auto keys = scf::ForOp::create(
                  pb, l, t0, t1, one, ValueRange{ninf, fzero},
                  [&](OpBuilder &fb, Location fl, Value t, ValueRange carried) {
                    Value m = carried[0], sum = carried[1];
                    auto dot = scf::ForOp::create(
                        fb, fl, zero, D, one, ValueRange{fzero},
                        [&](OpBuilder &db, Location dl, Value d, ValueRange r) {
                          Value x = scalarCast(
                              db, dl,
                              memref::LoadOp::create(db, dl, qb,
                                                     ValueRange{bi, hi, si, d}),
                              f32);
                          Value y = scalarCast(
                              db, dl,
                              memref::LoadOp::create(db, dl, kb,
                                                     ValueRange{bi, kvh, t, d}),
                              f32);
                          Value p = arith::MulFOp::create(db, dl, x, y);
                          scf::YieldOp::create(db, dl,
                                               ValueRange{arith::AddFOp::create(
                                                   db, dl, r[0], p)});
                        });
                    Value sc = arith::MulFOp::create(
                        fb, fl, dot.getResult(0), cFloat(fb, fl, f32, scale));
                    if (mb) {
                      // Broadcast as the unfused lowering's broadcastMap.
                      auto mt = cast<MemRefType>(mb.getType());
                      Value all[4] = {bi, hi, si, t};
                      SmallVector<Value> idx;
                      for (int64_t j = 0; j < mt.getRank(); ++j)
                        idx.push_back(
                            mt.getDimSize(j) == 1
                                ? arith::ConstantIndexOp::create(fb, fl, 0)
                                      .getResult()
                                : all[4 - mt.getRank() + j]);
                      Value mv = memref::LoadOp::create(fb, fl, mb, idx);
                      if (mt.getElementType().isInteger(1))
                        sc = arith::SelectOp::create(fb, fl, mv, sc, ninf);
                      else
                        sc = arith::AddFOp::create(fb, fl, sc,
                                                   scalarCast(fb, fl, mv, f32));
                    }
                    // Online softmax: rescale what was summed by exp(m - m').
                    Value mNew = arith::MaximumFOp::create(fb, fl, m, sc);
                    Value base = arith::SelectOp::create(
                        fb, fl, isNegInf(fb, fl, mNew), fzero, mNew);
                    Value alpha = math::ExpOp::create(
                        fb, fl, arith::SubFOp::create(fb, fl, m, base));
                    Value p = math::ExpOp::create(
                        fb, fl, arith::SubFOp::create(fb, fl, sc, base));
                    Value sumNew = arith::AddFOp::create(
                        fb, fl, arith::MulFOp::create(fb, fl, sum, alpha), p);
                    scf::ForOp::create(
                        fb, fl, zero, cDv, one, ValueRange{},
                        [&](OpBuilder &eb, Location el, Value e, ValueRange) {
                          Value a = memref::LoadOp::create(eb, el, acc, e);
                          Value x = scalarCast(
                              eb, el,
                              memref::LoadOp::create(eb, el, vb,
                                                     ValueRange{bi, kvh, t, e}),
                              f32);
                          Value r = arith::AddFOp::create(
                              eb, el, arith::MulFOp::create(eb, el, a, alpha),
                              arith::MulFOp::create(eb, el, p, x));
                          memref::StoreOp::create(eb, el, r, acc, e);
                          scf::YieldOp::create(eb, el);
                        });
                    scf::YieldOp::create(fb, fl, ValueRange{mNew, sumNew});
                  });
              scf::ForOp::create(
                  pb, l, zero, cDv, one, ValueRange{},
                  [&](OpBuilder &fb, Location fl, Value e, ValueRange) {
                    Value a = memref::LoadOp::create(fb, fl, acc, e);
                    memref::StoreOp::create(fb, fl, a, partial,
                                            ValueRange{bi, hi, w, e});
                    scf::YieldOp::create(fb, fl);
                  });
              memref::StoreOp::create(pb, l, keys.getResult(0), partial,
                                      ValueRange{bi, hi, w, cDv});
              memref::StoreOp::create(pb, l, keys.getResult(1), partial,
                                      ValueRange{bi, hi, w, cDv1});
            });

        // out[b,h,s,e]: the row's chunks, each scaled by exp(m_c - max m).
        scf::ParallelOp::create(
            b, loc, ValueRange{zero, zero, zero, zero},
            ValueRange{B, cIndex(hq), S, cDv}, ValueRange{one, one, one, one},
            [&](OpBuilder &pb, Location l, ValueRange iv) {
              Value bi = iv[0], hi = iv[1], si = iv[2], e = iv[3];
              Value first = arith::MulIOp::create(pb, l, si, chunks);
              auto item = [&](OpBuilder &fb, Location fl, Value c) -> Value {
                return arith::AddIOp::create(fb, fl, first, c);
              };
              auto mx = scf::ForOp::create(
                  pb, l, zero, chunks, one, ValueRange{ninf},
                  [&](OpBuilder &fb, Location fl, Value c, ValueRange r) {
                    Value m = memref::LoadOp::create(
                        fb, fl, partial,
                        ValueRange{bi, hi, item(fb, fl, c), cDv});
                    scf::YieldOp::create(
                        fb, fl,
                        ValueRange{arith::MaximumFOp::create(fb, fl, r[0], m)});
                  });
              Value M = mx.getResult(0);
              Value base =
                  arith::SelectOp::create(pb, l, isNegInf(pb, l, M), fzero, M);
              auto sums = scf::ForOp::create(
                  pb, l, zero, chunks, one, ValueRange{fzero, fzero},
                  [&](OpBuilder &fb, Location fl, Value c, ValueRange r) {
                    Value w = item(fb, fl, c);
                    Value m = memref::LoadOp::create(
                        fb, fl, partial, ValueRange{bi, hi, w, cDv});
                    Value f = math::ExpOp::create(
                        fb, fl, arith::SubFOp::create(fb, fl, m, base));
                    Value sum = memref::LoadOp::create(
                        fb, fl, partial, ValueRange{bi, hi, w, cDv1});
                    Value a = memref::LoadOp::create(fb, fl, partial,
                                                     ValueRange{bi, hi, w, e});
                    Value l2 = arith::AddFOp::create(
                        fb, fl, r[0], arith::MulFOp::create(fb, fl, sum, f));
                    Value a2 = arith::AddFOp::create(
                        fb, fl, r[1], arith::MulFOp::create(fb, fl, a, f));
                    scf::YieldOp::create(fb, fl, ValueRange{l2, a2});
                  });
              Value r = arith::DivFOp::create(pb, l, sums.getResult(1),
                                              sums.getResult(0));
              Type et = outType.getElementType();
              memref::StoreOp::create(pb, l, scalarCast(pb, l, r, et), out,
                                      ValueRange{bi, hi, si, e});
            });
      });
}

FailureOr<SmallVector<Value>>
AttentionEmitter::lowerAttention(AttentionOp op, AttentionOp::Adaptor a) {
  Value q = a.getQuery(), k = a.getKey(), v = a.getValue();
  auto qt = op.getQuery().getType();
  auto kt = op.getKey().getType();
  Type et = qt.getElementType();
  int64_t hq = qt.getDimSize(1), hkv = kt.getDimSize(1);
  if (isDyn(hq) || isDyn(hkv))
    return op.emitOpError() << "the CPU lowering needs static head counts";
  int64_t group = hq / hkv;
  SmallVector<Value> results;
  if (a.getPastKey()) {
    auto pk = cast<RankedTensorType>(op.getPresent()[0].getType());
    auto pv = cast<RankedTensorType>(op.getPresent()[1].getType());
    k = concat({a.getPastKey(), k}, 2, pk);
    v = concat({a.getPastValue(), v}, 2, pv);
  }
  Value cacheKey, cacheValue;
  if (a.getCacheKey()) {
    // Write the S new rows at [p0, p0 + S) of the caches (in place when the
    // caches are writable entry arguments), then attend over [0, p0 + S)
    // of the updated caches: only the filled part is read.
    Value p0 = tensor::ExtractOp::create(b, loc, a.getCachePositions(),
                                         ValueRange{cIndex(0)});
    p0 = arith::IndexCastOp::create(b, loc, b.getIndexType(), p0);
    Value len = dim(k, 2);
    // p0 + S rows, at most the cache's: loom-run checks the positions
    // against the context before a call, so the minimum is p0 + S; it
    // bounds the scores' size by the cache's for a memory plan (CUDA).
    Value filled = arith::AddIOp::create(b, loc, p0, len);
    filled = arith::MinUIOp::create(b, loc, filled, dim(a.getCacheKey(), 2));
    auto write = [&](Value cache, Value rows) {
      auto ct = cast<RankedTensorType>(cache.getType());
      SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(0),
                                        p0, b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes, viewSizes;
      for (unsigned i = 0; i < 4; ++i) {
        // A static number of new rows stays static, as the rows' type has
        // it (a decode step of one token).
        int64_t n = cast<RankedTensorType>(rows.getType()).getDimSize(2);
        OpFoldResult rowCount = ShapedType::isDynamic(n)
                                    ? OpFoldResult(len)
                                    : OpFoldResult(b.getIndexAttr(n));
        sizes.push_back(i == 2 ? rowCount : dimOfr(rows, i));
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
    std::tie(cacheKey, k) = write(a.getCacheKey(), k);
    std::tie(cacheValue, v) = write(a.getCacheValue(), v);
  }
  auto kAll = cast<RankedTensorType>(k.getType());
  Value B = dim(q, 0), S = dim(q, 2), T = dim(k, 2), Dv = dim(v, 3);
  int64_t headDim = qt.getDimSize(3);
  double scale = a.getScale() ? a.getScale()->convertToDouble()
                              : 1.0 / std::sqrt((double)headDim);
  if (isDyn(headDim) && !a.getScale())
    return op.emitOpError() << "the CPU lowering needs a static head_dim "
                               "or an explicit scale";
  auto finish = [&](Value out) {
    results.push_back(out);
    if (a.getPastKey()) {
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
  };
  // f32, or f16/bf16 loaded into the f32 accumulators
  // (loom-gpu-activation-dtype).
  auto isFloat = [](Value x) {
    Type t = cast<RankedTensorType>(x.getType()).getElementType();
    return t.isF32() || t.isF16() || t.isBF16();
  };
  if (opts.fusedAttention && isFloat(q) && isFloat(k) && isFloat(v) &&
      isFloat(op.getOutput()) &&
      !isDyn(op.getOutput().getType().getDimSize(3)) &&
      (!a.getMask() ||
       cast<RankedTensorType>(a.getMask().getType()).getRank() <= 4)) {
    // Keys [0, T): a cache is read in place (its filled rows), not
    // through the view of them (a strided copy into the kernel).
    return finish(fusedAttention(op, q, cacheKey ? cacheKey : k,
                                 cacheValue ? cacheValue : v, a.getMask(), T,
                                 group, scale));
  }
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
  AffineExpr kvHead = d(1).floorDiv(group);

  // scores[b,h,s,t] = scale * sum_d q[b,h,s,d] k[b,h/G,t,d]
  auto scoresType = RankedTensorType::get(
      {qt.getDimSize(0), hq, qt.getDimSize(2), kAll.getDimSize(2)}, et);
  Value scores = attentionGemm(op, q, k, /*tb=*/true, hq, group, scoresType,
                               {B, cIndex(hq), S, T}, cacheKey);
  if (!scores)
    scores = headProduct(scoresType, q, k, {B, cIndex(hq), S, T},
                         AffineMap::get(5, 0, {d(0), kvHead, d(3), d(4)}, ctx));

  // Scale, then the causal and explicit masks.
  Value mask = a.getMask();
  bool causal = op.getCausal();
  bool boolMask =
      mask &&
      cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1);
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
        Value s = arith::MulFOp::create(bb, l, a[0], cFloat(bb, l, et, scale));
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
          Value future = arith::CmpIOp::create(bb, l, arith::CmpIPredicate::ugt,
                                               ti, limit);
          s = arith::SelectOp::create(bb, l, future, ninf, s);
        }
        return s;
      });
  Value probs = softmax(scores, 3);

  // out[b,h,s,e] = sum_t p[b,h,s,t] v[b,h/G,t,e]
  auto outType = op.getOutput().getType();
  Value out = attentionGemm(op, probs, v, /*tb=*/false, hq, group, outType,
                            {B, cIndex(hq), S, Dv}, cacheValue);
  if (!out)
    out = headProduct(outType, probs, v, {B, cIndex(hq), S, Dv},
                      AffineMap::get(5, 0, {d(0), kvHead, d(4), d(3)}, ctx));
  return finish(out);
}

Value AttentionEmitter::lowerRotary(RotaryOp op, RotaryOp::Adaptor a) {
  Value x = a.getInput(), cosT = a.getCos(), sinT = a.getSin();
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
        Value inRot =
            arith::CmpIOp::create(bb, l, arith::CmpIPredicate::ult, di, twoR);
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
          first =
              arith::CmpIOp::create(bb, l, arith::CmpIPredicate::ult, di, r);
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

SmallVector<Value>
AttentionEmitter::lowerRotaryTable(RotaryTableOp op, RotaryTableOp::Adaptor a) {
  Value pos = a.getPositions();
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
  SmallVector<AffineMap> maps{AffineMap::get(rank, 0, pe, b.getContext()),
                              b.getMultiDimIdentityMap(rank),
                              b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  double logTheta = std::log((double)op.getTheta().convertToFloat());
  int64_t dimAttr = op.getDim();
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{type, type}, ValueRange{pos}, ValueRange{initC, initS},
      maps, iters, [&](OpBuilder &bb, Location l, ValueRange a) {
        Value i = linalg::IndexOp::create(bb, l, rank - 1);
        Value fi = arith::SIToFPOp::create(
            bb, l, bb.getF32Type(),
            arith::IndexCastOp::create(bb, l, bb.getI64Type(), i));
        // inv_freq = theta^(-2i/dim) = exp(-2i/dim * ln(theta))
        Value k = cFloat(bb, l, bb.getF32Type(), -2.0 * logTheta / dimAttr);
        Value inv =
            math::ExpOp::create(bb, l, arith::MulFOp::create(bb, l, fi, k));
        Value p = arith::SIToFPOp::create(bb, l, bb.getF32Type(), a[0]);
        Value ang = arith::MulFOp::create(bb, l, p, inv);
        Value c = scalarCast(bb, l, math::CosOp::create(bb, l, ang), et);
        Value s = scalarCast(bb, l, math::SinOp::create(bb, l, ang), et);
        linalg::YieldOp::create(bb, l, ValueRange{c, s});
      });
  return {g.getResult(0), g.getResult(1)};
}

namespace {} // namespace

void loom::lowering::populateAttentionPatterns(TypeConverter &converter,
                                               RewritePatternSet &patterns,
                                               const LoweringOptions &opts) {
  patterns.add<EmitterPattern<AttentionOp, AttentionEmitter,
                              &AttentionEmitter::lowerAttention>,
               EmitterPattern<RotaryOp, AttentionEmitter,
                              &AttentionEmitter::lowerRotary>,
               EmitterPattern<RotaryTableOp, AttentionEmitter,
                              &AttentionEmitter::lowerRotaryTable>>(
      converter, patterns.getContext(), opts);
}
