//===- test/runtime/LatencyTest.cpp - small-collective paths ----*- C++ -*-===//
//
// The latency paths of the threads communicator (runtime/ThreadsComm.h):
// thousands of back-to-back small collectives of every kind and mixed sizes
// (the double-buffered staging of one-barrier collectives must never hand
// out a stale or overwritten slot), sums in member order on both paths, the
// spin and its fallbacks (forced long spins, more ranks than cores), and
// ranks that die or vanish in the middle of a stream of small collectives:
// every other rank stops with a clear message, never hangs.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "ThreadsComm.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

using namespace loom::rt;
using loom::rt::test::anyContains;
using loom::rt::test::joined;

namespace {

LaunchOptions opts(double timeout) { return test::quietLaunch(timeout); }

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

/// Sets an environment variable for the scope of a test (ThreadWorld reads
/// LOOM_RT_* when a job starts).
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char *n, const char *v) : name(n) {
    if (const char *o = std::getenv(n))
      old = o;
    setenv(n, v, 1);
  }
  ~ScopedEnv() {
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

/// A value that depends on the iteration, the member and the index, exact
/// in f32 (and its sums over <= 8 members): a stale slot shows.
float val(int iter, int64_t member, int64_t i) {
  return float((iter % 1000) * 16 + member * 3 + i % 7);
}

/// One iteration of a mixed stream: the collective and its size depend on
/// `iter`; every 53rd call is just over the staging size (the direct
/// path) so that both paths interleave. Returns the wrong elements.
int64_t mixedCall(loom_rt_ctx *ctx, int iter, std::vector<float> &in,
                  std::vector<float> &out) {
  int64_t n = loom_rt_world_size(ctx), r = loom_rt_rank(ctx);
  int64_t smallElems = ThreadsComm::kSmallBytes / 4;
  bool large = iter % 53 == 52;
  int64_t bad = 0;
  switch (iter % 5) {
  case 0: { // all_reduce, in place on odd iterations
    int64_t count = large ? smallElems + 1 : 1 + (iter * 37) % 700;
    for (int64_t i = 0; i < count; ++i)
      in[i] = val(iter, r, i);
    float *dst = iter % 2 ? in.data() : out.data();
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, in.data(), dst, count,
                       LOOM_RT_ALL_AXES);
    for (int64_t i = 0; i < count; ++i) {
      float e = 0;
      for (int64_t m = 0; m < n; ++m)
        e += val(iter, m, i);
      bad += dst[i] != e;
    }
    break;
  }
  case 1: { // all_gather, 1 or 2 rows
    int64_t outer = 1 + iter % 2;
    int64_t inner = large ? smallElems / outer + 1 : 1 + (iter * 11) % 300;
    for (int64_t i = 0; i < outer * inner; ++i)
      in[i] = val(iter, r, i);
    loom_rt_all_gather(ctx, LOOM_RT_F32, in.data(), out.data(), outer, inner,
                       LOOM_RT_ALL_AXES);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t m = 0; m < n; ++m)
        for (int64_t i = 0; i < inner; ++i)
          bad += out[(o * n + m) * inner + i] != val(iter, m, o * inner + i);
    break;
  }
  case 2: { // reduce_scatter, 1 or 2 rows
    int64_t outer = 1 + iter % 2;
    int64_t inner = large ? smallElems / (outer * n) + 1 : 1 + (iter * 7) % 200;
    for (int64_t i = 0; i < outer * n * inner; ++i)
      in[i] = val(iter, r, i);
    loom_rt_reduce_scatter(ctx, LOOM_RT_F32, LOOM_RT_SUM, in.data(), out.data(),
                           outer, inner, LOOM_RT_ALL_AXES);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t src = (o * n + r) * inner + i;
        float e = 0;
        for (int64_t m = 0; m < n; ++m)
          e += val(iter, m, src);
        bad += out[o * inner + i] != e;
      }
    break;
  }
  case 3: { // all_to_all
    int64_t block = large ? smallElems / n + 1 : 1 + (iter * 13) % 150;
    for (int64_t i = 0; i < n * block; ++i)
      in[i] = val(iter, r, i);
    loom_rt_all_to_all(ctx, LOOM_RT_F32, in.data(), out.data(), block,
                       LOOM_RT_ALL_AXES);
    for (int64_t m = 0; m < n; ++m)
      for (int64_t i = 0; i < block; ++i)
        bad += out[m * block + i] != val(iter, m, r * block + i);
    break;
  }
  default:
    loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
  }
  return bad;
}

void runMixed(int n, int iters, const char *what) {
  std::atomic<int64_t> bad{0};
  LaunchResult res;
  int rc = runThreads(
      n, {},
      [&](loom_rt_ctx *ctx) {
        std::vector<float> in(ThreadsComm::kSmallBytes / 4 * 2 + 64),
            out(in.size() * 2);
        int64_t local = 0;
        for (int iter = 0; iter < iters; ++iter)
          local += mixedCall(ctx, iter, in, out);
        bad += local;
        return 0;
      },
      opts(60), &res);
  EXPECT_EQ(rc, 0) << what << ": " << joined(res);
  EXPECT_EQ(bad.load(), 0) << what << " n=" << n;
}

} // namespace

// Thousands of small collectives of every kind back to back, sizes changing
// every call, the direct path interleaved.
TEST(Latency, ManySmallMixedCollectives) {
  for (int n : {2, 3, 4})
    runMixed(n, 2000, "default waits");
}

