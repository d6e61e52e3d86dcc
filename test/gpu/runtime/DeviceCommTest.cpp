//===- test/gpu/runtime/DeviceCommTest.cpp - single-device communicator ---===//
//
// The single-device communicator (runtime/cuda/DeviceComm.h) with its device
// operations in host memory: "device" buffers are allocations registered
// with HostOps, and a rank's copies and reductions are queued like work on
// a stream and run only at its sync(), so a missing wait for the stream
// shows up as wrong data. Results are compared bit for bit with the threads
// backend on host buffers. The generated reduction kernel (PTX) is checked
// with ptxas when the toolkit is there; it has not run on a GPU here.
//
//===----------------------------------------------------------------------===//

#include "DeviceComm.h"

#include "../../runtime/TestUtil.h"
#include "DType.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <unistd.h>

using namespace loom::rt;
using loom::rt::test::anyContains;
using loom::rt::test::joined;
using loom::rt::test::quietLaunch;

namespace {

/// "Device" memory: host allocations recorded here.
struct DeviceMemory {
  std::mutex mu;
  std::map<uintptr_t, uintptr_t> ranges; ///< begin -> end
  void *alloc(int64_t bytes) {
    void *p = std::calloc(size_t(std::max<int64_t>(bytes, 1)), 1);
    std::lock_guard<std::mutex> lock(mu);
    ranges[uintptr_t(p)] = uintptr_t(p) + size_t(std::max<int64_t>(bytes, 1));
    return p;
  }
  void release(void *p) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ranges.erase(uintptr_t(p));
    }
    std::free(p);
  }
  bool contains(const void *p) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = ranges.upper_bound(uintptr_t(p));
    if (it == ranges.begin())
      return false;
    --it;
    return uintptr_t(p) < it->second;
  }
};
DeviceMemory &memory() {
  static DeviceMemory m;
  return m;
}

/// DeviceOps in host memory; work runs at sync(), in issue order.
class HostOps final : public DeviceOps {
public:
  ~HostOps() override {
    if (Scratch)
      memory().release(Scratch);
  }
  bool isDevice(const void *p) override { return memory().contains(p); }
  bool copy(void *dst, const void *src, int64_t bytes,
            std::string *err) override {
    if (!isDevice(dst) || !isDevice(src))
      return fail("copy outside device memory", err);
    Queue.push_back([=] { std::memcpy(dst, src, size_t(bytes)); });
    return true;
  }
  bool reduce(int32_t dtype, int32_t op, const void *const *srcs, int p,
              void *out, int64_t rows, int64_t cols, int64_t srcStride,
              int64_t dstStride, std::string *err) override {
    std::vector<const void *> s(srcs, srcs + p);
    for (const void *x : s)
      if (!isDevice(x))
        return fail("reduce reads outside device memory", err);
    Queue.push_back([=] {
      int64_t es = dtypeSize(dtype);
      std::vector<const void *> row(s.size());
      for (int64_t r = 0; r < rows; ++r) {
        for (size_t j = 0; j < s.size(); ++j)
          row[j] = static_cast<const char *>(s[j]) + r * srcStride * es;
        reduceElements(dtype, op, static_cast<char *>(out) + r * dstStride * es,
                       row.data(), int(row.size()), cols);
      }
    });
    return true;
  }
  bool sync(std::string *err) override {
    for (auto &f : Queue)
      f();
    Queue.clear();
    return true;
  }
  void *scratch(int64_t bytes, std::string *err) override {
    if (bytes > ScratchBytes) {
      if (Scratch)
        memory().release(Scratch);
      Scratch = memory().alloc(bytes);
      ScratchBytes = bytes;
    }
    return Scratch;
  }

private:
  bool fail(const char *what, std::string *err) {
    *err = what;
    return false;
  }
  std::vector<std::function<void()>> Queue;
  void *Scratch = nullptr;
  int64_t ScratchBytes = 0;
};

/// A device buffer of `n` elements of dtype (freed with the object).
struct DevBuf {
  void *p;
  int64_t bytes;
  DevBuf(int32_t dtype, int64_t n)
      : p(memory().alloc(n * dtypeSize(dtype))), bytes(n * dtypeSize(dtype)) {}
  ~DevBuf() { memory().release(p); }
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
};

LaunchOptions deviceLaunch(double timeout = 30) {
  LaunchOptions o = quietLaunch(timeout);
  o.wrapComm = singleDeviceComms(
      [](int, std::string *) { return std::make_unique<HostOps>(); });
  return o;
}

