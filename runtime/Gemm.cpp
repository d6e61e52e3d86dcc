//===- Gemm.cpp - f32 GEMM for generated code -----------------------------===//
//
// Large f32 matrix products are called, not generated: OpenBLAS is the
// well-kept library for them (docs/ARCHITECTURE.md says which is which).
// Without OpenBLAS a cache-blocked loop keeps the build working.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"

#include "loom/runtime/abi.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#ifdef LOOM_RT_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

#ifdef LOOM_RT_HAVE_OPENBLAS
/// BLAS threads: the rank's thread count (one owner of the threads: the
/// rank's pool is idle while the rank is inside OpenBLAS, and generated code
/// never calls BLAS from a pool task), or $LOOM_BLAS_THREADS when set (an
/// override for measurements). OpenBLAS's count is per process; thread
/// ranks of one job share one count.
void configureThreads(loom_rt_ctx *ctx) {
  static std::mutex mu;
  static std::atomic<int> current{0};
  static const int env = [] {
    const char *v = std::getenv("LOOM_BLAS_THREADS");
    return v ? std::max(0, std::atoi(v)) : 0;
  }();
  int threads = env > 0 ? env : std::max(1, ctx ? ctx->numThreads : 1);
  if (current.load(std::memory_order_acquire) == threads)
    return;
  std::lock_guard<std::mutex> lock(mu);
  if (current.load(std::memory_order_relaxed) != threads) {
    openblas_set_num_threads(threads);
    current.store(threads, std::memory_order_release);
  }
}
#endif

/// C[m,n] = sum_k A[m,k] B[k,n] with optional transposes, row-major.
void blockedGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                 const float *a, const float *b, float *c) {
  auto A = [&](int64_t i, int64_t p) { return ta ? a[p * m + i] : a[i * k + p]; };
  auto B = [&](int64_t p, int64_t j) { return tb ? b[j * k + p] : b[p * n + j]; };
  std::fill(c, c + m * n, 0.0f);
  constexpr int64_t kb = 256;
  for (int64_t p0 = 0; p0 < k; p0 += kb) {
    int64_t p1 = std::min(k, p0 + kb);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = p0; p < p1; ++p) {
        float av = A(i, p);
        float *ci = c + i * n;
        for (int64_t j = 0; j < n; ++j)
          ci[j] += av * B(p, j);
      }
  }
}

} // namespace

extern "C" LOOM_RT_EXPORT void
loom_rt_sgemm(loom_rt_ctx *ctx, int32_t trans_a, int32_t trans_b, int64_t m,
              int64_t n, int64_t k, const float *a, const float *b,
              float *c) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    std::memset(c, 0, sizeof(float) * size_t(m) * size_t(n));
    return;
  }
#ifdef LOOM_RT_HAVE_OPENBLAS
  configureThreads(ctx);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
              blasint(k), 1.0f, a, blasint(trans_a ? m : k), b,
              blasint(trans_b ? k : n), 0.0f, c, blasint(n));
#else
  (void)ctx;
  blockedGemm(trans_a != 0, trans_b != 0, m, n, k, a, b, c);
#endif
}

extern "C" LOOM_RT_EXPORT void
loom_rt_sgemm_batched(loom_rt_ctx *ctx, int32_t trans_a, int32_t trans_b,
                      int64_t batch, int64_t heads, int64_t group, int64_t m,
                      int64_t n, int64_t k, const float *a, const float *b,
                      float *c) {
  if (batch <= 0)
    return;
  if (heads <= 0 || group <= 0 || heads % group != 0)
    loom_rt_abort(ctx, "loom_rt_sgemm_batched: heads must be a positive "
                       "multiple of group");
  int64_t kvHeads = heads / group;
  for (int64_t i = 0; i < batch; ++i) {
    // Grouped-query: product i reads right operand (i / heads) * kvHeads +
    // (i % heads) / group.
    int64_t j = (i / heads) * kvHeads + (i % heads) / group;
    loom_rt_sgemm(ctx, trans_a, trans_b, m, n, k, a + i * m * k,
                  b + j * k * n, c + i * m * n);
  }
}
