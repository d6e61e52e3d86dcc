//===- test/runtime/DTypeTest.cpp - f16/bf16 conversions, kernels -*- C++
//-*-===//

#include "DType.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace loom::rt;

TEST(DType, HalfRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfToFloat(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f))));
      continue;
    }
    EXPECT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

TEST(DType, HalfRoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // tie -> even -> inf
  EXPECT_EQ(floatToHalf(1e-8f), 0x0000);
  EXPECT_EQ(floatToHalf(5.9604645e-08f), 0x0001); // smallest subnormal
  // 1 + 2^-11 is a tie between 1 and 1+2^-10: rounds to even (1).
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3.0f / 2048), 0x3c02);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
}

TEST(DType, Bf16) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBf16(1.0f + 1.0f / 256), 0x3f80); // tie -> even
  EXPECT_EQ(floatToBf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = bf16ToFloat(uint16_t(h));
    if (!std::isnan(f))
      EXPECT_EQ(floatToBf16(f), h);
  }
}

TEST(DType, ReduceAliasedOutput) {
  std::vector<int32_t> a(10000, 3), b(10000, 4);
  const void *ins[2] = {a.data(), b.data()};
  reduceElements(LOOM_RT_I32, LOOM_RT_SUM, a.data(), ins, 2, 10000);
  for (int32_t x : a)
    ASSERT_EQ(x, 7);
  std::vector<int8_t> c(5, 100), d(5, 100);
  const void *ins2[2] = {c.data(), d.data()};
  reduceElements(LOOM_RT_I8, LOOM_RT_SUM, c.data(), ins2, 2, 5);
  EXPECT_EQ(c[0], int8_t(-56)); // wraps
  reduceElements(LOOM_RT_I8, LOOM_RT_MIN, c.data(), ins2, 2, 5);
  EXPECT_EQ(c[0], int8_t(-56));
}