/// Deterministic test values for (rank, element) that are not exact sums
/// in f32/f16 (so the reduction order matters to the bits).
double value(int32_t dtype, int64_t rank, int64_t i) {
  if (dtype == LOOM_RT_I8 || dtype == LOOM_RT_U8)
    return double((rank * 37 + i * 11) % 100);
  if (dtype == LOOM_RT_I32 || dtype == LOOM_RT_I64)
    return double((rank * 7919 + i * 104729) % 100003) - 50000;
  return std::sin(double(rank * 131 + i) * 0.7311) * 3.1 + 0.1 * rank;
}

using Collective =
    std::function<void(loom_rt_ctx *, const void *in, void *out)>;

/// Runs `call` on `n` ranks twice, on device buffers through the
/// single-device communicator (or `launch`'s) and on host buffers through the
/// threads backend, and expects the same output bytes on every rank.
/// Where the device side of a comparison keeps its buffers: HostOps's
/// registered host memory, or a real device (the OnDevice tests).
struct TestMemory {
  std::function<void *(int64_t bytes)> alloc;
  std::function<void(void *)> release;
  std::function<void(void *dev, const void *host, int64_t bytes)> put;
  std::function<void(void *host, const void *dev, int64_t bytes)> get;
};

TestMemory hostMemory() {
  return {
      [](int64_t bytes) { return memory().alloc(bytes); },
      [](void *p) { memory().release(p); },
      [](void *d, const void *h, int64_t n) { std::memcpy(d, h, size_t(n)); },
      [](void *h, const void *d, int64_t n) { std::memcpy(h, d, size_t(n)); }};
}

void expectSameAsThreads(int n, int32_t dtype, int64_t inCount,
                         int64_t outCount, const Collective &call,
                         bool inPlace = false,
                         LaunchOptions launch = deviceLaunch(),
                         const TestMemory &mem = hostMemory(),
                         std::vector<int64_t> mesh = {}) {
  if (mesh.empty())
    mesh = {n};
  int64_t es = dtypeSize(dtype);
  int64_t inBytes = std::max(inCount, outCount) * es, outBytes = outCount * es;
  std::vector<std::vector<char>> host(static_cast<size_t>(n)),
      dev(static_cast<size_t>(n));
  auto fill = [&](int64_t rank) {
    std::vector<char> buf(static_cast<size_t>(inBytes));
    for (int64_t i = 0; i < inCount; ++i)
      loom::rt::test::store(dtype, buf.data(), i, value(dtype, rank, i));
    return buf;
  };
  auto threads = [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    std::vector<char> in = fill(r);
    std::vector<char> out(static_cast<size_t>(outBytes));
    call(ctx, in.data(), inPlace ? in.data() : out.data());
    host[size_t(r)] =
        inPlace ? std::vector<char>(in.begin(), in.begin() + outBytes) : out;
    return 0;
  };
  auto device = [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    void *in = mem.alloc(inBytes), *out = mem.alloc(outBytes);
    std::vector<char> init = fill(r);
    mem.put(in, init.data(), inBytes);
    call(ctx, in, inPlace ? in : out);
    dev[size_t(r)].resize(size_t(outBytes));
    mem.get(dev[size_t(r)].data(), inPlace ? in : out, outBytes);
    mem.release(in);
    mem.release(out);
    return 0;
  };
  LaunchResult a, b;
  ASSERT_EQ(runThreads(n, mesh, threads, quietLaunch(30), &a), 0) << joined(a);
  ASSERT_EQ(runThreads(n, mesh, device, launch, &b), 0) << joined(b);
  for (int r = 0; r < n; ++r)
    EXPECT_TRUE(host[size_t(r)] == dev[size_t(r)])
        << "rank " << r << " of " << n << ", " << dtypeName(dtype);
}

} // namespace

// Sums in f32 over sizes on both sides of the threads backend's staging
// threshold, in and out of place: the same bits as the threads backend
// (each element reduced once, members in order).
TEST(SingleDevice, AllReduceSameBitsAsThreads) {
  for (int n : {2, 3, 4})
    for (int64_t count :
         {int64_t(1), int64_t(17), int64_t(5000), int64_t(70001)})
      for (bool inPlace : {false, true})
        expectSameAsThreads(
            n, LOOM_RT_F32, count, count,
            [count](loom_rt_ctx *ctx, const void *in, void *out) {
              loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, in, out, count,
                                 LOOM_RT_ALL_AXES);
            },
            inPlace);
}

// Every dtype and reduction of the ABI.
TEST(SingleDevice, AllReduceDtypesAndOps) {
  for (int32_t dt = 0; dt < LOOM_RT_NUM_DTYPES; ++dt)
    for (int32_t op = 0; op < LOOM_RT_NUM_REDUCE_OPS; ++op)
      expectSameAsThreads(
          3, dt, 333, 333,
          [dt, op](loom_rt_ctx *ctx, const void *in, void *out) {
            loom_rt_all_reduce(ctx, dt, op, in, out, 333, LOOM_RT_ALL_AXES);
          });
}

