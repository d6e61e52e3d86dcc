//===- bench/allreduce/BenchThreads.cpp - threads all-reduce bench -*- C++
//-*-===//
//
// loom-bench-allreduce-threads <nranks> [min_bytes] [max_bytes]
// f32 sum all-reduce (out of place) on nranks in-process ranks over the
// Loom `threads` communicator. Prints one line per size:
//   <bytes> <latency_us> <algbw_GBps> <busbw_GBps>
// busbw = algbw * 2(n-1)/n (the nccl-tests convention).
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 2;
  int64_t minBytes = argc > 2 ? std::atoll(argv[2]) : 4096;
  int64_t maxBytes = argc > 3 ? std::atoll(argv[3]) : 64 << 20;
  std::vector<int64_t> sizes;
  for (int64_t b = minBytes; b <= maxBytes; b *= 4)
    sizes.push_back(b);
  std::vector<double> seconds(sizes.size());

  int rc = loom::rt::runThreads(n, {}, [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    int64_t maxCount = maxBytes / 4;
    std::vector<float> in(maxCount, 1.0f + float(r)), out(maxCount);
    for (size_t s = 0; s < sizes.size(); ++s) {
      int64_t count = sizes[s] / 4;
      // 3 warm-ups, then one timed call to size the trials.
      for (int i = 0; i < 3; ++i)
        loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, in.data(), out.data(),
                           count, LOOM_RT_ALL_AXES);
      loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
      int64_t t0 = loom_rt_now_ns();
      loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, in.data(), out.data(),
                         count, LOOM_RT_ALL_AXES);
      double one = double(loom_rt_now_ns() - t0) * 1e-9;
      double mx = one;
      loom_rt_all_reduce(ctx, LOOM_RT_F64, LOOM_RT_MAX, &one, &mx, 1,
                         LOOM_RT_ALL_AXES);
      int iters = int(std::clamp(0.1 / std::max(mx, 1e-7), 3.0, 20000.0));
      // Best of 3 trials of ~0.1 s (the machine may be shared).
      double t = 1e30;
      for (int trial = 0; trial < 3; ++trial) {
        loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
        t0 = loom_rt_now_ns();
        for (int i = 0; i < iters; ++i)
          loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, in.data(),
                             out.data(), count, LOOM_RT_ALL_AXES);
        loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
        t = std::min(t, double(loom_rt_now_ns() - t0) * 1e-9 / iters);
      }
      if (out[count - 1] != float(n * (n + 1) / 2)) {
        std::fprintf(stderr, "wrong result\n");
        return 1;
      }
      if (r == 0)
        seconds[s] = t;
    }
    return 0;
  });
  if (rc)
    return rc;
  for (size_t s = 0; s < sizes.size(); ++s) {
    double alg = double(sizes[s]) / seconds[s] / 1e9;
    std::printf("%lld %.2f %.3f %.3f\n", (long long)sizes[s], seconds[s] * 1e6,
                alg, alg * 2.0 * (n - 1) / n);
  }
  return 0;
}
