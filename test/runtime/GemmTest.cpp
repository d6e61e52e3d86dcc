//===- GemmTest.cpp - loom_rt_sgemm and its OpenBLAS core choice ----------===//

#include "loom/runtime/Gemm.h"
#include "loom/runtime/Runtime.h"
#include "loom/runtime/abi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <unistd.h>
#include <vector>

namespace {

using loom::rt::openBlasCoreFor;

TEST(Gemm, CoreFromFeaturesNotModelNumbers) {
  // (amd, avx, avx2, fma, avx512, avx512bf16)
  EXPECT_EQ(openBlasCoreFor(false, true, true, true, true, false), "SkylakeX");
  EXPECT_EQ(openBlasCoreFor(false, true, true, true, true, true), "Cooperlake");
  EXPECT_EQ(openBlasCoreFor(true, true, true, true, true, false), "SkylakeX");
  EXPECT_EQ(openBlasCoreFor(false, true, true, true, false, false), "Haswell");
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
  if (b.find("OpenBLAS") != std::string::npos && __builtin_cpu_supports("avx"))
    EXPECT_NE(b.find("core "), std::string::npos) << b;
  // The packed kernel for weights is named when the CPU has one.
  if (loom::rt::bestGemmKernel() != loom::rt::GemmKernel::None &&
      !std::getenv("LOOM_GEMM"))
    EXPECT_NE(b.find(loom::rt::gemmKernelName(loom::rt::bestGemmKernel())),
              std::string::npos)
        << b;
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

using loom::rt::GemmKernel;

std::vector<GemmKernel> supportedKernels() {
  std::vector<GemmKernel> ks;
  for (GemmKernel k : {GemmKernel::Avx2Fma, GemmKernel::Avx512})
    if (loom::rt::gemmKernelSupported(k))
      ks.push_back(k);
  return ks;
}

std::vector<float> randomFloats(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

/// |C - A B| against a float64 reference, within the rounding bound of a
/// float32 sum of k products (k u sum_k |a b|, u = 2^-24, doubled).
void expectMatches(int64_t m, int64_t n, int64_t k, bool tb,
                   const std::vector<float> &a, int64_t lda,
                   const std::vector<float> &b, const std::vector<float> &c,
                   int64_t ldc, const std::string &what) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        double x = a[i * lda + p], y = tb ? b[j * k + p] : b[p * n + j];
        ref += x * y;
        mag += std::abs(x * y);
      }
      ASSERT_NEAR(c[i * ldc + j], ref, double(k) * 1.2e-7 * mag + 1e-30)
          << what << " at C[" << i << "," << j << "]";
    }
}

// The packed kernels on sizes that are not multiples of the tile (MR rows
// x 16 columns) nor of the K chunk (256), K = 1 and N = 1, B in both
// layouts, A and C with leading dimensions larger than their rows.
TEST(Gemm, PackedKernelsOddSizes) {
  std::vector<GemmKernel> ks = supportedKernels();
  if (ks.empty())
    GTEST_SKIP() << "no packed GEMM kernel for this CPU";
  std::mt19937 rng(7);
  struct Size {
    int64_t m, n, k;
  };
  for (GemmKernel kernel : ks)
    for (Size s : {Size{1, 1, 1}, Size{7, 1, 5}, Size{1, 33, 1},
                   Size{13, 17, 1}, Size{6, 16, 256}, Size{12, 16, 257},
                   Size{37, 29, 71}, Size{100, 47, 600}, Size{97, 1, 513},
                   Size{5, 250, 3}, Size{131, 65, 300}})
      for (bool tb : {false, true}) {
        int64_t lda = s.k + 3, ldc = s.n + 5;
        std::vector<float> a = randomFloats(size_t(s.m * lda), rng);
        std::vector<float> b = randomFloats(size_t(s.k * s.n), rng);
        std::vector<float> c(size_t(s.m * ldc), 42.0f);
        loom::rt::PackedB pb = loom::rt::packGemmB(tb, s.k, s.n, b.data());
        ASSERT_TRUE(pb.data);
        loom::rt::gemmPacked(nullptr, kernel, s.m, a.data(), lda, pb, c.data(),
                             ldc);
        std::string what =
            std::string(loom::rt::gemmKernelName(kernel)) +
            " m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
            " k=" + std::to_string(s.k) + " tb=" + std::to_string(tb);
        expectMatches(s.m, s.n, s.k, tb, a, lda, b, c, ldc, what);
        // The padding between rows of C is not written.
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = s.n; j < ldc; ++j)
            ASSERT_EQ(c[i * ldc + j], 42.0f) << what;
      }
}