TEST(SingleDevice, AllGatherReduceScatterAllToAll) {
  for (int n : {1, 2, 3}) {
    for (int64_t outer : {int64_t(1), int64_t(5)}) {
      int64_t inner = 7;
      expectSameAsThreads(n, LOOM_RT_F16, outer * inner, outer * n * inner,
                          [=](loom_rt_ctx *ctx, const void *in, void *out) {
                            loom_rt_all_gather(ctx, LOOM_RT_F16, in, out, outer,
                                               inner, LOOM_RT_ALL_AXES);
                          });
      expectSameAsThreads(n, LOOM_RT_BF16, outer * n * inner, outer * inner,
                          [=](loom_rt_ctx *ctx, const void *in, void *out) {
                            loom_rt_reduce_scatter(ctx, LOOM_RT_BF16,
                                                   LOOM_RT_SUM, in, out, outer,
                                                   inner, LOOM_RT_ALL_AXES);
                          });
    }
    expectSameAsThreads(n, LOOM_RT_I32, 4 * n, 4 * n,
                        [](loom_rt_ctx *ctx, const void *in, void *out) {
                          loom_rt_all_to_all(ctx, LOOM_RT_I32, in, out, 4,
                                             LOOM_RT_ALL_AXES);
                        });
  }
}

// Groups of a 2x2 mesh: along each axis.
TEST(SingleDevice, SubGroupsOfAMesh) {
  auto body = [](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    DevBuf x(LOOM_RT_I64, 4);
    for (int mask : {1, 2}) {
      auto *v = static_cast<int64_t *>(x.p);
      for (int i = 0; i < 4; ++i)
        v[i] = r * 10 + i;
      loom_rt_all_reduce(ctx, LOOM_RT_I64, LOOM_RT_SUM, x.p, x.p, 4,
                         uint64_t(mask));
      // Members of axis 0 differ by 2 in rank, of axis 1 by 1.
      int64_t peer = mask == 1 ? (r ^ 2) : (r ^ 1);
      for (int i = 0; i < 4; ++i)
        if (v[i] != r * 10 + peer * 10 + 2 * i)
          return 1;
    }
    return 0;
  };
  LaunchResult res;
  EXPECT_EQ(runThreads(4, {2, 2}, body, deviceLaunch(), &res), 0)
      << joined(res);
}

TEST(SingleDevice, SendRecvAndRing) {
  auto body = [](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx), n = loom_rt_world_size(ctx);
    DevBuf a(LOOM_RT_F32, 64), b(LOOM_RT_F32, 64);
    auto *x = static_cast<float *>(a.p);
    auto *y = static_cast<float *>(b.p);
    for (int i = 0; i < 64; ++i)
      x[i] = float(r * 100 + i);
    // A ring: every rank sends right and receives from the left at once.
    loom_rt_sendrecv(ctx, LOOM_RT_F32, a.p, 64, (r + 1) % n, b.p, 64,
                     (r + n - 1) % n, 3);
    for (int i = 0; i < 64; ++i)
      if (y[i] != float(((r + n - 1) % n) * 100 + i))
        return 1;
    // Blocking send/recv: 0 -> 1.
    if (r == 0)
      loom_rt_send(ctx, LOOM_RT_F32, a.p, 64, 1, 9);
    if (r == 1) {
      loom_rt_recv(ctx, LOOM_RT_F32, b.p, 64, 0, 9);
      for (int i = 0; i < 64; ++i)
        if (y[i] != float(i))
          return 2;
    }
    loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    return 0;
  };
  LaunchResult res;
  EXPECT_EQ(runThreads(3, {3}, body, deviceLaunch(), &res), 0) << joined(res);
}

// Host buffers go to the threads backend (the executor's own collectives,
// e.g. the sampled token); a call mixing the two is refused by name.
TEST(SingleDevice, HostBuffersAndMixedBuffers) {
  auto host = [](loom_rt_ctx *ctx) {
    float x = float(loom_rt_rank(ctx) + 1);
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, &x, &x, 1,
                       LOOM_RT_ALL_AXES);
    return x == 3.0f ? 0 : 1;
  };
  LaunchResult res;
  EXPECT_EQ(runThreads(2, {2}, host, deviceLaunch(), &res), 0) << joined(res);

  auto mixed = [](loom_rt_ctx *ctx) {
    DevBuf d(LOOM_RT_F32, 4);
    float h[4] = {0, 0, 0, 0};
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, h, d.p, 4,
                       LOOM_RT_ALL_AXES);
    return 0;
  };
  EXPECT_NE(runThreads(2, {2}, mixed, deviceLaunch(), &res), 0);
  EXPECT_TRUE(anyContains(res, "partly device and partly host memory"))
      << joined(res);
}

