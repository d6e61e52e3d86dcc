//===- test/runtime/MismatchTest.cpp - ranks that disagree ------*- C++ -*-===//
//
// Ranks that make different collective calls at the same meeting point
// (issue 13): the threads backend compares (op, reduction, dtype, counts)
// at the first barrier of every collective and fails every rank with a
// message naming both sides, instead of reading past a peer's buffer
// (garbage or SIGSEGV) or returning disagreeing results with exit 0.
// Also: timeouts too large for int64 nanoseconds, and thread creation
// failure.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace loom::rt;
using loom::rt::test::joined;

namespace {

LaunchOptions quiet() {
  LaunchOptions o;
  o.timeoutSeconds = 30;
  o.quiet = true;
  return o;
}

/// Runs `body` on 2 ranks and expects every rank to fail with a collective
/// mismatch naming `mine0` (rank 0's call) and `mine1` (rank 1's call).
void expectMismatch(const RankBody &body, const std::string &call0,
                    const std::string &call1) {
  LaunchResult res;
  int rc = runThreads(2, {2}, body, quiet(), &res);
  EXPECT_NE(rc, 0);
  ASSERT_EQ(res.messages.size(), 2u) << joined(res);
  std::string all = joined(res);
  EXPECT_NE(all.find("rank 0"), std::string::npos) << all;
  EXPECT_NE(all.find("collective mismatch in the group of ranks {0,1}: "
                     "this rank called " +
                     call0 + " but rank 1 called " + call1),
            std::string::npos)
      << all;
  EXPECT_NE(
      all.find("this rank called " + call1 + " but rank 0 called " + call0),
      std::string::npos)
      << all;
}

} // namespace

// Different counts: small (staging path) and large (direct reads, which
// read past the shorter peer's buffer before).
TEST(Mismatch, ThreadsAllReduceCounts) {
  for (int64_t base : {int64_t(4), int64_t(1) << 16}) {
    expectMismatch(
        [base](loom_rt_ctx *ctx) {
          int64_t n = base + loom_rt_rank(ctx);
          std::vector<float> x(size_t(n), 1.0f);
          loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, x.data(), x.data(),
                             n, LOOM_RT_ALL_AXES);
          return 0;
        },
        "all_reduce(dtype=f32, op=sum, count=" + std::to_string(base) + ")",
        "all_reduce(dtype=f32, op=sum, count=" + std::to_string(base + 1) +
            ")");
  }
}

TEST(Mismatch, ThreadsAllGatherAgainstAllReduce) {
  expectMismatch(
      [](loom_rt_ctx *ctx) {
        std::vector<float> in(8, 1.0f), out(16);
        if (loom_rt_rank(ctx) == 0)
          loom_rt_all_gather(ctx, LOOM_RT_F32, in.data(), out.data(), 1, 8,
                             LOOM_RT_ALL_AXES);
        else
          loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, in.data(),
                             out.data(), 8, LOOM_RT_ALL_AXES);
        return 0;
      },
      "all_gather(dtype=f32, outer=1, inner=8)",
      "all_reduce(dtype=f32, op=sum, count=8)");
}

TEST(Mismatch, ThreadsSumAgainstMax) {
  expectMismatch(
      [](loom_rt_ctx *ctx) {
        float x = float(loom_rt_rank(ctx) + 1);
        loom_rt_all_reduce(ctx, LOOM_RT_F32,
                           loom_rt_rank(ctx) ? LOOM_RT_MAX : LOOM_RT_SUM, &x,
                           &x, 1, LOOM_RT_ALL_AXES);
        return 0;
      },
      "all_reduce(dtype=f32, op=sum, count=1)",
      "all_reduce(dtype=f32, op=max, count=1)");
}

TEST(Mismatch, ThreadsDtypesAndBarrier) {
  expectMismatch(
      [](loom_rt_ctx *ctx) {
        int32_t x[2] = {1, 2};
        loom_rt_all_reduce(ctx, loom_rt_rank(ctx) ? LOOM_RT_I32 : LOOM_RT_F32,
                           LOOM_RT_SUM, x, x, 1, LOOM_RT_ALL_AXES);
        return 0;
      },
      "all_reduce(dtype=f32, op=sum, count=1)",
      "all_reduce(dtype=i32, op=sum, count=1)");
  expectMismatch(
      [](loom_rt_ctx *ctx) {
        float x = 1;
        if (loom_rt_rank(ctx))
          loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
        else
          loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, &x, &x, 1,
                             LOOM_RT_ALL_AXES);
        return 0;
      },
      "all_reduce(dtype=f32, op=sum, count=1)", "barrier");
}

