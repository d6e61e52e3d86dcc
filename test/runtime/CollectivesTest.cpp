//===- test/runtime/CollectivesTest.cpp - threads collectives ---*- C++ -*-===//
//
// Every collective of the threads communicator on 1,2,3,4,8 ranks, sizes
// across the small (staging) and large (direct) paths, uneven counts,
// in-place, every dtype and op, sub-groups of 2-D and 3-D meshes.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>

using namespace loom::rt;
using namespace loom::rt::test;

namespace {

LaunchOptions quietOpts() {
  LaunchOptions o;
  o.timeoutSeconds = 30;
  return o;
}

void runOk(int n, std::vector<int64_t> mesh, const RankBody &body) {
  LaunchResult res;
  int rc = runThreads(n, std::move(mesh), body, quietOpts(), &res);
  ASSERT_EQ(rc, 0) << (res.messages.empty() ? "" : res.messages.front());
}

/// all_reduce of `count` elements on n ranks; returns total mismatches.
void checkAllReduce(int n, int32_t dt, int32_t op, int64_t count,
                    bool inPlace) {
  std::atomic<int64_t> bad{0};
  runOk(n, {}, [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    Buf in(dt, count), out(dt, count);
    auto val = [&](int64_t m, int64_t i) {
      return op == LOOM_RT_PROD ? prodValue(m, i) : value(m, i);
    };
    for (int64_t i = 0; i < count; ++i)
      in.set(i, val(r, i));
    void *dst = inPlace ? in.data() : out.data();
    loom_rt_all_reduce(ctx, dt, op, in.data(), dst, count, LOOM_RT_ALL_AXES);
    const Buf &res = inPlace ? in : out;
    int64_t local = 0;
    for (int64_t i = 0; i < count; ++i) {
      double e = val(0, i);
      for (int64_t m = 1; m < n; ++m)
        e = combine(op, e, val(m, i));
      if (res.get(i) != e)
        ++local;
    }
    bad += local;
    return 0;
  });
  EXPECT_EQ(bad.load(), 0) << "n=" << n << " dtype=" << dtypeName(dt)
                           << " op=" << reduceOpName(op) << " count=" << count
                           << " inPlace=" << inPlace;
}

} // namespace

class AllReduceSweep
    : public ::testing::TestWithParam<std::tuple<int, int64_t, bool>> {};

TEST_P(AllReduceSweep, F32Sum) {
  auto [n, count, inPlace] = GetParam();
  checkAllReduce(n, LOOM_RT_F32, LOOM_RT_SUM, count, inPlace);
}

// 1 .. 100003 elements: the staging path (<= 32 KiB) and the direct path,
// counts not divisible by p, in place and not.
INSTANTIATE_TEST_SUITE_P(
    Ranks, AllReduceSweep,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 8),
                       ::testing::Values(int64_t(0), int64_t(1), int64_t(7),
                                         int64_t(4099), int64_t(8193),
                                         int64_t(100003)),
                       ::testing::Bool()));

class AllReduceTypes
    : public ::testing::TestWithParam<std::tuple<int32_t, int32_t>> {};

TEST_P(AllReduceTypes, SmallAndLarge) {
  auto [dt, op] = GetParam();
  for (int n : {2, 3, 5, 8})
    for (int64_t count : {int64_t(5), int64_t(70001)})
      checkAllReduce(n, dt, op, count, /*inPlace=*/count == 5);
}

INSTANTIATE_TEST_SUITE_P(
    All, AllReduceTypes,
    ::testing::Combine(::testing::Range(0, int(LOOM_RT_NUM_DTYPES)),
                       ::testing::Range(0, int(LOOM_RT_NUM_REDUCE_OPS))));

// 64 MB of f32 (16 Mi elements), in place, on 2 and 4 ranks.
TEST(AllReduce, SixtyFourMegabytes) {
  const int64_t count = 16 << 20;
  for (int n : {2, 4}) {
    std::atomic<int64_t> bad{0};
    runOk(n, {}, [&](loom_rt_ctx *ctx) {
      int64_t r = loom_rt_rank(ctx);
      std::vector<float> buf(count);
      for (int64_t i = 0; i < count; ++i)
        buf[i] = float((i & 1023) + r);
      loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, buf.data(), buf.data(),
                         count, LOOM_RT_ALL_AXES);
      int64_t local = 0;
      for (int64_t i = 0; i < count; ++i)
        local += buf[i] != float(n * (i & 1023) + n * (n - 1) / 2);
      bad += local;
      return 0;
    });
    EXPECT_EQ(bad.load(), 0) << "n=" << n;
  }
}

