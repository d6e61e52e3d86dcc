//===- test/runtime/FailureTest.cpp - abort, timeout, bad args --*- C++ -*-===//
//
// The failure model of the threads communicator: one failing rank makes
// every other rank stop within bounded time (no hang), and runThreads()
// returns non-zero with every rank's message.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
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

} // namespace

// Rank 2 aborts while the others wait in a collective (timeout 60 s): they
// must return promptly with "stopped because another rank failed".
TEST(Failure, AbortPropagatesToRanksInCollectives) {
  LaunchResult res;
  auto t0 = std::chrono::steady_clock::now();
  int rc = runThreads(
      4, {2, 2},
      [](loom_rt_ctx *ctx) {
        float x = 1;
        loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, &x, &x, 1,
                           LOOM_RT_ALL_AXES);
        if (loom_rt_rank(ctx) == 2) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          loom_rt_abort(ctx, "bad things happened");
        }
        std::vector<float> big(100000, 1.0f);
        loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, big.data(),
                           big.data(), 100000, LOOM_RT_ALL_AXES);
        ADD_FAILURE() << "all_reduce returned after an abort";
        return 0;
      },
      opts(60), &res);
  EXPECT_NE(rc, 0);
  EXPECT_LT(secondsSince(t0), 5.0);
  ASSERT_EQ(res.messages.size(), 4u) << joined(res);
  EXPECT_NE(res.messages[0].find("rank 2"), std::string::npos) << joined(res);
  EXPECT_NE(res.messages[0].find("bad things happened"), std::string::npos);
  EXPECT_TRUE(anyContains(res, "all_reduce(dtype=f32, op=sum, count=100000"))
      << joined(res);
  EXPECT_TRUE(anyContains(res, "stopped because another rank failed"));
}

// Ranks waiting in recv or in a sub-group barrier also stop.
TEST(Failure, AbortStopsRecvAndBarrier) {
  LaunchResult res;
  auto t0 = std::chrono::steady_clock::now();
  int rc = runThreads(
      4, {},
      [](loom_rt_ctx *ctx) {
        int64_t r = loom_rt_rank(ctx);
        if (r == 0)
          throw std::runtime_error("exception in rank 0");
        if (r == 1) {
          float x;
          loom_rt_recv(ctx, LOOM_RT_F32, &x, 1, 0, 3);
        }
        loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
        return 0;
      },
      opts(60), &res);
  EXPECT_NE(rc, 0);
  EXPECT_LT(secondsSince(t0), 5.0);
  EXPECT_TRUE(anyContains(res, "uncaught exception: exception in rank 0"))
      << joined(res);
  EXPECT_TRUE(anyContains(res, "rank 1: recv(dtype=f32, count=1, peer=0"))
      << joined(res);
  EXPECT_TRUE(anyContains(res, "barrier(axes_mask=0x1) failed")) << joined(res);
}

TEST(Failure, NonZeroReturnFailsTheJob) {
  LaunchResult res;
  int rc = runThreads(
      3, {},
      [](loom_rt_ctx *ctx) {
        if (loom_rt_rank(ctx) == 1)
          return 7;
        loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
        return 0;
      },
      opts(60), &res);
  EXPECT_NE(rc, 0);
  EXPECT_TRUE(anyContains(res, "rank 1: rank body returned status 7"))
      << joined(res);
  EXPECT_EQ(res.rankStatus[1], 7);
}

// A rank that never calls the collective: the others time out with a
// message naming the missing rank.
TEST(Failure, CollectiveTimeoutNamesMissingRank) {
  LaunchResult res;
  auto t0 = std::chrono::steady_clock::now();
  int rc = runThreads(
      3, {},
      [](loom_rt_ctx *ctx) {
        if (loom_rt_rank(ctx) == 1)
          return 0; // "forgets" the all_gather
        int64_t in = 1, out[3];
        loom_rt_all_gather(ctx, LOOM_RT_I64, &in, out, 1, 1, LOOM_RT_ALL_AXES);
        return 0;
      },
      opts(0.3), &res);
  double dt = secondsSince(t0);
  EXPECT_NE(rc, 0);
  EXPECT_GE(dt, 0.25);
  EXPECT_LT(dt, 5.0);
  EXPECT_TRUE(anyContains(res, "all_gather(dtype=i64, count=1, inner=1, "
                               "axes_mask=0x1) failed: timed out after 0.3 s "
                               "waiting for group member rank(s) 1"))
      << joined(res);
}

TEST(Failure, RecvTimeoutAndApiTimeout) {
  LaunchResult res;
  int rc = runThreads(
      2, {},
      [](loom_rt_ctx *ctx) {
        loom_rt_set_timeout(ctx, 0.2);
        EXPECT_DOUBLE_EQ(loom_rt_get_timeout(ctx), 0.2);
        if (loom_rt_rank(ctx) == 0) {
          int x;
          loom_rt_recv(ctx, LOOM_RT_I32, &x, 1, 1, 5);
        }
        return 0;
      },
      opts(60), &res);
  EXPECT_NE(rc, 0);
  EXPECT_TRUE(anyContains(res, "timed out after 0.2 s waiting for a message "
                               "from rank 1"))
      << joined(res);
}

