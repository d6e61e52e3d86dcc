//===- GemmPacked.cpp - f32 GEMM micro-kernels on packed weights ----------===//
//
// C = A B where B is a weight packed once into panels of 16 columns
// (loom/runtime/Gemm.h). The loop nest, per task of (row block, panels):
//
//   for each block of kKc rows of K          (B's chunk: kKc x 16 floats, L1)
//     for each panel
//       for each tile of MR rows of A        (A's rows read in place)
//         micro-kernel: MR x 16 accumulators in registers over the chunk,
//         stored to C (the first chunk) or added to it (the next ones)
//
// so C is never zeroed first, and B is never re-packed. The kernels are
// compiled with target attributes and chosen at run time from cpuid
// features (__builtin_cpu_supports), never from the CPU model.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Gemm.h"
#include "loom/runtime/abi.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LOOM_GEMM_X86 1
#include <immintrin.h>
#endif

namespace loom::rt {
namespace {

/// Rows of K per chunk: a panel's chunk is kKc x 16 floats = 16 KiB.
constexpr int64_t kKc = 256;
/// Most rows of C per task (a multiple of both kernels' MR). The rows are
/// split into ceil(M / 96) tasks of equal size rounded up to MR (M = 128:
/// 66 + 62 rows, not 96 + 32, whose short task left a thread idle).
constexpr int64_t kRowsPerTask = 96;

void freeFloats(float *p) { std::free(p); }
void keepFloats(float *) {}

// The row loops fully unrolled, so that the accumulators live in registers
// (GCC spills an array of vectors indexed in a loop it has not unrolled).
#if defined(__clang__)
#define LOOM_UNROLL _Pragma("clang loop unroll(full)")
#else
#define LOOM_UNROLL _Pragma("GCC unroll 16")
#endif

#ifdef LOOM_GEMM_X86
/// One MR x 16 tile: C[0..MR, 0..nc) (=|+=) A[0..MR, 0..kc) Bchunk.
template <int MR>
__attribute__((target("avx2,fma"))) void
tileAvx2(int64_t kc, const float *a, int64_t lda, const float *bp, float *c,
         int64_t ldc, int64_t nc, bool accumulate) {
  __m256 acc0[MR], acc1[MR];
  LOOM_UNROLL
  for (int r = 0; r < MR; ++r)
    acc0[r] = acc1[r] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m256 b0 = _mm256_load_ps(bp + 16 * p);
    __m256 b1 = _mm256_load_ps(bp + 16 * p + 8);
    LOOM_UNROLL
    for (int r = 0; r < MR; ++r) {
      __m256 av = _mm256_broadcast_ss(a + r * lda + p);
      acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
    }
  }
  LOOM_UNROLL
  for (int r = 0; r < MR; ++r) {
    float *cr = c + r * ldc;
    if (nc == 16) {
      if (accumulate) {
        acc0[r] = _mm256_add_ps(acc0[r], _mm256_loadu_ps(cr));
        acc1[r] = _mm256_add_ps(acc1[r], _mm256_loadu_ps(cr + 8));
      }
      _mm256_storeu_ps(cr, acc0[r]);
      _mm256_storeu_ps(cr + 8, acc1[r]);
    } else {
      alignas(32) float t[16];
      _mm256_store_ps(t, acc0[r]);
      _mm256_store_ps(t + 8, acc1[r]);
      for (int64_t j = 0; j < nc; ++j)
        cr[j] = accumulate ? cr[j] + t[j] : t[j];
    }
  }
}

template <int MR>
__attribute__((target("avx512f"))) void
tileAvx512(int64_t kc, const float *a, int64_t lda, const float *bp, float *c,
           int64_t ldc, int64_t nc, bool accumulate) {
  __m512 acc[MR];
  LOOM_UNROLL
  for (int r = 0; r < MR; ++r)
    acc[r] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m512 b0 = _mm512_load_ps(bp + 16 * p);
    LOOM_UNROLL
    for (int r = 0; r < MR; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + p]), b0, acc[r]);
  }
  __mmask16 mask = __mmask16((1u << nc) - 1u);
  LOOM_UNROLL
  for (int r = 0; r < MR; ++r) {
    float *cr = c + r * ldc;
    if (accumulate)
      acc[r] = _mm512_add_ps(acc[r], _mm512_maskz_loadu_ps(mask, cr));
    _mm512_mask_storeu_ps(cr, mask, acc[r]);
  }
}
#endif