// Sizes that differ between ranks fail every rank, both sides named.
TEST(SingleDevice, MismatchFailsEveryRankNamingBothSides) {
  auto body = [](loom_rt_ctx *ctx) {
    int64_t n = 1000 + loom_rt_rank(ctx);
    DevBuf x(LOOM_RT_F32, n);
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, x.p, x.p, n,
                       LOOM_RT_ALL_AXES);
    return 0;
  };
  LaunchResult res;
  EXPECT_NE(runThreads(2, {2}, body, deviceLaunch(), &res), 0);
  ASSERT_EQ(res.messages.size(), 2u) << joined(res);
  std::string all = joined(res);
  EXPECT_NE(all.find("this rank called all_reduce(dtype=f32, op=sum, "
                     "count=1000) but rank 1 called all_reduce(dtype=f32, "
                     "op=sum, count=1001)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("this rank called all_reduce(dtype=f32, op=sum, "
                     "count=1001) but rank 0 called all_reduce(dtype=f32, "
                     "op=sum, count=1000)"),
            std::string::npos)
      << all;

  auto recvSize = [](loom_rt_ctx *ctx) {
    DevBuf x(LOOM_RT_F32, 16);
    if (loom_rt_rank(ctx) == 0)
      loom_rt_send(ctx, LOOM_RT_F32, x.p, 8, 1, 0);
    else
      loom_rt_recv(ctx, LOOM_RT_F32, x.p, 16, 0, 0);
    return 0;
  };
  EXPECT_NE(runThreads(2, {2}, recvSize, deviceLaunch(), &res), 0);
  EXPECT_TRUE(anyContains(res, "size mismatch: rank 0 sent 32 bytes, "
                               "expected 64"))
      << joined(res);
}

// A rank that dies (returns an error, or aborts) while the others wait in
// device collectives: every rank stops, well before the timeout.
TEST(SingleDevice, ARankThatDiesStopsEveryRank) {
  for (int how : {0, 1}) {
    auto body = [how](loom_rt_ctx *ctx) {
      DevBuf x(LOOM_RT_F32, 4096);
      if (loom_rt_rank(ctx) == 2) {
        if (how == 0)
          return 7;
        loom_rt_abort(ctx, "rank 2 gives up");
      }
      for (int i = 0; i < 3; ++i)
        loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, x.p, x.p, 4096,
                           LOOM_RT_ALL_AXES);
      return 0;
    };
    LaunchResult res;
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_NE(runThreads(3, {3}, body, deviceLaunch(60), &res), 0);
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_LT(s, 10.0);
    EXPECT_EQ(res.messages.size(), 3u) << joined(res);
    EXPECT_TRUE(anyContains(res, "stopped because another rank failed"))
        << joined(res);
  }
}

TEST(SingleDevice, NonBlockingDeviceTransfersAreRefused) {
  auto body = [](loom_rt_ctx *ctx) {
    DevBuf x(LOOM_RT_F32, 4);
    P2PRequest req;
    if (loom_rt_rank(ctx) == 0)
      isend(ctx, LOOM_RT_F32, x.p, 4, 1, 0, req);
    else
      irecv(ctx, LOOM_RT_F32, x.p, 4, 0, 0, req);
    wait(ctx, req);
    return 0;
  };
  LaunchResult res;
  EXPECT_NE(runThreads(2, {2}, body, deviceLaunch(5), &res), 0);
  // Whichever rank gets there first names its half.
  EXPECT_TRUE(anyContains(res, "not supported by the cuda backend"))
      << joined(res);
}