TEST(Failure, EnvTimeout) {
  setenv("LOOM_COLLECTIVE_TIMEOUT_S", "2.5", 1);
  EXPECT_DOUBLE_EQ(defaultTimeoutSeconds(), 2.5);
  unsetenv("LOOM_COLLECTIVE_TIMEOUT_S");
  EXPECT_DOUBLE_EQ(defaultTimeoutSeconds(), 60.0);
}

TEST(Failure, InvalidArguments) {
  LaunchResult res;
  int rc = runThreads(
      1, {},
      [](loom_rt_ctx *ctx) {
        float x = 0;
        loom_rt_all_reduce(ctx, 42, LOOM_RT_SUM, &x, &x, 1, 1);
        return 0;
      },
      opts(60), &res);
  EXPECT_NE(rc, 0);
  EXPECT_TRUE(anyContains(res, "invalid dtype 42")) << joined(res);
  rc = runThreads(
      2, {},
      [](loom_rt_ctx *ctx) {
        float x = 0;
        loom_rt_send(ctx, LOOM_RT_F32, &x, 1, 5, 0);
        return 0;
      },
      opts(60), &res);
  EXPECT_NE(rc, 0);
  EXPECT_TRUE(anyContains(res, "peer rank 5 outside the world of 2 ranks"))
      << joined(res);
}

TEST(Failure, BadMeshShape) {
  LaunchResult res;
  int rc = runThreads(
      4, {3, 2}, [](loom_rt_ctx *) { return 0; }, opts(60), &res);
  EXPECT_NE(rc, 0);
  EXPECT_TRUE(anyContains(res, "mesh shape has 6 ranks, but 4"));
}

TEST(Failure, UnregisteredWeight) {
  LaunchResult res;
  int rc = runThreads(
      1, {},
      [](loom_rt_ctx *ctx) {
        (void)loom_rt_weight(ctx, 3);
        return 0;
      },
      opts(60), &res);
  EXPECT_NE(rc, 0);
  EXPECT_TRUE(anyContains(res, "weight 3 is not registered")) << joined(res);
}

// OnFailure::Exit: the process exits non-zero with the message.
TEST(FailureDeathTest, ExitModeExitsProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        LaunchOptions o;
        o.onFailure = OnFailure::Exit;
        runThreads(
            2, {},
            [](loom_rt_ctx *ctx) {
              if (loom_rt_rank(ctx) == 1)
                loom_rt_abort(ctx, "exit mode");
              loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
              return 0;
            },
            o);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(1),
      "rank 1: aborted by loom_rt_abort: exit mode");
}

TEST(Trace, WritesChromeTrace) {
  std::string path = ::testing::TempDir() + "/loom_rt_trace.json";
  LaunchOptions o = opts(60);
  o.tracePath = path;
  int rc = runThreads(
      2, {},
      [](loom_rt_ctx *ctx) {
        loom_rt_trace_begin(ctx, "layer0");
        float x = 1;
        loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, &x, &x, 1,
                           LOOM_RT_ALL_AXES);
        loom_rt_trace_end(ctx, "layer0");
        return 0;
      },
      o);
  ASSERT_EQ(rc, 0);
  std::ifstream is(path);
  std::string text((std::istreambuf_iterator<char>(is)),
                   std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"name\":\"layer0\",\"ph\":\"B\""), std::string::npos);
  EXPECT_NE(
      text.find("\"name\":\"all_reduce\",\"ph\":\"E\",\"pid\":0,\"tid\":1"),
      std::string::npos)
      << text;
}

// An abort in one row of a 2x2 mesh while the other row is in the middle of
// large all-reduces on freshly allocated (mmap'd) buffers: the failing ranks
// must not free buffers a peer is still reading (no crash, clean failure).
TEST(Failure, AbortWhilePeersReadLargeBuffers) {
  for (int rep = 0; rep < 10; ++rep) {
    LaunchResult res;
    int rc = runThreads(
        4, {2, 2},
        [rep](loom_rt_ctx *ctx) {
          int64_t r = loom_rt_rank(ctx);
          for (int it = 0;; ++it) {
            std::vector<float> v(300000, 1.0f); // > mmap threshold
            loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, v.data(),
                               v.data(), int64_t(v.size()), 2);
            if (r == 0 && it == 3 + rep)
              loom_rt_abort(ctx, "stop");
            if (v[12345] != 2.0f)
              return 1;
          }
          return 0;
        },
        opts(60), &res);
    EXPECT_NE(rc, 0);
    EXPECT_NE(res.messages[0].find(
                  "rank 0 (coords [0,0]): aborted by loom_rt_abort: stop"),
              std::string::npos)
        << joined(res);
    EXPECT_EQ(res.messages.size(), 4u) << joined(res);
  }
}
