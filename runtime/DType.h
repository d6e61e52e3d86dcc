//===- runtime/DType.h - Element types and reduction kernels ----*- C++ -*-===//
//
// Element sizes, f16/bf16 <-> f32 conversions (round-to-nearest-even) and
// the blocked elementwise reduction kernel used by the shared-memory
// collectives (f16/bf16 accumulate in f32 and round once).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_DTYPE_H
#define LOOM_RUNTIME_DTYPE_H

#include "loom/runtime/abi.h"

#include <cstdint>
#include <cstring>

namespace loom::rt {

inline int64_t dtypeSize(int32_t dtype) {
  switch (dtype) {
  case LOOM_RT_F32:
  case LOOM_RT_I32:
    return 4;
  case LOOM_RT_F16:
  case LOOM_RT_BF16:
    return 2;
  case LOOM_RT_F64:
  case LOOM_RT_I64:
    return 8;
  case LOOM_RT_I8:
  case LOOM_RT_U8:
    return 1;
  default:
    return 0;
  }
}

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bf16ToFloat(uint16_t h) { return bitsToFloat(uint32_t(h) << 16); }
inline uint16_t floatToBf16(float f) {
  uint32_t u = floatToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet and a NaN
    return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) // inf / nan
    return bitsToFloat(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0)
      return bitsToFloat(sign);
    // subnormal: man * 2^-24
    float f = float(man) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  return bitsToFloat(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t floatToHalf(float f) {
  uint32_t u = floatToBits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) // nan
    return uint16_t(sign | 0x7e00u);
  if (absu >= 0x477ff000u) // rounds to >= 65520 -> inf
    return uint16_t(sign | 0x7c00u);
  if (absu < 0x38800000u) { // below the smallest normal (2^-14)
    // Subnormal or zero: value / 2^-24, rounded to nearest even.
    float a = bitsToFloat(absu) * 16777216.0f; // exact scaling by 2^24
    // a < 1024; round half to even through the float mantissa trick.
    float r = (a + 8388608.0f) - 8388608.0f; // 2^23: RNE in float
    return uint16_t(sign | uint32_t(r));
  }
  // Normal: re-bias exponent, round mantissa (13 dropped bits) to even.
  uint32_t v = absu - (112u << 23);
  v += 0xfffu + ((v >> 13) & 1u);
  return uint16_t(sign | (v >> 13));
}

/// out[i] = op(ins[0][i], ..., ins[nin-1][i]) for i < count. `out` may
/// alias any of the inputs exactly (blocked through a local accumulator).
/// Deterministic: inputs are combined in index order 0..nin-1.
void reduceElements(int32_t dtype, int32_t op, void *out,
                    const void *const *ins, int nin, int64_t count);

/// Converts count f16/bf16 elements to/from f32.
void widenToF32(int32_t dtype, const void *in, float *out, int64_t count);
void narrowFromF32(int32_t dtype, const float *in, void *out, int64_t count);

} // namespace loom::rt

#endif // LOOM_RUNTIME_DTYPE_H
