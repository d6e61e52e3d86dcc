//===- test/runtime/TestUtil.h - Helpers for runtime tests ------*- C++ -*-===//
#ifndef LOOM_TEST_RUNTIME_TESTUTIL_H
#define LOOM_TEST_RUNTIME_TESTUTIL_H

#include "DType.h"
#include "loom/runtime/Runtime.h"
#include "loom/runtime/abi.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace loom::rt::test {

/// Quiet launch options with a timeout (seconds).
inline LaunchOptions quietLaunch(double timeout) {
  LaunchOptions o;
  o.timeoutSeconds = timeout;
  o.quiet = true;
  return o;
}

/// Every rank's failure message, one per line.
inline std::string joined(const LaunchResult &r) {
  std::string s;
  for (const auto &m : r.messages)
    s += m + "\n";
  return s;
}

/// Whether any rank's failure message contains `s`.
inline bool anyContains(const LaunchResult &r, const std::string &s) {
  for (const auto &m : r.messages)
    if (m.find(s) != std::string::npos)
      return true;
  return false;
}

/// Stores v (exactly representable for the values the tests use) as dtype.
inline void store(int32_t dt, void *buf, int64_t i, double v) {
  switch (dt) {
  case LOOM_RT_F32:
    static_cast<float *>(buf)[i] = float(v);
    break;
  case LOOM_RT_F64:
    static_cast<double *>(buf)[i] = v;
    break;
  case LOOM_RT_F16:
    static_cast<uint16_t *>(buf)[i] = floatToHalf(float(v));
    break;
  case LOOM_RT_BF16:
    static_cast<uint16_t *>(buf)[i] = floatToBf16(float(v));
    break;
  case LOOM_RT_I8:
    static_cast<int8_t *>(buf)[i] = int8_t(v);
    break;
  case LOOM_RT_I32:
    static_cast<int32_t *>(buf)[i] = int32_t(v);
    break;
  case LOOM_RT_I64:
    static_cast<int64_t *>(buf)[i] = int64_t(v);
    break;
  case LOOM_RT_U8:
    static_cast<uint8_t *>(buf)[i] = uint8_t(v);
    break;
  }
}

inline double load(int32_t dt, const void *buf, int64_t i) {
  switch (dt) {
  case LOOM_RT_F32:
    return static_cast<const float *>(buf)[i];
  case LOOM_RT_F64:
    return static_cast<const double *>(buf)[i];
  case LOOM_RT_F16:
    return halfToFloat(static_cast<const uint16_t *>(buf)[i]);
  case LOOM_RT_BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(buf)[i]);
  case LOOM_RT_I8:
    return static_cast<const int8_t *>(buf)[i];
  case LOOM_RT_I32:
    return static_cast<const int32_t *>(buf)[i];
  case LOOM_RT_I64:
    return double(static_cast<const int64_t *>(buf)[i]);
  case LOOM_RT_U8:
    return static_cast<const uint8_t *>(buf)[i];
  }
  return 0;
}

/// Small integer test values: exact in every dtype, sums over <= 8 ranks
/// stay below 128 (i8) and 256 (bf16).
inline double value(int64_t member, int64_t i) {
  return double((member + 1) * ((i * 7 + member) % 3 + 1));
}
/// For products: 1 or 2, so products over 8 ranks stay <= 256... use few.
inline double prodValue(int64_t member, int64_t i) {
  return ((i + member) % 4 == 0) ? 2.0 : 1.0;
}

inline double combine(int32_t op, double a, double b) {
  switch (op) {
  case LOOM_RT_SUM:
    return a + b;
  case LOOM_RT_PROD:
    return a * b;
  case LOOM_RT_MAX:
    return a < b ? b : a;
  default:
    return b < a ? b : a;
  }
}

/// A byte buffer of n elements of dtype.
struct Buf {
  int32_t dt;
  std::vector<char> bytes;
  Buf(int32_t dt, int64_t n) : dt(dt), bytes(size_t(n * dtypeSize(dt)) + 1) {}
  void *data() { return bytes.data(); }
  void set(int64_t i, double v) { store(dt, bytes.data(), i, v); }
  double get(int64_t i) const { return load(dt, bytes.data(), i); }
};

} // namespace loom::rt::test

#endif