// Without a device the job fails before any rank starts, with the reason.
TEST(SingleDevice, NoDeviceIsAOneLineError) {
  setenv("LOOM_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  LaunchResult res;
  int ran = 0;
  int rc = runSingleDevice(
      2, {2}, 0, [&](loom_rt_ctx *) { return ++ran, 0; }, quietLaunch(5), &res);
  unsetenv("LOOM_CUDA_DRIVER");
  EXPECT_NE(rc, 0);
  EXPECT_EQ(ran, 0);
  EXPECT_TRUE(anyContains(res, "no CUDA device")) << joined(res);
}

// The reduction kernel of every dtype and op assembles for sm_80 and sm_90
// (ptxas from the toolkit; skipped without it). Not run on a GPU here.
TEST(SingleDevice, ReductionKernelPtxAssembles) {
  std::string ptxas;
  for (std::string dir :
       {std::string(std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME")
                                             : "/usr/local/cuda") +
            "/bin",
        std::string("/usr/local/cuda/bin")})
    if (access((dir + "/ptxas").c_str(), X_OK) == 0) {
      ptxas = dir + "/ptxas";
      break;
    }
  if (ptxas.empty())
    GTEST_SKIP() << "no ptxas (CUDA toolkit)";
  std::string dir = ::testing::TempDir();
  for (int32_t dt = 0; dt < LOOM_RT_NUM_DTYPES; ++dt)
    for (int32_t op = 0; op < LOOM_RT_NUM_REDUCE_OPS; ++op) {
      std::string ptx = reduceKernelPtx(dt, op);
      std::string path = dir + "/loom_reduce_" + std::to_string(dt) + "_" +
                         std::to_string(op) + ".ptx";
      std::ofstream(path) << ptx;
      for (const char *chip : {"sm_80", "sm_90"}) {
        std::string cmd =
            ptxas + " -arch=" + chip + " " + path + " -o /dev/null 2>&1";
        EXPECT_EQ(std::system(cmd.c_str()), 0)
            << dtypeName(dt) << " " << reduceOpName(op) << " " << chip << "\n"
            << ptx;
      }
    }
}

//===----------------------------------------------------------------------===//
// The NCCL communicator over an emulated NCCL
//===----------------------------------------------------------------------===//

namespace {

/// Ids made and joins by the emulated NCCL: id -> the members that joined
/// with it (each group's members must all have its leader's id).
std::mutex ncclIdsMu;
std::map<std::string, std::vector<int64_t>> ncclIds;

/// NCCL's collectives with NCCL's shapes, emulated on the threads backend
/// (the rank's host communicator) over the group of `mask` (the world, or
/// the group a join made); the queued device work is flushed first, as a
/// stream would order it.
class EmulatedNccl final : public NcclOps {
public:
  EmulatedNccl(Comm *threads, DeviceOps *ops, uint64_t mask = LOOM_RT_ALL_AXES)
      : T(threads), Ops(ops), Mask(mask) {}
  bool allReduce(loom_rt_ctx &ctx, int32_t dtype, int32_t op, const void *in,
                 void *out, int64_t count, std::string *err) override {
    Ops->sync(err);
    T->allReduce(ctx, world(ctx), dtype, op, in, out, count);
    return true;
  }
  bool allGather(loom_rt_ctx &ctx, int32_t dtype, const void *in, void *out,
                 int64_t count, std::string *err) override {
    Ops->sync(err);
    // [p][count]: outer 1.
    T->allGather(ctx, world(ctx), dtype, in, out, 1, count);
    return true;
  }
  bool reduceScatter(loom_rt_ctx &ctx, int32_t dtype, int32_t op,
                     const void *in, void *out, int64_t count,
                     std::string *err) override {
    Ops->sync(err);
    T->reduceScatter(ctx, world(ctx), dtype, op, in, out, 1, count);
    return true;
  }
  bool exchange(loom_rt_ctx &ctx, int32_t dtype,
                const std::vector<Transfer> &ts, std::string *err) override {
    Ops->sync(err);
    constexpr int64_t kTag = int64_t(1) << 40;
    // Peers are indices in the communicator's group.
    const std::vector<int64_t> &members = world(ctx).members;
    for (const Transfer &t : ts)
      if (t.send)
        T->send(ctx, dtype, t.buf, t.count, members[size_t(t.peer)], kTag);
    for (const Transfer &t : ts)
      if (!t.send)
        T->recv(ctx, dtype, t.buf, t.count, members[size_t(t.peer)], kTag);
    ++Exchanges;
    return true;
  }
  bool newId(uint8_t *id, std::string *) override {
    static std::atomic<int> next{0};
    std::snprintf(reinterpret_cast<char *>(id), LOOM_CUDA_NCCL_ID_BYTES,
                  "emulated-nccl-id-%d", next++);
    return true;
  }
  std::unique_ptr<NcclOps> join(loom_rt_ctx &ctx, const Group &g,
                                const uint8_t *id, std::string *) override {
    {
      std::lock_guard<std::mutex> lock(ncclIdsMu);
      ncclIds[reinterpret_cast<const char *>(id)].push_back(ctx.rank);
    }
    return std::make_unique<EmulatedNccl>(T, Ops, g.mask);
  }
  int Exchanges = 0;

private:
  /// The communicator's group.
  Group &world(loom_rt_ctx &ctx) { return getGroup(ctx, Mask); }
  Comm *T;
  DeviceOps *Ops;
  uint64_t Mask;
};

LaunchOptions ncclLaunch(double timeout = 30) {
  LaunchOptions o = quietLaunch(timeout);
  o.wrapComm = [](int, std::unique_ptr<Comm> host,
                  std::string *) -> std::unique_ptr<Comm> {
    auto ops = std::make_unique<HostOps>();
    auto nccl = std::make_unique<EmulatedNccl>(host.get(), ops.get());
    return std::make_unique<NcclComm>(std::move(host), std::move(ops),
                                      std::move(nccl));
  };
  return o;
}

} // namespace

// NCCL's [p][count] shapes against abi.h's [outer][p][inner]: the same
// results as the threads backend for outer 1 and outer > 1.
TEST(Nccl, CollectivesSameAsThreads) {
  for (int n : {1, 2, 3}) {
    for (int64_t outer : {int64_t(1), int64_t(4)}) {
      int64_t inner = 5;
      expectSameAsThreads(
          n, LOOM_RT_F32, outer * inner, outer * n * inner,
          [=](loom_rt_ctx *ctx, const void *in, void *out) {
            loom_rt_all_gather(ctx, LOOM_RT_F32, in, out, outer, inner,
                               LOOM_RT_ALL_AXES);
          },
          false, ncclLaunch());
      expectSameAsThreads(
          n, LOOM_RT_F16, outer * n * inner, outer * inner,
          [=](loom_rt_ctx *ctx, const void *in, void *out) {
            loom_rt_reduce_scatter(ctx, LOOM_RT_F16, LOOM_RT_MAX, in, out,
                                   outer, inner, LOOM_RT_ALL_AXES);
          },
          false, ncclLaunch());
    }
    for (bool inPlace : {false, true})
      expectSameAsThreads(
          n, LOOM_RT_BF16, 100, 100,
          [](loom_rt_ctx *ctx, const void *in, void *out) {
            loom_rt_all_reduce(ctx, LOOM_RT_BF16, LOOM_RT_SUM, in, out, 100,
                               LOOM_RT_ALL_AXES);
          },
          inPlace, ncclLaunch());
    expectSameAsThreads(
        n, LOOM_RT_I64, 3 * n, 3 * n,
        [](loom_rt_ctx *ctx, const void *in, void *out) {
          loom_rt_all_to_all(ctx, LOOM_RT_I64, in, out, 3, LOOM_RT_ALL_AXES);
        },
        false, ncclLaunch());
  }
}

TEST(Nccl, SendRecvMismatchAndSubGroups) {
  auto ring = [](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx), n = loom_rt_world_size(ctx);
    DevBuf a(LOOM_RT_I32, 8), b(LOOM_RT_I32, 8);
    auto *x = static_cast<int32_t *>(a.p);
    for (int i = 0; i < 8; ++i)
      x[i] = int32_t(r * 10 + i);
    loom_rt_sendrecv(ctx, LOOM_RT_I32, a.p, 8, (r + 1) % n, b.p, 8,
                     (r + n - 1) % n, 0);
    auto *y = static_cast<int32_t *>(b.p);
    for (int i = 0; i < 8; ++i)
      if (y[i] != int32_t(((r + n - 1) % n) * 10 + i))
        return 1;
    if (r == 0)
      loom_rt_send(ctx, LOOM_RT_I32, a.p, 8, 1, 4);
    if (r == 1)
      loom_rt_recv(ctx, LOOM_RT_I32, b.p, 8, 0, 4);
    return r == 1 && y[7] != 7 ? 2 : 0;
  };
  LaunchResult res;
  EXPECT_EQ(runThreads(3, {3}, ring, ncclLaunch(), &res), 0) << joined(res);

  auto mismatch = [](loom_rt_ctx *ctx) {
    int64_t n = 8 << loom_rt_rank(ctx);
    DevBuf x(LOOM_RT_F32, n);
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, x.p, x.p, n,
                       LOOM_RT_ALL_AXES);
    return 0;
  };
  EXPECT_NE(runThreads(2, {2}, mismatch, ncclLaunch(), &res), 0);
  EXPECT_EQ(res.messages.size(), 2u) << joined(res);
  EXPECT_TRUE(anyContains(res, "this rank called all_reduce(dtype=f32, "
                               "op=sum, count=8) but rank 1 called "
                               "all_reduce(dtype=f32, op=sum, count=16)"))
      << joined(res);

  // Groups of a 2-D mesh must agree within the group only.
  auto sub = [](loom_rt_ctx *ctx) {
    int64_t n = 4 << (loom_rt_rank(ctx) / 2); // differs within {0, 2}
    DevBuf x(LOOM_RT_F32, n);
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, x.p, x.p, n, 1);
    return 0;
  };
  EXPECT_NE(runThreads(4, {2, 2}, sub, ncclLaunch(), &res), 0);
  EXPECT_TRUE(anyContains(res, "count=4) but rank")) << joined(res);
}

