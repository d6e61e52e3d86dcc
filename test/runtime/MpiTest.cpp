//===- test/runtime/MpiTest.cpp - mpi communicator test driver --*- C++ -*-===//
//
// Run under mpirun: `loom-rt-mpi-test <mode>` where mode is
//   collectives  every collective, dtype and op on a 1-D mesh (any -np)
//   groups       2x2 mesh sub-groups, created lazily at different times
//   kill9        rank 1 SIGKILLs itself; the others are in collectives
//   timeout      rank 1 never calls the collective (watchdog must abort)
//   abort        rank 2 calls loom_rt_abort
// Exits 0 only if every check passed on every rank.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace loom::rt;
using namespace loom::rt::test;

namespace {

int64_t Bad = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      if (Bad++ < 10)                                                          \
        std::fprintf(stderr, "rank %lld: check failed at line %d: %s\n",       \
                     (long long)loom_rt_rank(ctx), __LINE__, #cond);           \
    }                                                                          \
  } while (0)

void allReduce(loom_rt_ctx *ctx, int32_t dt, int32_t op, int64_t count,
               bool inPlace) {
  int64_t n = loom_rt_world_size(ctx), r = loom_rt_rank(ctx);
  auto val = [&](int64_t m, int64_t i) {
    return op == LOOM_RT_PROD ? prodValue(m, i) : value(m, i);
  };
  Buf in(dt, count), out(dt, count);
  for (int64_t i = 0; i < count; ++i)
    in.set(i, val(r, i));
  loom_rt_all_reduce(ctx, dt, op, in.data(), inPlace ? in.data() : out.data(),
                     count, LOOM_RT_ALL_AXES);
  const Buf &res = inPlace ? in : out;
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    double e = val(0, i);
    for (int64_t m = 1; m < n; ++m)
      e = combine(op, e, val(m, i));
    wrong += res.get(i) != e;
  }
  CHECK(wrong == 0);
}

int collectives(loom_rt_ctx *ctx) {
  int64_t n = loom_rt_world_size(ctx), r = loom_rt_rank(ctx);
  for (int32_t dt = 0; dt < LOOM_RT_NUM_DTYPES; ++dt)
    for (int32_t op = 0; op < LOOM_RT_NUM_REDUCE_OPS; ++op)
      for (int64_t count : {int64_t(1), int64_t(7), int64_t(20001)})
        allReduce(ctx, dt, op, count, count == 7);
  allReduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, 1 << 20, true);

  // all_gather [outer][inner] -> [outer][p][inner]
  for (auto [outer, inner] :
       {std::pair<int64_t, int64_t>{1, 5}, {3, 5}, {7, 333}, {2, 0}}) {
    for (int32_t dt : {LOOM_RT_I32, LOOM_RT_BF16}) {
      Buf in(dt, outer * inner), out(dt, outer * n * inner);
      for (int64_t k = 0; k < outer * inner; ++k)
        in.set(k, double((r * 7 + k) % 100));
      loom_rt_all_gather(ctx, dt, in.data(), out.data(), outer, inner,
                         LOOM_RT_ALL_AXES);
      int64_t wrong = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < inner; ++i)
            wrong += out.get((o * n + j) * inner + i) !=
                     double((j * 7 + o * inner + i) % 100);
      CHECK(wrong == 0);
    }
  }
  // reduce_scatter [outer][p][inner] -> [outer][inner]
  for (auto [outer, inner] :
       {std::pair<int64_t, int64_t>{1, 9}, {3, 5}, {4, 1001}}) {
    for (int32_t dt : {LOOM_RT_F64, LOOM_RT_F16, LOOM_RT_I64}) {
      Buf in(dt, outer * n * inner), out(dt, outer * inner);
      for (int64_t k = 0; k < outer * n * inner; ++k)
        in.set(k, value(r, k));
      loom_rt_reduce_scatter(ctx, dt, LOOM_RT_SUM, in.data(), out.data(), outer,
                             inner, LOOM_RT_ALL_AXES);
      int64_t wrong = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t k = (o * n + r) * inner + i;
          double e = 0;
          for (int64_t m = 0; m < n; ++m)
            e += value(m, k);
          wrong += out.get(o * inner + i) != e;
        }
      CHECK(wrong == 0);
    }
  }
  // all_to_all
  for (int64_t block : {int64_t(1), int64_t(1000)}) {
    std::vector<int64_t> in(n * block), out(n * block, -1);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < block; ++i)
        in[j * block + i] = r * 1000000 + j * 1000 + i;
    loom_rt_all_to_all(ctx, LOOM_RT_I64, in.data(), out.data(), block,
                       LOOM_RT_ALL_AXES);
    int64_t wrong = 0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < block; ++i)
        wrong += out[j * block + i] != j * 1000000 + r * 1000 + i;
    CHECK(wrong == 0);
  }
  // send/recv ring (ordered) and sendrecv ring
  if (n > 1) {
    int64_t right = (r + 1) % n, left = (r + n - 1) % n;
    for (int64_t count : {int64_t(1), int64_t(100000)}) {
      std::vector<float> s(count, float(r)), d(count, -1);
      if (r == 0) {
        loom_rt_send(ctx, LOOM_RT_F32, s.data(), count, right, 4);
        loom_rt_recv(ctx, LOOM_RT_F32, d.data(), count, left, 4);
      } else {
        loom_rt_recv(ctx, LOOM_RT_F32, d.data(), count, left, 4);
        loom_rt_send(ctx, LOOM_RT_F32, s.data(), count, right, 4);
      }
      CHECK(d[0] == float(left) && d[count - 1] == float(left));
      std::fill(d.begin(), d.end(), -1.0f);
      loom_rt_sendrecv(ctx, LOOM_RT_F32, s.data(), count, right, d.data(),
                       count, left, 5);
      CHECK(d[0] == float(left) && d[count - 1] == float(left));
    }
  }
  loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
  if (r == 0)
    std::printf("collectives: %s on %lld ranks\n", Bad ? "FAILED" : "OK",
                (long long)n);
  return Bad ? 1 : 0;
}

