//===- test/gpu/QuantReference.h - reference qmatmul weights, CPU side -*- C++
//-*-===//
//
// Random weights in the block formats the qmatmul kernels read, and their
// dequantization, written from the layout's description
// (include/loom/Quant/Quant.h; GGUF for q4_0/q4_1/q8_0) independently of
// the kernel generator. Used by the CPU emulation test of the kernels and
// by bench/gpu on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TEST_GPU_QUANTREFERENCE_H
#define LOOM_TEST_GPU_QUANTREFERENCE_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace loom::gpu::ref {

/// A weight format and shape, by the names loom-gpu-kernels --list prints.
struct Format {
  std::string format, mode, scale, act;
  int64_t block = 32, n = 0, k = 0;
};

inline uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t e = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t m = x & 0x7fffff;
  if (e <= 0) { // subnormal or zero (the bench never makes tiny values)
    return uint16_t(sign);
  }
  if (e >= 31)
    return uint16_t(sign | 0x7c00);
  uint32_t h = sign | uint32_t(e) << 10 | m >> 13;
  uint32_t rest = m & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(h);
}

inline float fromHalf(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  int32_t e = (h >> 10) & 0x1f;
  uint32_t m = h & 0x3ff;
  uint32_t x;
  if (e == 0) {
    float v = std::ldexp(float(m), -24);
    return sign ? -v : v;
  }
  if (e == 31)
    x = sign | 0x7f800000 | m << 13;
  else
    x = sign | uint32_t(e - 15 + 127) << 23 | m << 13;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

struct Layout {
  int bits = 4;
  int64_t block = 32, sb = 2, vo = 2, bb = 18;
  bool gguf = false;
};

inline Layout layoutOf(const Format &s) {
  Layout l;
  l.gguf = s.format == "q4_0" || s.format == "q4_1" || s.format == "q8_0";
  l.bits = s.format == "q8_0" || s.format == "int8" ? 8 : 4;
  l.block = s.block;
  l.sb = s.scale == "f32" ? 4 : 2;
  l.vo = s.mode == "min"                     ? 2 * l.sb
         : s.mode == "zero_point" && !l.gguf ? l.sb + 1
                                             : l.sb;
  l.bb = l.vo + l.block * l.bits / 8;
  return l;
}

inline void putScale(uint8_t *p, const std::string &type, float v) {
  if (type == "f32") {
    std::memcpy(p, &v, 4);
  } else if (type == "bf16") {
    uint32_t x;
    std::memcpy(&x, &v, 4);
    uint16_t b = uint16_t(x >> 16);
    std::memcpy(p, &b, 2);
  } else {
    uint16_t h = toHalf(v);
    std::memcpy(p, &h, 2);
  }
}

inline float getScale(const uint8_t *p, const std::string &type) {
  if (type == "f32") {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (type == "bf16") {
    uint32_t x = uint32_t(h) << 16;
    float v;
    std::memcpy(&v, &x, 4);
    return v;
  }
  return fromHalf(h);
}

/// Random blocks of the spec's format.
inline std::vector<uint8_t> randomWeight(const Format &s, std::mt19937 &rng) {
  Layout l = layoutOf(s);
  int64_t blocks = s.n * (s.k / l.block);
  std::vector<uint8_t> w(size_t(blocks * l.bb));
  std::uniform_real_distribution<float> scale(0.005f, 0.02f), mn(-0.1f, 0.1f);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t *p = w.data() + b * l.bb;
    putScale(p, s.scale, scale(rng));
    if (s.mode == "min")
      putScale(p + l.sb, s.scale, mn(rng));
    if (s.mode == "zero_point" && !l.gguf)
      p[l.sb] = uint8_t(byte(rng) % (l.bits == 4 ? 16 : 256));
    for (int64_t i = l.vo; i < l.bb; ++i)
      p[i] = uint8_t(byte(rng));
  }
  return w;
}

/// Dequantized [n, k] weight.
inline std::vector<float> dequant(const Format &s,
                                  const std::vector<uint8_t> &w) {
  Layout l = layoutOf(s);
  std::vector<float> out(size_t(s.n * s.k));
  int64_t nb = s.k / l.block;
  for (int64_t r = 0; r < s.n; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t *p = w.data() + (r * nb + b) * l.bb;
      float d = getScale(p, s.scale);
      float m = s.mode == "min" ? getScale(p + l.sb, s.scale) : 0.0f;
      int z = s.mode == "zero_point"                 ? (l.gguf ? 8 : p[l.sb])
              : s.mode == "symmetric" && l.bits == 4 ? 8
                                                     : 0;
      const uint8_t *v = p + l.vo;
      for (int64_t j = 0; j < l.block; ++j) {
        int q;
        if (l.bits == 4)
          q = j < l.block / 2 ? (v[j] & 15) : (v[j - l.block / 2] >> 4);
        else
          q = s.mode == "symmetric" ? int(int8_t(v[j])) : int(v[j]);
        float x = s.mode == "min" ? d * float(q) + m : d * float(q - z);
        out[size_t(r * s.k + b * l.block + j)] = x;
      }
    }
  return out;
}

} // namespace loom::gpu::ref

#endif // LOOM_TEST_GPU_QUANTREFERENCE_H