using TileFn = void (*)(int64_t, const float *, int64_t, const float *, float *,
                        int64_t, int64_t, bool);

/// The tile functions of `k` for 1..MR rows (index rows - 1), and MR.
struct Tiles {
  int mr = 0;
  TileFn fn[12] = {};
};

template <template <int> class F, int... R>
constexpr Tiles makeTiles(std::integer_sequence<int, R...>) {
  Tiles t;
  t.mr = int(sizeof...(R));
  ((t.fn[R] = F<R + 1>::fn), ...);
  return t;
}

#ifdef LOOM_GEMM_X86
template <int MR> struct Avx2Tile {
  static constexpr TileFn fn = &tileAvx2<MR>;
};
template <int MR> struct Avx512Tile {
  static constexpr TileFn fn = &tileAvx512<MR>;
};
#endif

const Tiles &tilesFor(GemmKernel k) {
#ifdef LOOM_GEMM_X86
  static const Tiles avx2 =
      makeTiles<Avx2Tile>(std::make_integer_sequence<int, 6>());
  static const Tiles avx512 =
      makeTiles<Avx512Tile>(std::make_integer_sequence<int, 12>());
  if (k == GemmKernel::Avx512)
    return avx512;
  if (k == GemmKernel::Avx2Fma)
    return avx2;
#endif
  static const Tiles none;
  return none;
}

struct Job {
  const Tiles *tiles;
  int64_t m, k, n, lda, ldc, rowTasks, rowsPerTask, panels;
  const float *a;
  const float *b;
  float *c;
};

/// Rows of the next tile when `left` rows remain: MR, except that the
/// last MR + r rows with a short remainder r (r < 2 MR / 3) make two tiles
/// of about half each: a tile of few rows has too few independent
/// accumulators to hide the FMA latency (2 rows: 4 chains for 2 FMA units
/// of latency 4). Depends on the rows alone, never on the threads.
int64_t tileRows(int64_t left, int64_t mr) {
  int64_t rem = left % mr;
  if (left > mr && left < 2 * mr && rem > 0 && 3 * rem < 2 * mr)
    return (left + 1) / 2;
  return std::min(left, mr);
}

/// Runs tasks [begin, end): task t is rows [96 (t / panels), ...) x panel
/// t % panels, so a chunk of consecutive tasks shares its rows of A.
void runTasks(void *closure, int64_t begin, int64_t end) {
  const Job &j = *static_cast<const Job *>(closure);
  const int mr = j.tiles->mr;
  for (int64_t t0 = begin; t0 < end;) {
    int64_t rowTask = t0 / j.panels;
    int64_t p0 = t0 % j.panels;
    int64_t p1 = std::min(j.panels, p0 + (end - t0));
    int64_t r0 = rowTask * j.rowsPerTask;
    int64_t r1 = std::min(j.m, r0 + j.rowsPerTask);
    for (int64_t k0 = 0; k0 < j.k; k0 += kKc) {
      int64_t kc = std::min(kKc, j.k - k0);
      for (int64_t p = p0; p < p1; ++p) {
        const float *bp = j.b + p * j.k * kGemmPanel + k0 * kGemmPanel;
        int64_t nc = std::min(kGemmPanel, j.n - p * kGemmPanel);
        for (int64_t i = r0, rows; i < r1; i += rows) {
          rows = tileRows(r1 - i, mr);
          j.tiles->fn[rows - 1](kc, j.a + i * j.lda + k0, j.lda, bp,
                                j.c + i * j.ldc + p * kGemmPanel, j.ldc, nc,
                                k0 > 0);
        }
      }
    }
    t0 += p1 - p0;
  }
}

} // namespace

