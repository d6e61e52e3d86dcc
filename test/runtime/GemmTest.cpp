//===- GemmTest.cpp - loom_rt_sgemm and its OpenBLAS core choice ----------===//

#include "loom/runtime/Runtime.h"
#include "loom/runtime/abi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using loom::rt::openBlasCoreFor;

TEST(Gemm, CoreFromFeaturesNotModelNumbers) {
  // (amd, avx, avx2, fma, avx512, avx512bf16)
  EXPECT_EQ(openBlasCoreFor(false, true, true, true, true, false), "SkylakeX");
  EXPECT_EQ(openBlasCoreFor(false, true, true, true, true, true),
            "Cooperlake");
  EXPECT_EQ(openBlasCoreFor(true, true, true, true, true, false), "SkylakeX");
  EXPECT_EQ(openBlasCoreFor(false, true, true, true, false, false),
            "Haswell");
  EXPECT_EQ(openBlasCoreFor(true, true, true, true, false, false), "Zen");
  // AVX2 without FMA is not Haswell's kernels' ISA.
  EXPECT_EQ(openBlasCoreFor(false, true, true, false, false, false),
            "SandyBridge");
  EXPECT_EQ(openBlasCoreFor(false, true, false, false, false, false),
            "SandyBridge");
  EXPECT_EQ(openBlasCoreFor(false, false, false, false, false, false), "");
}

TEST(Gemm, BackendIsNamed) {
  std::string b = loom::rt::gemmBackend();
  EXPECT_FALSE(b.empty());
#ifdef __x86_64__
  // With OpenBLAS on an x86 host with AVX, the core was chosen from the
  // features (or OPENBLAS_CORETYPE was given).
  if (b.rfind("OpenBLAS", 0) == 0 && __builtin_cpu_supports("avx"))
    EXPECT_NE(b.find("core "), std::string::npos) << b;
#endif
}

TEST(Gemm, MatchesReferenceWithTransposes) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      int64_t m = 37, n = 29, k = 71;
      std::vector<float> a(m * k), b(k * n), c(m * n, 7.0f);
      for (float &v : a)
        v = u(rng);
      for (float &v : b)
        v = u(rng);
      loom_rt_sgemm(nullptr, ta, tb, m, n, k, a.data(), b.data(), c.data());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double ref = 0;
          for (int64_t p = 0; p < k; ++p)
            ref += double(ta ? a[p * m + i] : a[i * k + p]) *
                   double(tb ? b[j * k + p] : b[p * n + j]);
          ASSERT_NEAR(c[i * n + j], ref, 1e-4) << ta << tb << i << j;
        }
    }
}

} // namespace
