//===- runtime/MpiComm.cpp - OpenMPI communicator ---------------*- C++ -*-===//
//
// The `mpi` communicator: one process per rank (global rank == rank in
// MPI_COMM_WORLD). Built only with LOOM_ENABLE_MPI.
//
//  - Groups: MPI_Comm_create_group over the group's members, created at the
//    group's first use and cached per mask. Unlike MPI_Comm_split it is
//    collective over the group only, so ranks of different pipeline stages
//    may create their groups at different times without deadlock.
//  - dtype mapping: f16/bf16 travel as MPI_UINT16_T; their reductions are
//    done by widening to f32, reducing f32 in MPI, and rounding once.
//  - Errors: communicators use MPI_ERRORS_RETURN; an error code fails the job.
//  - Timeout: a watchdog thread watches the call in flight; past the timeout
//    it prints the rank, the call and the reason and MPI_Abort()s the job.
//  - Every failure prints "loom-rt: rank R: <call> failed: <why>" and calls
//    MPI_Abort(MPI_COMM_WORLD, 1): mpirun then takes every rank down and
//    exits non-zero. A rank killed from outside makes mpirun kill the job;
//    our SIGTERM handler names the call each surviving rank was in.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "DType.h"
#include "ThreadPool.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <unistd.h>

namespace loom::rt {
namespace {

MPI_Datatype mpiType(int32_t dtype) {
  switch (dtype) {
  case LOOM_RT_F32:
    return MPI_FLOAT;
  case LOOM_RT_F64:
    return MPI_DOUBLE;
  case LOOM_RT_F16:
  case LOOM_RT_BF16:
    return MPI_UINT16_T;
  case LOOM_RT_I8:
    return MPI_INT8_T;
  case LOOM_RT_I32:
    return MPI_INT32_T;
  case LOOM_RT_I64:
    return MPI_INT64_T;
  case LOOM_RT_U8:
    return MPI_UINT8_T;
  default:
    return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpiOp(int32_t op) {
  switch (op) {
  case LOOM_RT_SUM:
    return MPI_SUM;
  case LOOM_RT_PROD:
    return MPI_PROD;
  case LOOM_RT_MAX:
    return MPI_MAX;
  case LOOM_RT_MIN:
    return MPI_MIN;
  default:
    return MPI_OP_NULL;
  }
}

bool isHalf(int32_t dtype) {
  return dtype == LOOM_RT_F16 || dtype == LOOM_RT_BF16;
}

struct MpiGroupImpl final : GroupImpl {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;
  ~MpiGroupImpl() override {
    if (owned && comm != MPI_COMM_NULL) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Comm_free(&comm);
    }
  }
};

// For the SIGTERM handler (async-signal-safe reads only).
char SigPrefix[96];
std::atomic<const char *> SigCurrentOp{nullptr};

extern "C" void loomRtSigterm(int) {
  const char *op = SigCurrentOp.load(std::memory_order_relaxed);
  (void)!write(2, SigPrefix, std::strlen(SigPrefix));
  const char *mid = op ? " while in " : " (not in a runtime call)";
  (void)!write(2, mid, std::strlen(mid));
  if (op)
    (void)!write(2, op, std::strlen(op));
  const char *tail = "; another rank died or the job was aborted\n";
  (void)!write(2, tail, std::strlen(tail));
  _exit(1);
}

bool checkCollectivesFromEnv() {
  const char *v = std::getenv("LOOM_CHECK_COLLECTIVES");
  return v && *v && std::strcmp(v, "0") != 0;
}

class MpiComm final : public Comm {
public:
  explicit MpiComm(loom_rt_ctx &ctx) : Ctx(ctx) {
    MPI_Comm_dup(MPI_COMM_WORLD, &World);
    MPI_Comm_set_errhandler(World, MPI_ERRORS_RETURN);
    Watchdog = std::thread([this] { watch(); });
  }
  ~MpiComm() override { shutdown(); }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(Mu);
      if (Stop)
        return;
      Stop = true;
    }
    Cv.notify_all();
    if (Watchdog.joinable())
      Watchdog.join();
    Ctx.groups.clear();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && World != MPI_COMM_NULL)
      MPI_Comm_free(&World);
  }

  const char *name() const override { return "mpi"; }

