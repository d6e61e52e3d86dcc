//===- test/runtime/ThreadPoolTest.cpp - loom_rt_parallel_for ----*- C++
//-*-===//
//
// The pool of a rank: the partition covers [0, n) once with chunks of at
// least `grain`, each chunk runs on its own thread, one thread and nested
// calls run serially on the caller, a failing body fails the job without a
// hang, a reduction written per output gives the same bits on 1..8
// threads, and a rank's buffers come from the heap.
//
//===----------------------------------------------------------------------===//

#include "ThreadPool.h"
#include "Sanitized.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>

using namespace loom::rt;

namespace {

LaunchOptions withThreads(int n) {
  LaunchOptions o;
  o.quiet = true;
  o.timeoutSeconds = 30;
  o.threadsPerRank = n;
  return o;
}

// The partition: contiguous, complete, at most `threads` chunks, each at
// least `grain` long unless there is only one.
TEST(ThreadPool, PartitionCoversRange) {
  for (int64_t n = 0; n <= 70; ++n)
    for (int64_t grain : {0, 1, 2, 3, 7, 64, 100})
      for (int threads : {1, 2, 3, 4, 8}) {
        std::vector<int64_t> b = ThreadPool::partition(n, grain, threads);
        ASSERT_EQ(b.front(), 0);
        if (n == 0) {
          EXPECT_EQ(b.size(), 1u);
          continue;
        }
        ASSERT_EQ(b.back(), n);
        size_t chunks = b.size() - 1;
        EXPECT_GE(chunks, 1u);
        EXPECT_LE(chunks, size_t(threads));
        for (size_t i = 0; i < chunks; ++i) {
          EXPECT_LT(b[i], b[i + 1]);
          if (chunks > 1)
            EXPECT_GE(b[i + 1] - b[i], std::max<int64_t>(1, grain));
        }
      }
}

struct Hits {
  std::vector<std::atomic<int>> count;
  std::mutex mu;
  std::set<std::thread::id> threads;
  explicit Hits(int64_t n) : count(size_t(n)) {}
};

void countBody(void *closure, int64_t begin, int64_t end) {
  auto *h = static_cast<Hits *>(closure);
  for (int64_t i = begin; i < end; ++i)
    h->count[size_t(i)].fetch_add(1);
  std::lock_guard<std::mutex> lock(h->mu);
  h->threads.insert(std::this_thread::get_id());
}

// Every index runs once, on at most as many threads as chunks; the thread
// count is what the launcher was asked for, per rank.
TEST(ThreadPool, EachIndexOnceOnDistinctThreads) {
  for (int ranks : {1, 2}) {
    std::atomic<int> bad{0};
    int rc = runThreads(
        ranks, {},
        [&](loom_rt_ctx *ctx) {
          if (loom_rt_num_threads(ctx) != 4 ||
              loom_rt_num_threads(nullptr) != 4)
            ++bad;
          for (int64_t n : {1, 7, 8, 1000, 4097}) {
            Hits h(n);
            loom_rt_parallel_for(ctx, n, 2, countBody, &h);
            for (auto &c : h.count)
              if (c.load() != 1)
                ++bad;
            size_t chunks = ThreadPool::partition(n, 2, 16).size() - 1;
            if (h.threads.empty() ||
                h.threads.size() > std::min<size_t>(4, n < 4 ? 1 : chunks))
              ++bad;
          }
          return 0;
        },
        withThreads(4));
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(bad.load(), 0) << ranks << " ranks";
  }
}

// Back-to-back tiny jobs: a worker that lost the race for the last chunk
// of one job must never claim an index of the next (it ran a chunk twice,
// the job's done count overshot and parallelFor waited forever). Every
// index exactly once in each of many jobs, and the loop ends.
TEST(ThreadPool, BackToBackJobsNeverRunAChunkTwice) {
  std::atomic<int> bad{0};
  int rc = runThreads(
      1, {},
      [&](loom_rt_ctx *ctx) {
        for (int job = 0; job < 20000; ++job) {
          int64_t n = 2 + job % 7;
          Hits h(n);
          loom_rt_parallel_for(ctx, n, 1, countBody, &h);
          for (auto &c : h.count)
            if (c.load() != 1)
              ++bad;
        }
        return 0;
      },
      withThreads(2));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(bad.load(), 0);
}

void slowBody(void *closure, int64_t begin, int64_t end) {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  countBody(closure, begin, end);
}

// Chunks are claimed: with slow chunks the workers take part (the caller
// runs the chunks no worker has claimed yet, so a slow wake-up costs no
// more than running serially).
TEST(ThreadPool, WorkersTakePart) {
  int rc = runThreads(
      1, {},
      [&](loom_rt_ctx *ctx) {
        Hits h(4);
        loom_rt_parallel_for(ctx, 4, 1, slowBody, &h);
        EXPECT_GE(h.threads.size(), 2u);
        for (auto &c : h.count)
          EXPECT_EQ(c.load(), 1);
        return 0;
      },
      withThreads(4));
  EXPECT_EQ(rc, 0);
}

// One thread: the body runs once, on the rank's thread, over [0, n).
TEST(ThreadPool, OneThreadRunsInline) {
  int rc = runThreads(
      1, {},
      [&](loom_rt_ctx *ctx) {
        EXPECT_EQ(loom_rt_num_threads(ctx), 1);
        Hits h(100);
        loom_rt_parallel_for(ctx, 100, 1, countBody, &h);
        EXPECT_EQ(h.threads.size(), 1u);
        EXPECT_EQ(*h.threads.begin(), std::this_thread::get_id());
        return 0;
      },
      withThreads(1));
  EXPECT_EQ(rc, 0);
  // Outside any rank (null context, no pool): serial on the caller.
  Hits h(10);
  loom_rt_parallel_for(nullptr, 10, 1, countBody, &h);
  EXPECT_EQ(h.threads.size(), 1u);
  EXPECT_EQ(loom_rt_num_threads(nullptr), 1);
}

struct Nested {
  Hits inner{64};
  std::atomic<int> serialInner{0};
};

void nestedBody(void *closure, int64_t begin, int64_t end) {
  auto *nb = static_cast<Nested *>(closure);
  for (int64_t i = begin; i < end; ++i) {
    // A nested call: runs serially on this thread, whichever it is.
    Hits local(8);
    loom_rt_parallel_for(nullptr, 8, 1, countBody, &local);
    if (local.threads.size() == 1 &&
        *local.threads.begin() == std::this_thread::get_id())
      ++nb->serialInner;
    nb->inner.count[size_t(i)].fetch_add(1);
  }
}

TEST(ThreadPool, NestedCallsRunSerially) {
  int rc = runThreads(
      1, {},
      [&](loom_rt_ctx *ctx) {
        Nested n;
        loom_rt_parallel_for(ctx, 64, 1, nestedBody, &n);
        EXPECT_EQ(n.serialInner.load(), 64);
        for (auto &c : n.inner.count)
          EXPECT_EQ(c.load(), 1);
        return 0;
      },
      withThreads(3));
  EXPECT_EQ(rc, 0);
}

struct Abort {
  int64_t n;
  loom_rt_ctx *ctx;
};

void abortingBody(void *closure, int64_t begin, int64_t end) {
  // The last chunk (a worker's) fails the job.
  auto *a = static_cast<Abort *>(closure);
  if (end == a->n)
    loom_rt_abort(a->ctx, "body failed");
}

// A body that fails the job on a worker: the rank unwinds after every
// chunk is done; the job fails with the message, no hang.
TEST(ThreadPool, FailingBodyFailsJob) {
  LaunchResult res;
  int rc = runThreads(
      2, {},
      [&](loom_rt_ctx *ctx) {
        Abort a{1000, ctx};
        loom_rt_parallel_for(ctx, a.n, 1, abortingBody, &a);
        return 0;
      },
      withThreads(2), &res);
  EXPECT_NE(rc, 0);
  bool found = false;
  for (auto &m : res.messages)
    found |= m.find("body failed") != std::string::npos;
  EXPECT_TRUE(found);
}

struct RowSums {
  const std::vector<float> *x;
  std::vector<float> *y;
  int64_t cols;
};

void rowSumBody(void *closure, int64_t begin, int64_t end) {
  auto *r = static_cast<RowSums *>(closure);
  for (int64_t i = begin; i < end; ++i) {
    float s = 0;
    for (int64_t j = 0; j < r->cols; ++j)
      s += (*r->x)[size_t(i * r->cols + j)] * 1.0001f;
    (*r->y)[size_t(i)] = s;
  }
}

// Results do not depend on the thread count: bitwise equal on 1..8.
TEST(ThreadPool, ResultsIndependentOfThreadCount) {
  int64_t rows = 333, cols = 517;
  std::vector<float> x(size_t(rows * cols));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(float(i)) * 1e3f;
  std::vector<float> ref;
  for (int t : {1, 2, 3, 4, 8}) {
    std::vector<float> y(static_cast<size_t>(rows));
    int rc = runThreads(
        1, {},
        [&](loom_rt_ctx *ctx) {
          RowSums r{&x, &y, cols};
          loom_rt_parallel_for(ctx, rows, 4, rowSumBody, &r);
          return 0;
        },
        withThreads(t));
    ASSERT_EQ(rc, 0);
    if (ref.empty())
      ref = y;
    EXPECT_EQ(0, std::memcmp(ref.data(), y.data(), ref.size() * 4))
        << t << " threads";
  }
}

// The default: the available cores divided by the ranks of the host.
TEST(ThreadPool, DefaultThreadCount) {
  int cores = availableCores();
  EXPECT_GE(cores, 1);
  EXPECT_EQ(defaultRankThreads(1), cores);
  EXPECT_EQ(defaultRankThreads(cores * 2), 1);
  int rc = runThreads(
      1, {},
      [&](loom_rt_ctx *ctx) {
        EXPECT_EQ(loom_rt_num_threads(ctx), cores);
        EXPECT_EQ(rankThreads(ctx), cores);
        return 0;
      },
      withThreads(0));
  EXPECT_EQ(rc, 0);
}

// A rank's buffers come from malloc's heap, not a fresh mmap each
// (keepFreedBuffers): 4 MiB, above glibc's initial 128 KiB threshold, is
// not an mmapped chunk (glibc marks those with bit 1 of the size word).
TEST(ThreadPool, RankBuffersComeFromTheHeap) {
#ifdef LOOM_RT_SANITIZED
  GTEST_SKIP() << "the sanitizer's allocator has no glibc chunk headers";
#elif defined(__GLIBC__)
  int rc = runThreads(
      1, {},
      [&](loom_rt_ctx *) {
        void *p = loom_rt_malloc(4 << 20);
        EXPECT_NE(p, nullptr);
        size_t sizeWord = static_cast<size_t *>(p)[-1];
        EXPECT_EQ(sizeWord & 2u, 0u) << "an mmapped chunk";
        std::free(p);
        return 0;
      },
      withThreads(1));
  EXPECT_EQ(rc, 0);
  EXPECT_NE(keepFreedBuffers(), "");
#else
  GTEST_SKIP() << "glibc only";
#endif
}

} // namespace