// loom_rt_sgemm on a weight of the rank's mapped file takes the packed
// path (packed once, reused by the next call), and gives the same bits
// on 1, 2 and 3 threads.
TEST(Gemm, MappedWeightPackedAndThreadIndependent) {
  if (supportedKernels().empty())
    GTEST_SKIP() << "no packed GEMM kernel for this CPU";
  std::mt19937 rng(11);
  int64_t m = 70, n = 83, k = 300;
  std::vector<float> a = randomFloats(size_t(m * k), rng);
  std::vector<float> w = randomFloats(size_t(k * n), rng);
  auto path = std::filesystem::temp_directory_path() /
              ("loom-gemm-test-" + std::to_string(::getpid()) + ".bin");
  {
    std::FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    std::fwrite(w.data(), sizeof(float), w.size(), f);
    std::fclose(f);
  }
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3})
    for (int tb : {0, 1}) {
      std::vector<float> c(size_t(m * n), 0.0f), c2(size_t(m * n), 0.0f);
      loom::rt::LaunchOptions o;
      o.quiet = true;
      o.threadsPerRank = threads;
      int rc = loom::rt::runThreads(
          1, {},
          [&](loom_rt_ctx *ctx) {
            std::string err;
            if (!loom::rt::mapWeight(ctx, 0, path.string(), 0,
                                     int64_t(w.size() * sizeof(float)), &err))
              return 1;
            auto *wp = static_cast<const float *>(loom_rt_weight(ctx, 0));
            loom_rt_sgemm(ctx, 0, tb, m, n, k, a.data(), wp, c.data());
            loom_rt_sgemm(ctx, 0, tb, m, n, k, a.data(), wp, c2.data());
            return 0;
          },
          o);
      ASSERT_EQ(rc, 0);
      expectMatches(m, n, k, tb, a, k, w, c, n,
                    "threads=" + std::to_string(threads));
      EXPECT_EQ(c, c2);
      if (threads == 1) {
        // The packed kernel's bits: the product did not go to OpenBLAS.
        loom::rt::PackedB pb = loom::rt::packGemmB(tb, k, n, w.data());
        std::vector<float> direct(size_t(m * n));
        loom::rt::gemmPacked(nullptr, loom::rt::bestGemmKernel(), m, a.data(),
                             k, pb, direct.data(), n);
        EXPECT_EQ(c, direct);
        results.push_back(c);
      } else
        EXPECT_EQ(c, results[size_t(tb)]) << "threads=" << threads;
    }
  std::filesystem::remove(path);
}

// loom_rt_sgemm_batched with grouped-query indexing (heads 4, group 2):
// every product against the float64 reference, on 1 and 2 threads (the
// products split over the pool), the same bits on both; m = 20 takes the
// packed path, m = 3 OpenBLAS's.
TEST(Gemm, BatchedGroupedQueryOnThreads) {
  std::mt19937 rng(5);
  for (int64_t m : {20, 3})
    for (int tb : {0, 1}) {
      int64_t batch = 8, heads = 4, group = 2, n = 19, k = 33;
      int64_t kvProducts = batch / heads * (heads / group);
      std::vector<float> a = randomFloats(size_t(batch * m * k), rng);
      std::vector<float> b = randomFloats(size_t(kvProducts * k * n), rng);
      std::vector<float> first;
      for (int threads : {1, 2}) {
        std::vector<float> c(size_t(batch * m * n), 0.0f);
        loom::rt::LaunchOptions o;
        o.quiet = true;
        o.threadsPerRank = threads;
        ASSERT_EQ(loom::rt::runThreads(
                      1, {},
                      [&](loom_rt_ctx *ctx) {
                        loom_rt_sgemm_batched(ctx, 0, tb, batch, heads, group,
                                              m, n, k, a.data(), b.data(),
                                              c.data());
                        return 0;
                      },
                      o),
                  0);
        for (int64_t i = 0; i < batch; ++i) {
          int64_t r = (i / heads) * (heads / group) + (i % heads) / group;
          std::vector<float> ai(a.begin() + i * m * k,
                                a.begin() + (i + 1) * m * k);
          std::vector<float> bi(b.begin() + r * k * n,
                                b.begin() + (r + 1) * k * n);
          std::vector<float> ci(c.begin() + i * m * n,
                                c.begin() + (i + 1) * m * n);
          expectMatches(m, n, k, tb, ai, k, bi, ci, n,
                        "product " + std::to_string(i) +
                            " m=" + std::to_string(m));
        }
        if (first.empty())
          first = c;
        else if (m == 20)
          EXPECT_EQ(c, first) << "threads=" << threads;
      }
    }
}

} // namespace