  std::unique_ptr<GroupImpl> createGroup(loom_rt_ctx &ctx,
                                         const Group &group) override {
    auto impl = std::make_unique<MpiGroupImpl>();
    if (group.size == ctx.worldSize) {
      impl->comm = World;
      return impl;
    }
    if (group.size == 1)
      return impl; // never touches MPI
    InFlight f(*this, ctx);
    MPI_Group worldGroup, sub;
    MPI_Comm_group(World, &worldGroup);
    std::vector<int> ranks(group.members.begin(), group.members.end());
    MPI_Group_incl(worldGroup, int(ranks.size()), ranks.data(), &sub);
    check(ctx,
          MPI_Comm_create_group(World, sub, int(group.mask & 0x7fff),
                                &impl->comm),
          "MPI_Comm_create_group");
    MPI_Group_free(&sub);
    MPI_Group_free(&worldGroup);
    MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN);
    impl->owned = true;
    return impl;
  }

  void allReduce(loom_rt_ctx &ctx, Group &g, int32_t dtype, int32_t op,
                 const void *in, void *out, int64_t count) override {
    int64_t es = dtypeSize(dtype);
    if (g.size == 1 || (count == 0 && !CheckCollectives)) {
      if (in != out && count)
        std::memcpy(out, in, size_t(count * es));
      return;
    }
    InFlight f(*this, ctx);
    meet(ctx, g, {kAllReduce, dtype, op, count, -1});
    if (count == 0)
      return;
    MPI_Comm comm = commOf(g);
    if (isHalf(dtype)) {
      float *tmp = scratchFloats(ctx, count);
      widenToF32(dtype, in, tmp, count);
      allReduceChunked(ctx, comm, MPI_IN_PLACE, tmp, count, MPI_FLOAT,
                       mpiOp(op), 4);
      narrowFromF32(dtype, tmp, out, count);
      return;
    }
    allReduceChunked(ctx, comm, in == out ? MPI_IN_PLACE : in, out, count,
                     mpiType(dtype), mpiOp(op), es);
  }

  void allGather(loom_rt_ctx &ctx, Group &g, int32_t dtype, const void *in,
                 void *out, int64_t outer, int64_t inner) override {
    int64_t es = dtypeSize(dtype);
    int64_t p = g.size;
    if (p == 1) {
      if (outer * inner != 0)
        std::memcpy(out, in, size_t(outer * inner * es));
      return;
    }
    InFlight f(*this, ctx);
    meet(ctx, g, {kAllGather, dtype, -1, outer, inner});
    checkInt(ctx, outer * inner * p);
    MPI_Datatype t = mpiType(dtype);
    if (outer == 1 || inner == 0) {
      check(ctx,
            MPI_Allgather(in, int(outer * inner), t, out, int(outer * inner), t,
                          commOf(g)),
            "MPI_Allgather");
      return;
    }
    MPI_Datatype vec, strided;
    MPI_Type_vector(int(outer), int(inner), int(p * inner), t, &vec);
    MPI_Type_create_resized(vec, 0, MPI_Aint(inner * es), &strided);
    MPI_Type_commit(&strided);
    int rc =
        MPI_Allgather(in, int(outer * inner), t, out, 1, strided, commOf(g));
    MPI_Type_free(&strided);
    MPI_Type_free(&vec);
    check(ctx, rc, "MPI_Allgather");
  }

  void reduceScatter(loom_rt_ctx &ctx, Group &g, int32_t dtype, int32_t op,
                     const void *in, void *out, int64_t outer,
                     int64_t inner) override {
    int64_t es = dtypeSize(dtype);
    int64_t p = g.size;
    int64_t n = outer * inner;
    if (p == 1) {
      if (n)
        std::memcpy(out, in, size_t(n * es));
      return;
    }
    InFlight f(*this, ctx);
    meet(ctx, g, {kReduceScatter, dtype, op, outer, inner});
    checkInt(ctx, n);
    bool half = isHalf(dtype);
    int64_t ces = half ? 4 : es; // element size of the reduced type
    MPI_Datatype t = half ? MPI_FLOAT : mpiType(dtype);
    const void *src = in;
    // Staging: [p][outer][inner] input (in the reduced type) + output.
    if (half || outer > 1) {
      char *stage = scratchBytes(ctx, (p + (half ? 1 : 0)) * n * ces);
      for (int64_t j = 0; j < p; ++j)
        for (int64_t o = 0; o < outer; ++o) {
          const char *s =
              static_cast<const char *>(in) + ((o * p + j) * inner) * es;
          char *d = stage + (j * n + o * inner) * ces;
          if (half)
            widenToF32(dtype, s, reinterpret_cast<float *>(d), inner);
          else
            std::memcpy(d, s, size_t(inner * es));
        }
      src = stage;
    }
    if (half) {
      char *stage = ctx.scratch.data();
      float *res = reinterpret_cast<float *>(stage + p * n * 4);
      check(ctx,
            MPI_Reduce_scatter_block(src, res, int(n), t, mpiOp(op), commOf(g)),
            "MPI_Reduce_scatter_block");
      narrowFromF32(dtype, res, out, n);
      return;
    }
    check(ctx,
          MPI_Reduce_scatter_block(src, out, int(n), t, mpiOp(op), commOf(g)),
          "MPI_Reduce_scatter_block");
  }

  void allToAll(loom_rt_ctx &ctx, Group &g, int32_t dtype, const void *in,
                void *out, int64_t block) override {
    int64_t es = dtypeSize(dtype);
    if (g.size == 1) {
      if (block)
        std::memcpy(out, in, size_t(block * es));
      return;
    }
    InFlight f(*this, ctx);
    meet(ctx, g, {kAllToAll, dtype, -1, block, -1});
    checkInt(ctx, block * g.size);
    MPI_Datatype t = mpiType(dtype);
    check(ctx, MPI_Alltoall(in, int(block), t, out, int(block), t, commOf(g)),
          "MPI_Alltoall");
  }

  void barrier(loom_rt_ctx &ctx, Group &g) override {
    if (g.size == 1)
      return;
    InFlight f(*this, ctx);
    meet(ctx, g, {kBarrier, -1, -1, -1, -1});
    check(ctx, MPI_Barrier(commOf(g)), "MPI_Barrier");
  }

  void send(loom_rt_ctx &ctx, int32_t dtype, const void *buf, int64_t count,
            int64_t dst, int64_t tag) override {
    InFlight f(*this, ctx);
    checkInt(ctx, count);
    check(ctx,
          MPI_Send(buf, int(count), mpiType(dtype), int(dst), int(tag), World),
          "MPI_Send");
  }

  void recv(loom_rt_ctx &ctx, int32_t dtype, void *buf, int64_t count,
            int64_t src, int64_t tag) override {
    InFlight f(*this, ctx);
    checkInt(ctx, count);
    MPI_Status st;
    check(ctx,
          MPI_Recv(buf, int(count), mpiType(dtype), int(src), int(tag), World,
                   &st),
          "MPI_Recv");
    checkReceived(ctx, st, dtype, count, src);
  }

  void sendRecv(loom_rt_ctx &ctx, int32_t dtype, const void *sendBuf,
                int64_t sendCount, int64_t dst, void *recvBuf,
                int64_t recvCount, int64_t src, int64_t tag) override {
    InFlight f(*this, ctx);
    checkInt(ctx, sendCount);
    checkInt(ctx, recvCount);
    MPI_Datatype t = mpiType(dtype);
    MPI_Status st;
    check(ctx,
          MPI_Sendrecv(sendBuf, int(sendCount), t, int(dst), int(tag), recvBuf,
                       int(recvCount), t, int(src), int(tag), World, &st),
          "MPI_Sendrecv");
    checkReceived(ctx, st, dtype, recvCount, src);
  }

  struct MpiP2P final : P2PImpl {
    MPI_Request request = MPI_REQUEST_NULL;
  };

  void isend(loom_rt_ctx &ctx, int32_t dtype, const void *buf, int64_t count,
             int64_t dst, int64_t tag, P2PRequest &req) override {
    checkInt(ctx, count);
    auto impl = std::make_unique<MpiP2P>();
    check(ctx,
          MPI_Isend(buf, int(count), mpiType(dtype), int(dst), int(tag), World,
                    &impl->request),
          "MPI_Isend");
    req.impl = std::move(impl);
  }

  void irecv(loom_rt_ctx &ctx, int32_t dtype, void *buf, int64_t count,
             int64_t src, int64_t tag, P2PRequest &req) override {
    checkInt(ctx, count);
    auto impl = std::make_unique<MpiP2P>();
    check(ctx,
          MPI_Irecv(buf, int(count), mpiType(dtype), int(src), int(tag), World,
                    &impl->request),
          "MPI_Irecv");
    req.impl = std::move(impl);
  }

  void wait(loom_rt_ctx &ctx, P2PRequest &req) override {
    auto *impl = static_cast<MpiP2P *>(req.impl.get());
    if (!impl)
      return;
    // The watchdog takes the job down past the timeout (a dead peer).
    InFlight f(*this, ctx);
    MPI_Status st;
    check(ctx, MPI_Wait(&impl->request, &st), "MPI_Wait");
    if (!req.isSend)
      checkReceived(ctx, st, req.dtype, req.count, req.peer);
  }

  void poll(loom_rt_ctx &) override {}

  [[noreturn]] void fail(loom_rt_ctx &ctx,
                         const std::string &message) override {
    abortJob(message);
  }

  [[noreturn]] void abortJob(const std::string &message) {
    std::fprintf(stderr, "%s\nloom-rt: aborting the MPI job\n",
                 message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }

private:
  // Marks a blocking MPI call in flight for the watchdog.
  struct InFlight {
    MpiComm &c;
    InFlight(MpiComm &comm, loom_rt_ctx &ctx) : c(comm) {
      SigCurrentOp.store(ctx.current.name, std::memory_order_relaxed);
      c.Deadline.store(deadlineAfter(ctx.timeoutSeconds),
                       std::memory_order_release);
    }
    ~InFlight() {
      c.Deadline.store(0, std::memory_order_release);
      SigCurrentOp.store(nullptr, std::memory_order_relaxed);
    }
  };

  void watch() {
    std::unique_lock<std::mutex> lock(Mu);
    while (!Stop) {
      Cv.wait_for(lock, std::chrono::milliseconds(50));
      int64_t d = Deadline.load(std::memory_order_acquire);
      if (d != 0 && loom_rt_now_ns() > d) {
        // The rank's own thread is stuck inside MPI; report what it is in.
        char secs[32];
        std::snprintf(secs, sizeof(secs), "%g", Ctx.timeoutSeconds);
        abortJob(formatFailure(
            Ctx, std::string("timed out after ") + secs +
                     " s (a peer died, hangs, or did not call the matching "
                     "operation; timeout: loom_rt_set_timeout or "
                     "LOOM_COLLECTIVE_TIMEOUT_S)"));
      }
    }
  }

  MPI_Comm commOf(Group &g) {
    return static_cast<MpiGroupImpl &>(*g.impl).comm;
  }

  void check(loom_rt_ctx &ctx, int rc, const char *call) {
    if (rc == MPI_SUCCESS)
      return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    failCurrent(ctx, std::string(call) + ": " + std::string(msg, len));
  }

  void checkInt(loom_rt_ctx &ctx, int64_t n) {
    if (n > INT_MAX)
      failCurrent(ctx, "element count " + std::to_string(n) +
                           " exceeds the MPI int count limit");
  }

  void checkReceived(loom_rt_ctx &ctx, MPI_Status &st, int32_t dtype,
                     int64_t count, int64_t src) {
    int got = 0;
    MPI_Get_count(&st, mpiType(dtype), &got);
    if (got != count)
      failCurrent(ctx, "size mismatch: rank " + std::to_string(src) + " sent " +
                           std::to_string(got) + " elements, expected " +
                           std::to_string(count));
  }

  /// With LOOM_CHECK_COLLECTIVES=1: every member all-gathers what each
  /// calls here (5 int64s) and all fail, naming both sides, if any differ.
  /// Off by default: it is one more small collective per call (see
  /// docs/RUNTIME.md for its measured cost).
  void meet(loom_rt_ctx &ctx, Group &g, const CollSig &mine) {
    if (!CheckCollectives || g.size == 1)
      return;
    int64_t words[5] = {mine.kind, mine.dtype, mine.op, mine.count, mine.inner};
    std::vector<int64_t> all(size_t(5 * g.size));
    check(ctx,
          MPI_Allgather(words, 5, MPI_INT64_T, all.data(), 5, MPI_INT64_T,
                        commOf(g)),
          "MPI_Allgather (LOOM_CHECK_COLLECTIVES header)");
    for (int64_t j = 0; j < g.size; ++j) {
      const int64_t *w = &all[size_t(5 * j)];
      CollSig theirs{w[0], w[1], w[2], w[3], w[4]};
      if (j != g.index && !(theirs == mine))
        failCurrent(ctx,
                    collectiveMismatch(g.members, mine, g.members[j], theirs));
    }
  }

  void allReduceChunked(loom_rt_ctx &ctx, MPI_Comm comm, const void *in,
                        void *out, int64_t count, MPI_Datatype t, MPI_Op op,
                        int64_t es) {
    const int64_t kMax = int64_t(1) << 30;
    for (int64_t off = 0; off < count; off += kMax) {
      int n = int(std::min(kMax, count - off));
      const void *src = in == MPI_IN_PLACE
                            ? MPI_IN_PLACE
                            : static_cast<const char *>(in) + off * es;
      check(ctx,
            MPI_Allreduce(src, static_cast<char *>(out) + off * es, n, t, op,
                          comm),
            "MPI_Allreduce");
    }
  }

  char *scratchBytes(loom_rt_ctx &ctx, int64_t bytes) {
    if (int64_t(ctx.scratch.size()) < bytes)
      ctx.scratch.resize(size_t(bytes));
    return ctx.scratch.data();
  }
  float *scratchFloats(loom_rt_ctx &ctx, int64_t n) {
    return reinterpret_cast<float *>(scratchBytes(ctx, n * 4));
  }

  loom_rt_ctx &Ctx;
  MPI_Comm World = MPI_COMM_NULL;
  bool CheckCollectives = checkCollectivesFromEnv();
  std::atomic<int64_t> Deadline{0};
  std::mutex Mu;
  std::condition_variable Cv;
  bool Stop = false;
  std::thread Watchdog;
};

} // namespace

