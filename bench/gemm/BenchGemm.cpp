//===- bench/gemm/BenchGemm.cpp - packed f32 GEMM against OpenBLAS --------===//
//
// C = A B on one thread, the runtime's packed kernel (loom/runtime/Gemm.h)
// against OpenBLAS's cblas_sgemm (its core named by OPENBLAS_CORETYPE or
// its own choice; run with OPENBLAS_NUM_THREADS=1), alternating call by
// call; best of N. "weight": B packed once before timing; "per call": B
// packed inside the timed call (attention's products). With --threads T
// (T > 1), the weight products also run on a rank of T threads (best and
// median of the calls, and the speedup of the best over one thread).
//
//   loom-bench-gemm [--threads T] [M N K TB]...
//                   (default: bench/forward's shapes)
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Gemm.h"
#include "loom/runtime/Runtime.h"
#include "loom/runtime/abi.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace loom::rt;

namespace {

struct Shape {
  int64_t m, n, k;
  bool tb;
};

double seconds(std::chrono::steady_clock::time_point a,
               std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Best and median seconds of `iters` weight products on a rank of
/// `threads` threads.
std::pair<double, double> onThreads(int threads, int iters, const Shape &s,
                                    GemmKernel kernel, const float *a,
                                    const PackedB &b, float *c) {
  std::vector<double> times;
  LaunchOptions o;
  o.threadsPerRank = threads;
  o.quiet = true;
  runThreads(
      1, {},
      [&](loom_rt_ctx *ctx) {
        for (int it = 0; it < iters + 3; ++it) {
          auto t0 = std::chrono::steady_clock::now();
          gemmPacked(ctx, kernel, s.m, a, s.k, b, c, s.n);
          if (it >= 3) // the first calls wake the workers
            times.push_back(seconds(t0, std::chrono::steady_clock::now()));
        }
        return 0;
      },
      o);
  std::sort(times.begin(), times.end());
  return {times.front(), times[times.size() / 2]};
}

} // namespace

int main(int argc, char **argv) {
  std::vector<Shape> shapes;
  int threads = 1;
  if (argc > 2 && std::string(argv[1]) == "--threads") {
    threads = std::max(1, std::atoi(argv[2]));
    argv += 2;
    argc -= 2;
  }
  for (int i = 1; i + 3 < argc; i += 4)
    shapes.push_back({std::atol(argv[i]), std::atol(argv[i + 1]),
                      std::atol(argv[i + 2]), std::atoi(argv[i + 3]) != 0});
  if (shapes.empty())
    // bench/forward (d = 256, seq 128): qkv, out, fc1, fc2; attention.
    shapes = {{128, 768, 256, false},  {128, 256, 256, false},
              {128, 1024, 256, false}, {128, 256, 1024, false},
              {128, 128, 32, true},    {128, 32, 128, false}};
  GemmKernel kernel = bestGemmKernel();
  if (kernel == GemmKernel::None) {
    std::fprintf(stderr, "loom-bench-gemm: no packed kernel for this CPU\n");
    return 1;
  }
  std::printf("kernel %s; columns GFLOP/s, best of the iterations (T threads: "
              "best and median)\n",
              gemmKernelName(kernel));
  std::printf("%6s %6s %6s %3s %10s %10s %10s", "M", "N", "K", "tB", "weight",
              "per call", "OpenBLAS");
  if (threads > 1)
    std::printf(" %7s %7s %7s %7s", "1 thr", "best", "median", "speedup");
  std::printf("\n");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Shape &s : shapes) {
    std::vector<float> a(size_t(s.m * s.k)), b(size_t(s.k * s.n)),
        c(size_t(s.m * s.n));
    for (float &x : a)
      x = u(rng);
    for (float &x : b)
      x = u(rng);
    PackedB once = packGemmB(s.tb, s.k, s.n, b.data());
    std::vector<float> scratch(size_t(packedGemmBFloats(s.k, s.n)) + 16);
    float *aligned = reinterpret_cast<float *>(
        (reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
    double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    int iters = int(std::clamp(2e9 / flops, 5.0, 500.0));
    double best[3] = {1e9, 1e9, 1e9};
    for (int it = 0; it < iters; ++it) {
      auto t0 = std::chrono::steady_clock::now();
      gemmPacked(nullptr, kernel, s.m, a.data(), s.k, once, c.data(), s.n);
      auto t1 = std::chrono::steady_clock::now();
      PackedB call = packGemmBInto(s.tb, s.k, s.n, b.data(), aligned);
      gemmPacked(nullptr, kernel, s.m, a.data(), s.k, call, c.data(), s.n);
      auto t2 = std::chrono::steady_clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
                  int(s.m), int(s.n), int(s.k), 1.0f, a.data(), int(s.k),
                  b.data(), int(s.tb ? s.k : s.n), 0.0f, c.data(), int(s.n));
      auto t3 = std::chrono::steady_clock::now();
      best[0] = std::min(best[0], seconds(t0, t1));
      best[1] = std::min(best[1], seconds(t1, t2));
      best[2] = std::min(best[2], seconds(t2, t3));
    }
    std::printf("%6ld %6ld %6ld %3d %10.1f %10.1f %10.1f", long(s.m), long(s.n),
                long(s.k), int(s.tb), flops / best[0] / 1e9,
                flops / best[1] / 1e9, flops / best[2] / 1e9);
    if (threads > 1) {
      // One thread and T threads, both on a rank (the same call path).
      auto one = onThreads(1, iters, s, kernel, a.data(), once, c.data());
      auto many =
          onThreads(threads, iters, s, kernel, a.data(), once, c.data());
      std::printf(" %7.1f %7.1f %7.1f %6.2fx", flops / one.first / 1e9,
                  flops / many.first / 1e9, flops / many.second / 1e9,
                  one.first / many.first);
    }
    std::printf("\n");
  }
  return 0;
}