GemmKernel bestGemmKernel() {
  if (gemmKernelSupported(GemmKernel::Avx512))
    return GemmKernel::Avx512;
  if (gemmKernelSupported(GemmKernel::Avx2Fma))
    return GemmKernel::Avx2Fma;
  return GemmKernel::None;
}

bool gemmKernelSupported(GemmKernel k) {
#ifdef LOOM_GEMM_X86
  __builtin_cpu_init();
  switch (k) {
  case GemmKernel::None:
    return true;
  case GemmKernel::Avx2Fma:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case GemmKernel::Avx512:
    return __builtin_cpu_supports("avx512f");
  }
  return false;
#else
  return k == GemmKernel::None;
#endif
}

const char *gemmKernelName(GemmKernel k) {
  switch (k) {
  case GemmKernel::Avx2Fma:
    return "avx2+fma 6x16";
  case GemmKernel::Avx512:
    return "avx512f 12x16";
  case GemmKernel::None:
    break;
  }
  return "none";
}

int64_t packedGemmBFloats(int64_t k, int64_t n) {
  return (n + kGemmPanel - 1) / kGemmPanel * k * kGemmPanel;
}

PackedB packGemmBInto(bool transB, int64_t k, int64_t n, const float *b,
                      float *dst) {
  PackedB out;
  out.k = k;
  out.n = n;
  out.data = {dst, &keepFloats};
  for (int64_t p = 0, panels = out.panels(); p < panels; ++p) {
    float *dp = dst + p * k * kGemmPanel;
    int64_t j0 = p * kGemmPanel;
    int64_t nc = std::min(kGemmPanel, n - j0);
    for (int64_t q = 0; q < k; ++q) {
      float *row = dp + q * kGemmPanel;
      for (int64_t j = 0; j < nc; ++j)
        row[j] = transB ? b[(j0 + j) * k + q] : b[q * n + j0 + j];
      for (int64_t j = nc; j < kGemmPanel; ++j)
        row[j] = 0.0f;
    }
  }
  return out;
}

PackedB packGemmB(bool transB, int64_t k, int64_t n, const float *b) {
  size_t bytes = size_t(packedGemmBFloats(k, n)) * sizeof(float);
  // 64-byte aligned: the kernels load whole panel rows aligned.
  auto *d = static_cast<float *>(
      std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64)));
  if (!d) {
    PackedB none;
    none.k = k;
    none.n = n;
    return none;
  }
  PackedB out = packGemmBInto(transB, k, n, b, d);
  out.data = {out.data.release(), &freeFloats};
  return out;
}

void gemmPacked(loom_rt_ctx *ctx, GemmKernel kernel, int64_t m, const float *a,
                int64_t lda, const PackedB &b, float *c, int64_t ldc) {
  if (m <= 0 || b.n <= 0)
    return;
  if (b.k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      std::memset(c + i * ldc, 0, size_t(b.n) * sizeof(float));
    return;
  }
  const Tiles &tiles = tilesFor(kernel);
  if (!tiles.mr)
    loom_rt_abort(ctx, "gemmPacked: no packed GEMM kernel for this CPU");
  int64_t rowTasks = (m + kRowsPerTask - 1) / kRowsPerTask;
  int64_t rows = (m + rowTasks - 1) / rowTasks;
  rows = std::min(kRowsPerTask, (rows + tiles.mr - 1) / tiles.mr * tiles.mr);
  Job j{&tiles, m,          b.k, b.n,          lda, ldc, (m + rows - 1) / rows,
        rows,   b.panels(), a,   b.data.get(), c};
  // Tasks of at least ~64 K multiply-adds each, so that tiny products stay
  // on the calling thread.
  int64_t perTask = std::min(m, rows) * kGemmPanel * b.k;
  int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / perTask);
  loom_rt_parallel_for(ctx, j.rowTasks * j.panels, grain, &runTasks, &j);
}

} // namespace loom::rt