bool mpiAvailable() { return true; }

int runMpi(std::vector<int64_t> mesh, const RankBody &body,
           const LaunchOptions &options) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  }
  // OpenBLAS starts before the rank's pool pins this thread (startGemm).
  startGemm();
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (mesh.empty())
    mesh.push_back(size);

  loom_rt_ctx ctx;
  std::string err;
  int64_t prod = 1;
  for (int64_t d : mesh)
    prod *= d;
  if (prod != size)
    err = "mesh shape has " + std::to_string(prod) +
          " ranks, but MPI started " + std::to_string(size);
  else
    initContext(ctx, mesh, rank, &err);
  if (!err.empty()) {
    std::fprintf(stderr, "loom-rt: rank %d: %s\n", rank, err.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  ctx.timeoutSeconds = options.timeoutSeconds > 0 ? options.timeoutSeconds
                                                  : defaultTimeoutSeconds();
  std::string tracePath = options.tracePath;
  if (tracePath.empty())
    if (const char *env = std::getenv("LOOM_TRACE"))
      tracePath = env;
  ctx.tracing = !tracePath.empty();

  std::snprintf(SigPrefix, sizeof(SigPrefix),
                "loom-rt: rank %d: terminated by SIGTERM", rank);
  std::signal(SIGTERM, loomRtSigterm);

  auto mpiComm = std::make_unique<MpiComm>(ctx);
  MpiComm *mpi = mpiComm.get();
  std::unique_ptr<Comm> comm = std::move(mpiComm);
  if (options.wrapComm) {
    // e.g. NCCL over device buffers (runtime/cuda): a rank that cannot
    // start it takes the job down with the reason.
    std::string werr;
    comm = options.wrapComm(rank, std::move(comm), &werr);
    if (!comm) {
      std::fprintf(stderr, "loom-rt: rank %d: %s\n", rank, werr.c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
      return 1;
    }
  }
  ctx.comm = comm.get();
  int rc = 0;
  ThreadContextScope current(&ctx);
  try {
    startRankThreads(ctx, options.threadsPerRank, mpiLocalRank(),
                     mpiLocalRanks());
    rc = body(&ctx);
  } catch (const std::exception &e) {
    ctx.current = OpDesc();
    comm->fail(ctx, formatFailure(ctx, std::string("uncaught exception: ") +
                                           e.what()));
  } catch (...) {
    ctx.current = OpDesc();
    comm->fail(ctx, formatFailure(ctx, "uncaught unknown exception"));
  }
  if (rc != 0) {
    ctx.current = OpDesc();
    comm->fail(ctx, formatFailure(ctx, "rank body returned status " +
                                           std::to_string(rc)));
  }
  ctx.pool.reset();
  if (ctx.tracing)
    writeTrace(tracePath + "." + std::to_string(rank), {&ctx});
  mpi->shutdown();
  ctx.comm = nullptr;
  std::signal(SIGTERM, SIG_DFL);
  if (options.finalizeMpi) {
    MPI_Finalize();
  } else {
    // Once per process: MPI is finalized at exit, after the last job.
    static std::once_flag atExit;
    std::call_once(atExit, [] {
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized)
          MPI_Finalize();
      });
    });
  }
  return 0;
}

} // namespace loom::rt