// f16/bf16 sums accumulate in f32 and round once.
TEST(AllReduce, HalfSumsInF32) {
  for (int32_t dt : {LOOM_RT_F16, LOOM_RT_BF16}) {
    for (int64_t count : {int64_t(33), int64_t(50000)}) {
      const int n = 4;
      std::atomic<int64_t> bad{0};
      runOk(n, {}, [&](loom_rt_ctx *ctx) {
        int64_t r = loom_rt_rank(ctx);
        auto x = [&](int64_t m, int64_t i) {
          return 1.0f + float((i * 13 + m * 5) % 17) / 64.0f;
        };
        Buf in(dt, count), out(dt, count);
        for (int64_t i = 0; i < count; ++i)
          in.set(i, x(r, i));
        loom_rt_all_reduce(ctx, dt, LOOM_RT_SUM, in.data(), out.data(), count,
                           LOOM_RT_ALL_AXES);
        int64_t local = 0;
        for (int64_t i = 0; i < count; ++i) {
          float acc = 0;
          for (int m = 0; m < n; ++m) {
            Buf t(dt, 1);
            t.set(0, x(m, i)); // the rank's input, rounded to dt
            acc += float(t.get(0));
          }
          Buf e(dt, 1);
          e.set(0, acc); // one rounding
          local += out.get(i) != e.get(0);
        }
        bad += local;
        return 0;
      });
      EXPECT_EQ(bad.load(), 0) << dtypeName(dt) << " count=" << count;
    }
  }
}

class GatherSweep : public ::testing::TestWithParam<
                        std::tuple<int, std::pair<int64_t, int64_t>>> {};

TEST_P(GatherSweep, AllGather) {
  auto [n, shape] = GetParam();
  auto [outer, inner] = shape;
  std::atomic<int64_t> bad{0};
  runOk(n, {}, [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    std::vector<int32_t> in(outer * inner + 1), out(outer * n * inner + 1, -1);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        in[o * inner + i] = int32_t(r * 1000003 + o * inner + i);
    loom_rt_all_gather(ctx, LOOM_RT_I32, in.data(), out.data(), outer, inner,
                       LOOM_RT_ALL_AXES);
    int64_t local = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i)
          local += out[(o * n + j) * inner + i] !=
                   int32_t(j * 1000003 + o * inner + i);
    bad += local;
    return 0;
  });
  EXPECT_EQ(bad.load(), 0);
}

TEST_P(GatherSweep, ReduceScatter) {
  auto [n, shape] = GetParam();
  auto [outer, inner] = shape;
  std::atomic<int64_t> bad{0};
  runOk(n, {}, [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    std::vector<double> in(outer * n * inner + 1), out(outer * inner + 1, -1);
    // in_m[o][j][i] = m + 10*(o*n*inner + j*inner + i)
    for (int64_t k = 0; k < outer * n * inner; ++k)
      in[k] = double(r) + 10.0 * double(k);
    loom_rt_reduce_scatter(ctx, LOOM_RT_F64, LOOM_RT_SUM, in.data(), out.data(),
                           outer, inner, LOOM_RT_ALL_AXES);
    int64_t local = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double k = double(o * n * inner + r * inner + i);
        double e = n * (n - 1) / 2.0 + n * 10.0 * k;
        local += out[o * inner + i] != e;
      }
    bad += local;
    return 0;
  });
  EXPECT_EQ(bad.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GatherSweep,
    ::testing::Combine(
        ::testing::Values(1, 2, 3, 4, 8),
        ::testing::Values(std::make_pair(int64_t(1), int64_t(1)),
                          std::make_pair(int64_t(1), int64_t(1000)),
                          std::make_pair(int64_t(3), int64_t(5)),
                          std::make_pair(int64_t(7), int64_t(333)),
                          std::make_pair(int64_t(0), int64_t(4)),
                          std::make_pair(int64_t(1), int64_t(1) << 18))));