// The groups of a mesh axis (dp x tp): one NCCL communicator per group,
// made at its first collective from its first member's id; the same
// results as the threads backend on every axis and for the whole mesh.
TEST(Nccl, SubCommunicatorsPerMeshAxis) {
  {
    std::lock_guard<std::mutex> lock(ncclIdsMu);
    ncclIds.clear();
  }
  for (std::vector<int64_t> mesh :
       {std::vector<int64_t>{2, 2}, std::vector<int64_t>{2, 3},
        std::vector<int64_t>{3, 2}}) {
    int n = int(mesh[0] * mesh[1]);
    for (uint32_t axes : {1u, 2u, 3u}) {
      int64_t p = (axes & 1 ? mesh[0] : 1) * (axes & 2 ? mesh[1] : 1);
      expectSameAsThreads(
          n, LOOM_RT_F32, 12, 12,
          [=](loom_rt_ctx *ctx, const void *in, void *out) {
            loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, in, out, 12,
                               axes);
            // Twice: the second call reuses the group's communicator.
            loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_MAX, out, out, 12,
                               axes);
          },
          false, ncclLaunch(), hostMemory(), mesh);
      expectSameAsThreads(
          n, LOOM_RT_F32, 2 * 3, 2 * p * 3,
          [=](loom_rt_ctx *ctx, const void *in, void *out) {
            loom_rt_all_gather(ctx, LOOM_RT_F32, in, out, 2, 3, axes);
          },
          false, ncclLaunch(), hostMemory(), mesh);
      expectSameAsThreads(
          n, LOOM_RT_F32, 2 * p * 3, 2 * 3,
          [=](loom_rt_ctx *ctx, const void *in, void *out) {
            loom_rt_reduce_scatter(ctx, LOOM_RT_F32, LOOM_RT_SUM, in, out, 2, 3,
                                   axes);
          },
          false, ncclLaunch(), hostMemory(), mesh);
      expectSameAsThreads(
          n, LOOM_RT_I64, 2 * p, 2 * p,
          [=](loom_rt_ctx *ctx, const void *in, void *out) {
            loom_rt_all_to_all(ctx, LOOM_RT_I64, in, out, 2, axes);
          },
          false, ncclLaunch(), hostMemory(), mesh);
    }
  }
  // Every id was joined by exactly one group's members: 2 + 2 groups of
  // 2 ranks on {2, 2} per run, 3 + 2 on {2, 3}, 2 + 3 on {3, 2}.
  std::lock_guard<std::mutex> lock(ncclIdsMu);
  EXPECT_EQ(ncclIds.size(), size_t(4 * (4 + 5 + 5)));
  for (const auto &[id, members] : ncclIds)
    EXPECT_TRUE(members.size() == 2 || members.size() == 3)
        << id << ": " << members.size() << " members";
}