// 2x2 mesh. Row 0 uses its row group (mask 2) before row 1 has created
// its own: MPI_Comm_create_group only synchronises the group's members.
int groups(loom_rt_ctx *ctx) {
  int64_t r = loom_rt_rank(ctx);
  int64_t c0 = loom_rt_coord(ctx, 0), c1 = loom_rt_coord(ctx, 1);
  // Queries never synchronise: one rank alone may ask.
  if (r == 3)
    CHECK(loom_rt_group_index(ctx, 2) == 1 && loom_rt_group_size(ctx, 0) == 1);
  CHECK(loom_rt_group_size(ctx, 1) == 2 && loom_rt_group_index(ctx, 1) == c0);
  CHECK(loom_rt_group_size(ctx, 2) == 2 && loom_rt_group_index(ctx, 2) == c1);
  int64_t token = 0;
  if (c0 == 1)
    loom_rt_recv(ctx, LOOM_RT_I64, &token, 1, r - 2, 11);
  int64_t v = r;
  loom_rt_all_reduce(ctx, LOOM_RT_I64, LOOM_RT_SUM, &v, &v, 1, 2);
  CHECK(v == 4 * c0 + 1);
  if (c0 == 0)
    loom_rt_send(ctx, LOOM_RT_I64, &v, 1, r + 2, 11);
  else
    CHECK(token == 1);
  v = r;
  loom_rt_all_reduce(ctx, LOOM_RT_I64, LOOM_RT_SUM, &v, &v, 1, 1);
  CHECK(v == 2 + 2 * c1);
  int64_t col[2];
  loom_rt_all_gather(ctx, LOOM_RT_I64, &r, col, 1, 1, 1);
  CHECK(col[0] == c1 && col[1] == 2 + c1);
  loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
  if (r == 0)
    std::printf("groups: %s\n", Bad ? "FAILED" : "OK");
  return Bad ? 1 : 0;
}

int failing(loom_rt_ctx *ctx, const std::string &mode) {
  int64_t r = loom_rt_rank(ctx);
  std::vector<float> v(1 << 16, 1.0f);
  loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, v.data(), v.data(),
                     int64_t(v.size()), LOOM_RT_ALL_AXES);
  if (r == 1 && mode == "kill9") {
    std::fprintf(stderr, "rank 1: SIGKILL myself\n");
    std::fflush(stderr);
    raise(SIGKILL);
  }
  if (r == 1 && mode == "timeout") {
    sleep(60); // never joins the next collective
    return 0;
  }
  if (r == 2 && mode == "abort")
    loom_rt_abort(ctx, "test abort from rank 2");
  // Ranks that disagree (run with LOOM_CHECK_COLLECTIVES=1): rank 3 calls
  // something else than the others at the same meeting point.
  if (mode == "mismatch-count")
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, v.data(), v.data(),
                       r == 3 ? 8 : 16, LOOM_RT_ALL_AXES);
  if (mode == "mismatch-op")
    loom_rt_all_reduce(ctx, LOOM_RT_F32, r == 3 ? LOOM_RT_MAX : LOOM_RT_SUM,
                       v.data(), v.data(), 16, LOOM_RT_ALL_AXES);
  if (mode == "mismatch-kind") {
    std::vector<float> out(4 * 16);
    if (r == 3)
      loom_rt_all_gather(ctx, LOOM_RT_F32, v.data(), out.data(), 1, 16,
                         LOOM_RT_ALL_AXES);
    else
      loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, v.data(), v.data(), 16,
                         LOOM_RT_ALL_AXES);
  }
  for (int i = 0; i < 1000000; ++i)
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, v.data(), v.data(),
                       int64_t(v.size()), LOOM_RT_ALL_AXES);
  return 0;
}

/// `bench`: microseconds per loom_rt_all_reduce (f32 sum, in place) at a few
/// sizes through the runtime's MPI backend, to measure what
/// LOOM_CHECK_COLLECTIVES=1 costs (docs/RUNTIME.md).
int bench(loom_rt_ctx *ctx) {
  for (int64_t count : {int64_t(1), int64_t(1024), int64_t(1) << 18}) {
    std::vector<float> v(size_t(count), 1.0f);
    int iters = count >= (1 << 18) ? 200 : 5000;
    for (int i = 0; i < iters / 10; ++i)
      loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, v.data(), v.data(),
                         count, LOOM_RT_ALL_AXES);
    loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    int64_t t0 = loom_rt_now_ns();
    for (int i = 0; i < iters; ++i)
      loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, v.data(), v.data(),
                         count, LOOM_RT_ALL_AXES);
    double us = double(loom_rt_now_ns() - t0) / 1e3 / iters;
    if (loom_rt_rank(ctx) == 0)
      std::printf("bench: %lld bytes %.2f us\n", (long long)(count * 4), us);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "collectives";
  std::vector<int64_t> mesh;
  if (mode == "groups")
    mesh = {2, 2};
  return runMpi(mesh, [&](loom_rt_ctx *ctx) -> int {
    if (mode == "collectives")
      return collectives(ctx);
    if (mode == "groups")
      return groups(ctx);
    if (mode == "bench")
      return bench(ctx);
    return failing(ctx, mode);
  });
}