TEST(ReduceScatter, HalfTypes) {
  for (int32_t dt : {LOOM_RT_F16, LOOM_RT_BF16}) {
    const int n = 4;
    const int64_t outer = 3, inner = 1001;
    std::atomic<int64_t> bad{0};
    runOk(n, {}, [&](loom_rt_ctx *ctx) {
      int64_t r = loom_rt_rank(ctx);
      Buf in(dt, outer * n * inner), out(dt, outer * inner);
      for (int64_t k = 0; k < outer * n * inner; ++k)
        in.set(k, value(r, k));
      loom_rt_reduce_scatter(ctx, dt, LOOM_RT_MAX, in.data(), out.data(), outer,
                             inner, LOOM_RT_ALL_AXES);
      int64_t local = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t k = (o * n + r) * inner + i;
          double e = value(0, k);
          for (int m = 1; m < n; ++m)
            e = std::max(e, value(m, k));
          local += out.get(o * inner + i) != e;
        }
      bad += local;
      return 0;
    });
    EXPECT_EQ(bad.load(), 0) << dtypeName(dt);
  }
}

class AllToAllSweep
    : public ::testing::TestWithParam<std::tuple<int, int64_t>> {};

TEST_P(AllToAllSweep, Blocks) {
  auto [n, block] = GetParam();
  std::atomic<int64_t> bad{0};
  runOk(n, {}, [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    std::vector<int64_t> in(n * block + 1), out(n * block + 1, -1);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < block; ++i)
        in[j * block + i] = r * 1000000 + j * 1000 + i;
    loom_rt_all_to_all(ctx, LOOM_RT_I64, in.data(), out.data(), block,
                       LOOM_RT_ALL_AXES);
    int64_t local = 0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < block; ++i)
        local += out[j * block + i] != j * 1000000 + r * 1000 + i;
    bad += local;
    return 0;
  });
  EXPECT_EQ(bad.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, AllToAllSweep,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 8),
                       ::testing::Values(int64_t(0), int64_t(1), int64_t(17),
                                         int64_t(999))));

// Groups of a 2x4 mesh: mask 1 = axis 0 (columns, p=2), mask 2 = axis 1
// (rows, p=4), mask 3 = world, mask 0 = self.
TEST(Groups, TwoByFourMesh) {
  std::atomic<int64_t> bad{0};
  runOk(8, {2, 4}, [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    int64_t c0 = loom_rt_coord(ctx, 0), c1 = loom_rt_coord(ctx, 1);
    int64_t local = 0;
    local += r != c0 * 4 + c1;
    local += loom_rt_group_size(ctx, 1) != 2;
    local += loom_rt_group_index(ctx, 1) != c0;
    local += loom_rt_group_size(ctx, 2) != 4;
    local += loom_rt_group_index(ctx, 2) != c1;
    local += loom_rt_group_size(ctx, 3) != 8;
    local += loom_rt_group_index(ctx, 3) != r;
    local += loom_rt_group_size(ctx, 0) != 1;
    for (int iter = 0; iter < 50; ++iter) {
      for (uint64_t mask : {1u, 2u, 3u, 0u}) {
        for (int64_t count : {int64_t(3), int64_t(20000)}) {
          std::vector<int64_t> v(count, r + iter);
          loom_rt_all_reduce(ctx, LOOM_RT_I64, LOOM_RT_SUM, v.data(), v.data(),
                             count, mask);
          int64_t e = 0;
          if (mask == 1)
            e = c1 + (4 + c1) + 2 * iter;
          else if (mask == 2)
            e = 4 * c0 * 4 + 6 + 4 * iter;
          else if (mask == 3)
            e = 28 + 8 * iter;
          else
            e = r + iter;
          for (int64_t x : v)
            local += x != e;
        }
      }
      // all_gather along the row axis (mask 2): members are the row.
      int64_t mine = r;
      int64_t row[4];
      loom_rt_all_gather(ctx, LOOM_RT_I64, &mine, row, 1, 1, 2);
      for (int j = 0; j < 4; ++j)
        local += row[j] != c0 * 4 + j;
      loom_rt_barrier(ctx, 1);
    }
    bad += local;
    return 0;
  });
  EXPECT_EQ(bad.load(), 0);
}

// 2x2x2 mesh, mask 5 = axes 0 and 2: index = c0*2 + c2.
TEST(Groups, ThreeDimMeshNonContiguousAxes) {
  std::atomic<int64_t> bad{0};
  runOk(8, {2, 2, 2}, [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    int64_t c0 = loom_rt_coord(ctx, 0), c1 = loom_rt_coord(ctx, 1),
            c2 = loom_rt_coord(ctx, 2);
    int64_t local = 0;
    local += loom_rt_group_size(ctx, 5) != 4;
    local += loom_rt_group_index(ctx, 5) != c0 * 2 + c2;
    int64_t members[4];
    loom_rt_all_gather(ctx, LOOM_RT_I64, &r, members, 1, 1, 5);
    for (int64_t j = 0; j < 4; ++j)
      local += members[j] != (j / 2) * 4 + c1 * 2 + (j % 2);
    bad += local;
    return 0;
  });
  EXPECT_EQ(bad.load(), 0);
}