TEST(Nccl, DeviceForRank) {
  std::string err;
  EXPECT_EQ(deviceForRank({}, 3, 4, &err), 3);
  EXPECT_EQ(deviceForRank({2, 5}, 1, 2, &err), 5);
  EXPECT_EQ(deviceForRank({2}, 0, 2, &err), -1);
  EXPECT_NE(err.find("2 ranks run on this host but --devices names 1 "
                     "device(s)"),
            std::string::npos)
      << err;
}

//===----------------------------------------------------------------------===//
// On a GPU (skipped without one): the real device operations
//===----------------------------------------------------------------------===//

namespace {

/// Device 0 opened once per thread (every rank's thread and the test's).
loom_cuda_device *threadDevice() {
  thread_local loom_cuda_device *dev = nullptr;
  if (!dev && loom_cuda_open(0, &dev))
    ADD_FAILURE() << loom_cuda_last_error();
  return dev;
}

TestMemory cudaMemory() {
  return {
      [](int64_t bytes) {
        loom_cuda_ptr p = 0;
        if (loom_cuda_malloc(threadDevice(), std::max<int64_t>(bytes, 1), &p))
          ADD_FAILURE() << loom_cuda_last_error();
        return reinterpret_cast<void *>(p);
      },
      [](void *p) {
        loom_cuda_free(threadDevice(), reinterpret_cast<uintptr_t>(p));
      },
      [](void *d, const void *h, int64_t n) {
        if (loom_cuda_copy_to_device(
                threadDevice(), reinterpret_cast<uintptr_t>(d), h, n, nullptr))
          ADD_FAILURE() << loom_cuda_last_error();
      },
      [](void *h, const void *d, int64_t n) {
        if (loom_cuda_copy_to_host(threadDevice(), h,
                                   reinterpret_cast<uintptr_t>(d), n, nullptr))
          ADD_FAILURE() << loom_cuda_last_error();
      }};
}

LaunchOptions onDeviceLaunch() {
  LaunchOptions o = quietLaunch(60);
  o.wrapComm = singleDeviceComms(0);
  return o;
}

#define LOOM_NEED_GPU()                                                        \
  do {                                                                         \
    int32_t count = 0;                                                         \
    if (loom_cuda_device_count(&count) || count == 0)                          \
      GTEST_SKIP() << "no GPU: " << loom_cuda_last_error();                    \
  } while (0)

} // namespace

