//===- bench/allreduce/BenchThreads.cpp - threads all-reduce bench -*- C++
//-*-===//
//
// loom-bench-allreduce-threads <nranks> [min_bytes] [max_bytes]
// f32 sum all-reduce (out of place) on nranks in-process ranks over the
// Loom `threads` communicator. Prints one line per size:
//   <bytes> <latency_us> <algbw_GBps> <busbw_GBps>
// busbw = algbw * 2(n-1)/n (the nccl-tests convention).
//
// loom-bench-allreduce-threads <nranks> --decode
// The latency of the collectives one decode step of a tensor-parallel
// SmolLM2 makes (hidden 576, kv 192; bench/allreduce/Decode.h), one line
// each: <name> <latency_us>.
//
//===----------------------------------------------------------------------===//

#include "Decode.h"

#include "loom/runtime/Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

/// Mean seconds per call of `call` (best of 5 trials of ~0.05 s), the same
/// on every rank (rank 0's figure is reported).
template <typename F> double timeCalls(loom_rt_ctx *ctx, F call) {
  for (int i = 0; i < 20; ++i)
    call();
  loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
  int64_t t0 = loom_rt_now_ns();
  for (int i = 0; i < 20; ++i)
    call();
  double one = double(loom_rt_now_ns() - t0) * 1e-9 / 20, mx = one;
  loom_rt_all_reduce(ctx, LOOM_RT_F64, LOOM_RT_MAX, &one, &mx, 1,
                     LOOM_RT_ALL_AXES);
  int iters = int(std::clamp(0.05 / std::max(mx, 1e-7), 10.0, 50000.0));
  double t = 1e30;
  for (int trial = 0; trial < 5; ++trial) {
    loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    t0 = loom_rt_now_ns();
    for (int i = 0; i < iters; ++i)
      call();
    loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    t = std::min(t, double(loom_rt_now_ns() - t0) * 1e-9 / iters);
  }
  return t;
}

int decodeLatencies(int n) {
  std::vector<double> us(std::size(loom::bench::kDecodeCalls));
  int rc = loom::rt::runThreads(n, {}, [&](loom_rt_ctx *ctx) {
    std::vector<char> in(1 << 16, 1), out(1 << 16);
    for (size_t k = 0; k < us.size(); ++k) {
      const loom::bench::DecodeCall &c = loom::bench::kDecodeCalls[k];
      int32_t dt = c.i64 ? LOOM_RT_I64 : LOOM_RT_F32;
      int64_t elems = loom::bench::elemsPerRank(c, n);
      double t = timeCalls(ctx, [&] {
        switch (c.kind) {
        case loom::bench::DecodeCall::AllReduce:
          loom_rt_all_reduce(ctx, dt, LOOM_RT_SUM, in.data(), out.data(), elems,
                             LOOM_RT_ALL_AXES);
          break;
        case loom::bench::DecodeCall::AllGather:
          loom_rt_all_gather(ctx, dt, in.data(), out.data(), 1, elems,
                             LOOM_RT_ALL_AXES);
          break;
        case loom::bench::DecodeCall::ReduceScatter:
          loom_rt_reduce_scatter(ctx, dt, LOOM_RT_SUM, in.data(), out.data(), 1,
                                 elems / n, LOOM_RT_ALL_AXES);
          break;
        case loom::bench::DecodeCall::Barrier:
          loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
          break;
        }
      });
      if (loom_rt_rank(ctx) == 0)
        us[k] = t * 1e6;
    }
    return 0;
  });
  if (rc)
    return rc;
  for (size_t k = 0; k < us.size(); ++k)
    std::printf("%s %.2f\n", loom::bench::kDecodeCalls[k].name, us[k]);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 2;
  if (argc > 2 && std::strcmp(argv[2], "--decode") == 0)
    return decodeLatencies(n);
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
