//===- runtime/DType.cpp - Reduction kernels --------------------*- C++ -*-===//

#include "DType.h"

#include <algorithm>
#include <type_traits>

namespace loom::rt {
namespace {

struct SumOp {
  template <typename T> static T apply(T a, T b) { return T(a + b); }
};
struct ProdOp {
  template <typename T> static T apply(T a, T b) { return T(a * b); }
};
struct MaxOp {
  template <typename T> static T apply(T a, T b) { return a < b ? b : a; }
};
struct MinOp {
  template <typename T> static T apply(T a, T b) { return b < a ? b : a; }
};

// Element storage -> accumulator conversion.
template <typename T> struct Plain {
  using Acc = T;
  static Acc load(T v) { return v; }
  static T store(Acc v) { return v; }
};
struct Half {
  using Acc = float;
  static float load(uint16_t v) { return halfToFloat(v); }
  static uint16_t store(float v) { return floatToHalf(v); }
};
struct BHalf {
  using Acc = float;
  static float load(uint16_t v) { return bf16ToFloat(v); }
  static uint16_t store(float v) { return floatToBf16(v); }
};

// One pass over up to 4 inputs: out[i] = op(in0[i], .., in{K-1}[i]) for
// i < m. Alias-safe when `out` is exactly one of the inputs (every input
// element is read before the element at the same index is written).
template <typename T, typename Conv, typename Op, int K, typename OutT,
          typename FirstT>
inline void fusedPass(OutT *out, const FirstT *first, const T *const *ins,
                      int64_t m) {
  auto ld = [](auto v) {
    if constexpr (std::is_same_v<decltype(v), T>)
      return Conv::load(v);
    else
      return v;
  };
  auto st = [](auto v) {
    if constexpr (std::is_same_v<OutT, T>)
      return Conv::store(v);
    else
      return v;
  };
  const T *b = ins[0];
  if constexpr (K == 1) {
    for (int64_t i = 0; i < m; ++i)
      out[i] = st(Op::apply(ld(first[i]), Conv::load(b[i])));
  } else if constexpr (K == 2) {
    const T *c = ins[1];
    for (int64_t i = 0; i < m; ++i)
      out[i] = st(Op::apply(Op::apply(ld(first[i]), Conv::load(b[i])),
                            Conv::load(c[i])));
  } else {
    const T *c = ins[1], *d = ins[2];
    for (int64_t i = 0; i < m; ++i)
      out[i] = st(Op::apply(Op::apply(Op::apply(ld(first[i]), Conv::load(b[i])),
                                      Conv::load(c[i])),
                            Conv::load(d[i])));
  }
}

template <typename T, typename Conv, typename Op, typename OutT,
          typename FirstT>
inline void foldPass(OutT *out, const FirstT *first, const T *const *ins, int k,
                     int64_t m) {
  switch (k) {
  case 1:
    return fusedPass<T, Conv, Op, 1>(out, first, ins, m);
  case 2:
    return fusedPass<T, Conv, Op, 2>(out, first, ins, m);
  default:
    return fusedPass<T, Conv, Op, 3>(out, first, ins, m);
  }
}

template <typename T, typename Conv, typename Op>
void reduceBlocked(T *out, const void *const *insV, int nin, int64_t count) {
  using Acc = typename Conv::Acc;
  const T *const *ins = reinterpret_cast<const T *const *>(insV);
  // Up to 4 inputs: one fused pass straight into out.
  if (nin <= 4)
    return foldPass<T, Conv, Op>(out, ins[0], ins + 1, nin - 1, count);
  // More: fold 4 inputs at a time into an L1-resident accumulator block
  // (combining in index order 0..nin-1), then store.
  constexpr int64_t kBlock = 2048;
  alignas(64) Acc acc[kBlock];
  for (int64_t off = 0; off < count; off += kBlock) {
    int64_t m = std::min(kBlock, count - off);
    const T *cur[3];
    for (int k = 0; k < 3; ++k)
      cur[k] = ins[1 + k] + off;
    fusedPass<T, Conv, Op, 3>(acc, ins[0] + off, cur, m);
    int j = 4;
    for (; j < nin; j += 3) {
      int k = std::min(3, nin - j);
      for (int q = 0; q < k; ++q)
        cur[q] = ins[j + q] + off;
      foldPass<T, Conv, Op>(acc, acc, cur, k, m);
    }
    T *o = out + off;
    for (int64_t i = 0; i < m; ++i)
      o[i] = Conv::store(acc[i]);
  }
}

template <typename T, typename Conv>
void reduceOp(int32_t op, void *out, const void *const *ins, int nin,
              int64_t count) {
  T *o = static_cast<T *>(out);
  switch (op) {
  case LOOM_RT_SUM:
    return reduceBlocked<T, Conv, SumOp>(o, ins, nin, count);
  case LOOM_RT_PROD:
    return reduceBlocked<T, Conv, ProdOp>(o, ins, nin, count);
  case LOOM_RT_MAX:
    return reduceBlocked<T, Conv, MaxOp>(o, ins, nin, count);
  case LOOM_RT_MIN:
    return reduceBlocked<T, Conv, MinOp>(o, ins, nin, count);
  default:
    return;
  }
}

} // namespace

void reduceElements(int32_t dtype, int32_t op, void *out,
                    const void *const *ins, int nin, int64_t count) {
  if (count <= 0 || nin <= 0)
    return;
  if (nin == 1) {
    if (out != ins[0])
      std::memmove(out, ins[0], size_t(count * dtypeSize(dtype)));
    return;
  }
  switch (dtype) {
  case LOOM_RT_F32:
    return reduceOp<float, Plain<float>>(op, out, ins, nin, count);
  case LOOM_RT_F64:
    return reduceOp<double, Plain<double>>(op, out, ins, nin, count);
  case LOOM_RT_F16:
    return reduceOp<uint16_t, Half>(op, out, ins, nin, count);
  case LOOM_RT_BF16:
    return reduceOp<uint16_t, BHalf>(op, out, ins, nin, count);
  // Signed integers: max/min on the signed type, sum/prod wrap through the
  // unsigned type (two's complement, no UB).
  case LOOM_RT_I8:
    if (op == LOOM_RT_MAX || op == LOOM_RT_MIN)
      return reduceOp<int8_t, Plain<int8_t>>(op, out, ins, nin, count);
    return reduceOp<uint8_t, Plain<uint8_t>>(op, out, ins, nin, count);
  case LOOM_RT_I32:
    if (op == LOOM_RT_MAX || op == LOOM_RT_MIN)
      return reduceOp<int32_t, Plain<int32_t>>(op, out, ins, nin, count);
    return reduceOp<uint32_t, Plain<uint32_t>>(op, out, ins, nin, count);
  case LOOM_RT_I64:
    if (op == LOOM_RT_MAX || op == LOOM_RT_MIN)
      return reduceOp<int64_t, Plain<int64_t>>(op, out, ins, nin, count);
    return reduceOp<uint64_t, Plain<uint64_t>>(op, out, ins, nin, count);
  case LOOM_RT_U8:
    return reduceOp<uint8_t, Plain<uint8_t>>(op, out, ins, nin, count);
  default:
    return;
  }
}

void widenToF32(int32_t dtype, const void *in, float *out, int64_t count) {
  const uint16_t *h = static_cast<const uint16_t *>(in);
  if (dtype == LOOM_RT_F16)
    for (int64_t i = 0; i < count; ++i)
      out[i] = halfToFloat(h[i]);
  else
    for (int64_t i = 0; i < count; ++i)
      out[i] = bf16ToFloat(h[i]);
}

void narrowFromF32(int32_t dtype, const float *in, void *out, int64_t count) {
  uint16_t *h = static_cast<uint16_t *>(out);
  if (dtype == LOOM_RT_F16)
    for (int64_t i = 0; i < count; ++i)
      h[i] = floatToHalf(in[i]);
  else
    for (int64_t i = 0; i < count; ++i)
      h[i] = floatToBf16(in[i]);
}

} // namespace loom::rt