// Matching calls, many of them with alternating kinds and sizes, still
// agree (the signatures are double-buffered by barrier parity).
TEST(Mismatch, ThreadsMatchingSequencesPass) {
  int rc = runThreads(
      4, {4},
      [](loom_rt_ctx *ctx) {
        std::vector<float> a(4096, 1.0f), b(4 * 4096);
        for (int i = 0; i < 200; ++i) {
          int64_t n = 1 + (i * 37) % 4096;
          loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, a.data(), b.data(),
                             n, LOOM_RT_ALL_AXES);
          if (b[0] != 4.0f)
            return 1;
          if (i % 3 == 0)
            loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
          loom_rt_all_gather(ctx, LOOM_RT_F32, a.data(), b.data(), 1, n,
                             LOOM_RT_ALL_AXES);
        }
        return 0;
      },
      quiet());
  EXPECT_EQ(rc, 0);
}

// A timeout of 1e10 s or inf meant a deadline in the past (int64 overflow)
// and the job timed out at once; now it means "no deadline".
TEST(Timeout, HugeAndInfiniteTimeoutsDoNotExpireAtOnce) {
  for (double t : {1e10, HUGE_VAL}) {
    LaunchOptions o = quiet();
    o.timeoutSeconds = t;
    LaunchResult res;
    int rc = runThreads(
        2, {2},
        [](loom_rt_ctx *ctx) {
          if (loom_rt_rank(ctx) == 1)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          float x = 1;
          loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, &x, &x, 1,
                             LOOM_RT_ALL_AXES);
          return x == 2.0f ? 0 : 1;
        },
        o, &res);
    EXPECT_EQ(rc, 0) << t << ": " << joined(res);
  }
}

// Thread creation failure (here: an address-space limit leaves no room for
// thread stacks) ends the job with a message, not std::terminate.
TEST(Launch, ThreadCreationFailureIsAnError) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // 64 ranks need 64 stacks of 8 MiB: allow only a little more than the
    // child uses now.
    long pages = 0;
    if (FILE *f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1)
        pages = 0;
      std::fclose(f);
    }
    rlimit rl;
    rl.rlim_cur = rl.rlim_max =
        rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + (64u << 20);
    setrlimit(RLIMIT_AS, &rl);
    LaunchOptions o = quiet();
    LaunchResult res;
    int rc = runThreads(
        64, {64},
        [](loom_rt_ctx *ctx) {
          loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
          return 0;
        },
        o, &res);
    bool named = joined(res).find("cannot start the thread of rank") !=
                 std::string::npos;
    _exit(rc == 0 ? 3 : named ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status))
      << "child died of signal "
      << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (WEXITSTATUS(status) == 3)
    GTEST_SKIP() << "the address-space limit did not stop thread creation";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// What generated code calls instead of crashing (issue 13): malloc that
// fails the job on out of memory, and ids out of range named with their
// input and bound.
TEST(GeneratedCodeChecks, MallocFailureFailsTheJob) {
  LaunchResult res;
  int rc = runThreads(
      2, {2},
      [](loom_rt_ctx *ctx) {
        void *p = loom_rt_malloc(16);
        if (!p)
          return 1;
        std::free(p);
        if (loom_rt_rank(ctx) == 1)
          loom_rt_malloc(int64_t(1) << 62); // no machine has 4 EiB
        loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
        return 0;
      },
      quiet(), &res);
  EXPECT_NE(rc, 0);
  EXPECT_NE(joined(res).find("loom-rt: rank 1: out of memory: malloc of "
                             "4611686018427387904 bytes for a buffer of the "
                             "generated code failed"),
            std::string::npos)
      << joined(res);
}

TEST(GeneratedCodeChecks, IndexErrorNamesInputAndBound) {
  LaunchResult res;
  int rc = runThreads(
      1, {1},
      [](loom_rt_ctx *ctx) -> int {
        loom_rt_index_error(ctx, "tokens", 96, 0, 96, "loom.embedding");
      },
      quiet(), &res);
  EXPECT_NE(rc, 0);
  EXPECT_NE(joined(res).find("loom-rt: rank 0: tokens: id 96 out of range "
                             "[0, 96) in loom.embedding"),
            std::string::npos)
      << joined(res);
}