// Many back-to-back small and large all-reduces (staging parity, barrier
// generations) with every rank checking every result.
TEST(AllReduce, StressAlternatingSizes) {
  std::atomic<int64_t> bad{0};
  runOk(4, {}, [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    int64_t local = 0;
    std::vector<float> v(30000);
    for (int iter = 0; iter < 400; ++iter) {
      int64_t count = iter % 5 == 4 ? 30000 : 1 + iter % 97;
      for (int64_t i = 0; i < count; ++i)
        v[i] = float(r * iter + i % 11);
      loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, v.data(), v.data(),
                         count, LOOM_RT_ALL_AXES);
      for (int64_t i = 0; i < count; ++i)
        local += v[i] != float(6 * iter + 4 * (i % 11));
    }
    bad += local;
    return 0;
  });
  EXPECT_EQ(bad.load(), 0);
}

TEST(SendRecv, Rings) {
  for (int n : {2, 3, 4, 8}) {
    std::atomic<int64_t> bad{0};
    runOk(n, {}, [&](loom_rt_ctx *ctx) {
      int64_t r = loom_rt_rank(ctx);
      int64_t right = (r + 1) % n, left = (r + n - 1) % n;
      int64_t local = 0;
      for (int64_t count : {int64_t(1), int64_t(1000), int64_t(300000)}) {
        std::vector<float> out(count, float(r)), in(count, -1);
        // Ordered: even ranks send first, odd ranks receive first (valid
        // under MPI rendezvous semantics too).
        if (r % 2 == 0 || n % 2 == 1) {
          loom_rt_send(ctx, LOOM_RT_F32, out.data(), count, right, 7);
          loom_rt_recv(ctx, LOOM_RT_F32, in.data(), count, left, 7);
        } else {
          loom_rt_recv(ctx, LOOM_RT_F32, in.data(), count, left, 7);
          loom_rt_send(ctx, LOOM_RT_F32, out.data(), count, right, 7);
        }
        for (float x : in)
          local += x != float(left);
        std::fill(in.begin(), in.end(), -1.0f);
        loom_rt_sendrecv(ctx, LOOM_RT_F32, out.data(), count, right, in.data(),
                         count, left, 9);
        for (float x : in)
          local += x != float(left);
      }
      // FIFO per (src, tag); tags kept apart.
      for (int k = 0; k < 10; ++k) {
        int32_t a = int32_t(100 + k), b = int32_t(200 + k);
        loom_rt_send(ctx, LOOM_RT_I32, &a, 1, right, 1);
        loom_rt_send(ctx, LOOM_RT_I32, &b, 1, right, 2);
      }
      for (int k = 0; k < 10; ++k) {
        int32_t x = 0;
        loom_rt_recv(ctx, LOOM_RT_I32, &x, 1, left, 2);
        local += x != 200 + k;
      }
      for (int k = 0; k < 10; ++k) {
        int32_t x = 0;
        loom_rt_recv(ctx, LOOM_RT_I32, &x, 1, left, 1);
        local += x != 100 + k;
      }
      bad += local;
      return 0;
    });
    EXPECT_EQ(bad.load(), 0) << "n=" << n;
  }
}

TEST(Context, Queries) {
  runOk(6, {3, 2}, [&](loom_rt_ctx *ctx) {
    EXPECT_EQ(loom_rt_abi_version(), LOOM_RT_ABI_VERSION);
    EXPECT_EQ(loom_rt_world_size(ctx), 6);
    EXPECT_EQ(loom_rt_mesh_rank(ctx), 2);
    EXPECT_EQ(loom_rt_mesh_dim(ctx, 0), 3);
    EXPECT_EQ(loom_rt_mesh_dim(ctx, 1), 2);
    EXPECT_EQ(loom_rt_dtype_size(LOOM_RT_BF16), 2);
    EXPECT_EQ(loom_rt_dtype_size(99), 0);
    int64_t t0 = loom_rt_now_ns();
    EXPECT_GE(loom_rt_now_ns(), t0);
    loom_rt_trace_begin(ctx, "noop"); // tracing off: no-op
    loom_rt_trace_end(ctx, "noop");
    return 0;
  });
}