// The generated reduction kernel, the copies and the pointer
// classification on a GPU: the threads backend's bytes for every dtype x op
// on 2 and 3 ranks sharing device 0 (scripts/gpu-check.sh step
// device-comm).
TEST(OnDevice, AllReduceEveryDtypeAndOp) {
  LOOM_NEED_GPU();
  for (int n : {2, 3})
    for (int64_t count : {int64_t(1000), int64_t(70001)})
      for (int32_t dt = 0; dt < LOOM_RT_NUM_DTYPES; ++dt)
        for (int32_t op = 0; op < LOOM_RT_NUM_REDUCE_OPS; ++op)
          expectSameAsThreads(
              n, dt, count, count,
              [=](loom_rt_ctx *ctx, const void *in, void *out) {
                loom_rt_all_reduce(ctx, dt, op, in, out, count,
                                   LOOM_RT_ALL_AXES);
              },
              op == LOOM_RT_SUM, onDeviceLaunch(), cudaMemory());
}

TEST(OnDevice, GatherScatterAllToAllSendRecv) {
  LOOM_NEED_GPU();
  for (int n : {2, 3}) {
    int64_t outer = 6, inner = 33;
    expectSameAsThreads(
        n, LOOM_RT_F16, outer * inner, outer * n * inner,
        [=](loom_rt_ctx *ctx, const void *in, void *out) {
          loom_rt_all_gather(ctx, LOOM_RT_F16, in, out, outer, inner,
                             LOOM_RT_ALL_AXES);
        },
        false, onDeviceLaunch(), cudaMemory());
    expectSameAsThreads(
        n, LOOM_RT_BF16, outer * n * inner, outer * inner,
        [=](loom_rt_ctx *ctx, const void *in, void *out) {
          loom_rt_reduce_scatter(ctx, LOOM_RT_BF16, LOOM_RT_SUM, in, out, outer,
                                 inner, LOOM_RT_ALL_AXES);
        },
        false, onDeviceLaunch(), cudaMemory());
    expectSameAsThreads(
        n, LOOM_RT_F32, 5 * n, 5 * n,
        [](loom_rt_ctx *ctx, const void *in, void *out) {
          loom_rt_all_to_all(ctx, LOOM_RT_F32, in, out, 5, LOOM_RT_ALL_AXES);
        },
        false, onDeviceLaunch(), cudaMemory());
    expectSameAsThreads(
        n, LOOM_RT_F32, 64, 64,
        [](loom_rt_ctx *ctx, const void *in, void *out) {
          int64_t r = loom_rt_rank(ctx), p = loom_rt_world_size(ctx);
          loom_rt_sendrecv(ctx, LOOM_RT_F32, in, 64, (r + 1) % p, out, 64,
                           (r + p - 1) % p, 1);
        },
        false, onDeviceLaunch(), cudaMemory());
  }
}

// cuPointerGetAttribute tells device from host memory: a call mixing them
// is refused, host buffers still reduce.
TEST(OnDevice, MixedBuffersRefused) {
  LOOM_NEED_GPU();
  TestMemory mem = cudaMemory();
  auto body = [&](loom_rt_ctx *ctx) {
    void *d = mem.alloc(16);
    float h[4] = {1, 2, 3, 4};
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, h, h, 4,
                       LOOM_RT_ALL_AXES);
    if (h[0] != 2.0f)
      return 1;
    loom_rt_all_reduce(ctx, LOOM_RT_F32, LOOM_RT_SUM, h, d, 4,
                       LOOM_RT_ALL_AXES);
    return 0;
  };
  LaunchResult res;
  EXPECT_NE(runThreads(2, {2}, body, onDeviceLaunch(), &res), 0);
  EXPECT_TRUE(anyContains(res, "partly device and partly host memory"))
      << joined(res);
}

// A rank that dies: the others stop in the host check before any NCCL call
// (under mpirun the host communicator is MPI, whose failure aborts the job).
TEST(Nccl, ARankThatDiesStopsEveryRank) {
  auto body = [](loom_rt_ctx *ctx) {
    DevBuf x(LOOM_RT_F32, 16), y(LOOM_RT_F32, 48);
    if (loom_rt_rank(ctx) == 1)
      loom_rt_abort(ctx, "rank 1 gives up");
    loom_rt_all_gather(ctx, LOOM_RT_F32, x.p, y.p, 1, 16, LOOM_RT_ALL_AXES);
    return 0;
  };
  LaunchResult res;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(runThreads(3, {3}, body, ncclLaunch(60), &res), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count(),
            10.0);
  EXPECT_EQ(res.messages.size(), 3u) << joined(res);
  EXPECT_TRUE(anyContains(res, "rank 1 gives up")) << joined(res);
}