// The same stream with a forced long spin (it must not starve a peer that
// shares this CPU: the spin gives way when the peer last ran here, and the
// adaptive budget shrinks) and with no spin and no yield phase (straight to
// the futex: every wake-up must be seen).
TEST(Latency, ForcedSpinAndForcedSleep) {
  {
    ScopedEnv spin("LOOM_RT_SPIN_US", "20000");
    auto t0 = std::chrono::steady_clock::now();
    runMixed(4, 500, "spin 20 ms");
    // 500 calls x 20 ms = 10 s if every spin ran out; a generous bound
    // keeps the test meaningful on a loaded host.
    EXPECT_LT(secondsSince(t0), 60.0);
  }
  {
    ScopedEnv spin("LOOM_RT_SPIN_US", "0");
    ScopedEnv yield("LOOM_RT_YIELD_US", "0");
    runMixed(3, 1000, "futex only");
  }
}

// More ranks than cores (the default: no spin) still makes progress.
TEST(Latency, OversubscribedSmallAllReduces) {
  int n = std::max(4u, 2 * std::thread::hardware_concurrency());
  n = std::min(n, 16);
  std::atomic<int64_t> bad{0};
  LaunchResult res;
  int rc = runThreads(
      n, {},
      [&](loom_rt_ctx *ctx) {
        int64_t r = loom_rt_rank(ctx);
        for (int iter = 0; iter < 300; ++iter) {
          float x = float(r + iter), sum = 0;
          loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, &x, &sum, 1,
                             LOOM_RT_ALL_AXES);
          bad += sum != float(n * (n - 1) / 2 + n * iter);
        }
        return 0;
      },
      opts(60), &res);
  EXPECT_EQ(rc, 0) << joined(res);
  EXPECT_EQ(bad.load(), 0);
}

// Sums are taken in member order 0..p-1 on both paths and both collectives,
// so every rank gets the same bits (and the bits of a sequential sum).
TEST(Latency, SumsInMemberOrderOnBothPaths) {
  const int n = 4;
  // Values whose float sum depends on the order.
  auto x = [](int64_t m, int64_t i) {
    static const float v[4] = {1e8f, 3.0f, -1e8f, 0.5f};
    return v[(m + i) % 4] * (1.0f + float(i % 3) / 8);
  };
  auto expected = [&](int64_t i) {
    float e = x(0, i);
    for (int64_t m = 1; m < n; ++m)
      e += x(m, i);
    return e;
  };
  std::atomic<int64_t> bad{0};
  LaunchResult res;
  int rc = runThreads(
      n, {},
      [&](loom_rt_ctx *ctx) {
        int64_t r = loom_rt_rank(ctx);
        int64_t local = 0;
        for (int64_t count : {int64_t(64), ThreadsComm::kSmallBytes / 4 * 3}) {
          std::vector<float> in(count), out(count);
          for (int64_t i = 0; i < count; ++i)
            in[i] = x(r, i);
          loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, in.data(),
                             out.data(), count, LOOM_RT_ALL_AXES);
          for (int64_t i = 0; i < count; ++i) {
            float e = expected(i);
            local += std::memcmp(&out[i], &e, 4) != 0;
          }
          int64_t inner = count / n;
          loom_rt_reduce_scatter(ctx, LOOM_RT_F32, LOOM_RT_SUM, in.data(),
                                 out.data(), 1, inner, LOOM_RT_ALL_AXES);
          for (int64_t i = 0; i < inner; ++i) {
            float e = expected(r * inner + i);
            local += std::memcmp(&out[i], &e, 4) != 0;
          }
        }
        bad += local;
        return 0;
      },
      opts(60), &res);
  EXPECT_EQ(rc, 0) << joined(res);
  EXPECT_EQ(bad.load(), 0);
}

// A rank that throws in the middle of a stream of small collectives: the
// others stop promptly (they may be spinning, yielding or asleep) with the
// call they were in, and the job names the first failure.
TEST(Latency, RankDiesMidStream) {
  for (const char *spinUs : {"0", "200", "100000"}) {
    ScopedEnv spin("LOOM_RT_SPIN_US", spinUs);
    LaunchResult res;
    auto t0 = std::chrono::steady_clock::now();
    int rc = runThreads(
        3, {},
        [&](loom_rt_ctx *ctx) {
          std::vector<float> in(20000), out(40000);
          for (int iter = 0;; ++iter) {
            if (loom_rt_rank(ctx) == 2 && iter == 777)
              throw std::runtime_error("rank 2 died");
            mixedCall(ctx, iter, in, out);
          }
          return 0;
        },
        opts(60), &res);
    EXPECT_NE(rc, 0);
    EXPECT_LT(secondsSince(t0), 10.0) << "spin " << spinUs;
    ASSERT_EQ(res.messages.size(), 3u) << joined(res);
    EXPECT_NE(res.messages[0].find("uncaught exception: rank 2 died"),
              std::string::npos)
        << joined(res);
    EXPECT_TRUE(anyContains(res, "stopped because another rank failed"))
        << joined(res);
  }
}

// A rank that leaves (returns) in the middle of the stream: the others
// time out naming it instead of hanging.
TEST(Latency, RankVanishesMidStream) {
  LaunchResult res;
  auto t0 = std::chrono::steady_clock::now();
  int rc = runThreads(
      3, {},
      [&](loom_rt_ctx *ctx) {
        std::vector<float> in(20000), out(40000);
        for (int iter = 0; iter < 1000; ++iter) {
          if (loom_rt_rank(ctx) == 1 && iter == 500)
            return 0;
          mixedCall(ctx, iter, in, out);
        }
        return 0;
      },
      opts(0.5), &res);
  double dt = secondsSince(t0);
  EXPECT_NE(rc, 0);
  EXPECT_LT(dt, 10.0);
  EXPECT_TRUE(anyContains(res, "timed out after 0.5 s waiting for group "
                               "member rank(s) 1"))
      << joined(res);
  EXPECT_TRUE(anyContains(res, "all_reduce(dtype=f32, op=sum, count="))
      << joined(res);
}
