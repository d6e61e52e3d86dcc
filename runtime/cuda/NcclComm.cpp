//===- runtime/cuda/NcclComm.cpp - NCCL communicator of the loom_rt ABI ---===//
//
// NcclComm (DeviceComm.h): one GPU per rank (process), the loom_rt_*
// collectives on device buffers through NCCL on the rank's stream, and
// host buffers on the wrapped MPI communicator. Each device collective
// waits for the rank's stream (its input is complete: the GPU host program
// synchronises its own stream before the call), checks what every member
// calls with one host all-gather (as the threads backend does, so a size
// that differs between ranks fails every rank, both sides named, instead
// of NCCL reading past a buffer or hanging), issues the NCCL call and waits
// for the stream again (the result is complete when the call returns).
//
// Layouts: NCCL's all_gather writes [p][count] and its reduce_scatter
// reads [p][count]; abi.h's have an outer dimension ([outer][p][inner]),
// so for outer > 1 the data goes through the rank's scratch with one
// device copy per row. all_to_all and send/recv are NCCL groups of
// ncclSend/ncclRecv; the host check of a transfer's size comes first.
// NCCL's own sum order applies (ring or tree), not the threads backend's.
//
// A group of 1 < p < world ranks (one axis of a dp x tp mesh) gets its own
// NCCL communicator at its first device collective: its first member makes
// an NCCL id, the members gather it over the host communicator (with a
// status byte, so that the leader's failure fails every member) and join
// with ncclCommInitRank ranked by group index (no ncclCommSplit: that
// needs NCCL 2.18 and every world rank; this needs only the members).
//
//===----------------------------------------------------------------------===//

#include "DeviceComm.h"

#include "../DType.h"

#include <cstdlib>

namespace loom::rt {

NcclOps::~NcclOps() = default;

namespace {

const char *at(const void *base, int64_t bytes) {
  return static_cast<const char *>(base) + bytes;
}
char *at(void *base, int64_t bytes) {
  return static_cast<char *>(base) + bytes;
}
loom_cuda_ptr dptr(const void *p) { return reinterpret_cast<uintptr_t>(p); }

/// NcclOps over cuda.h's loom_cuda_nccl_* on one stream.
class CudaNcclOps final : public NcclOps {
public:
  CudaNcclOps(loom_cuda_device *dev, loom_cuda_nccl *comm,
              loom_cuda_stream stream)
      : D(dev), C(comm), S(stream) {}
  ~CudaNcclOps() override { loom_cuda_nccl_destroy(C); }
  bool allReduce(loom_rt_ctx &, int32_t dtype, int32_t op, const void *in,
                 void *out, int64_t count, std::string *err) override {
    return done(
        loom_cuda_nccl_all_reduce(C, dtype, op, dptr(in), dptr(out), count, S),
        err);
  }
  bool allGather(loom_rt_ctx &, int32_t dtype, const void *in, void *out,
                 int64_t count, std::string *err) override {
    return done(
        loom_cuda_nccl_all_gather(C, dtype, dptr(in), dptr(out), count, S),
        err);
  }
  bool reduceScatter(loom_rt_ctx &, int32_t dtype, int32_t op, const void *in,
                     void *out, int64_t count, std::string *err) override {
    return done(loom_cuda_nccl_reduce_scatter(C, dtype, op, dptr(in), dptr(out),
                                              count, S),
                err);
  }
  bool exchange(loom_rt_ctx &, int32_t dtype,
                const std::vector<Transfer> &transfers,
                std::string *err) override {
    if (loom_cuda_nccl_group(C, 1))
      return done(-1, err);
    for (const Transfer &t : transfers) {
      int32_t rc = t.send ? loom_cuda_nccl_send(C, dtype, dptr(t.buf), t.count,
                                                int32_t(t.peer), S)
                          : loom_cuda_nccl_recv(C, dtype, dptr(t.buf), t.count,
                                                int32_t(t.peer), S);
      if (rc) {
        std::string why = loom_cuda_last_error();
        loom_cuda_nccl_group(C, 0);
        *err = why;
        return false;
      }
    }
    return done(loom_cuda_nccl_group(C, 0), err);
  }
  bool newId(uint8_t *id, std::string *err) override {
    return done(loom_cuda_nccl_unique_id(id), err);
  }
  std::unique_ptr<NcclOps> join(loom_rt_ctx &, const Group &g,
                                const uint8_t *id, std::string *err) override {
    loom_cuda_nccl *c = nullptr;
    if (!done(loom_cuda_nccl_init_id(D, int32_t(g.index), int32_t(g.size), id,
                                     &c),
              err))
      return nullptr;
    return std::make_unique<CudaNcclOps>(D, c, S);
  }

private:
  static bool done(int32_t rc, std::string *err) {
    if (rc)
      *err = loom_cuda_last_error();
    return rc == 0;
  }
  loom_cuda_device *D;
  loom_cuda_nccl *C;
  loom_cuda_stream S;
};

int envInt(const char *name, int dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}

} // namespace

void NcclComm::nccl(loom_rt_ctx &ctx, bool ok, const std::string &err) {
  if (!ok)
    failCurrent(ctx, "nccl: " + err);
}

NcclOps *NcclComm::begin(loom_rt_ctx &ctx, Group &g, const CollSig &sig) {
  sync(ctx);
  if (g.size == 1)
    return nullptr;
  publish(ctx, g, sig, nullptr, nullptr);
  if (g.size == ctx.worldSize)
    return Nccl.get();
  auto it = Groups.find(g.mask);
  if (it != Groups.end())
    return it->second.get();
  // The group's communicator: the first member's id, gathered by all.
  constexpr int64_t kBytes = 1 + LOOM_CUDA_NCCL_ID_BYTES;
  std::vector<uint8_t> mine(kBytes, 0), all(size_t(kBytes * g.size), 0);
  std::string err;
  if (g.index == 0)
    mine[0] = Nccl->newId(mine.data() + 1, &err) ? 1 : 2;
  Host->allGather(ctx, g, LOOM_RT_U8, mine.data(), all.data(), 1, kBytes);
  char mask[32];
  std::snprintf(mask, sizeof mask, "0x%llx",
                static_cast<unsigned long long>(g.mask));
  if (all[0] != 1)
    failCurrent(ctx, "nccl: the first rank of the group of axes mask " +
                         std::string(mask) + " (rank " +
                         std::to_string(g.members[0]) +
                         ") could not make its NCCL id" +
                         (err.empty() ? std::string() : ": " + err));
  std::unique_ptr<NcclOps> sub = Nccl->join(ctx, g, all.data() + 1, &err);
  if (!sub)
    failCurrent(ctx, "nccl: cannot make the communicator of the group of "
                     "axes mask " +
                         std::string(mask) + " (" + std::to_string(g.size) +
                         " of " + std::to_string(ctx.worldSize) +
                         " ranks): " + err);
  return (Groups[g.mask] = std::move(sub)).get();
}

void NcclComm::allReduce(loom_rt_ctx &ctx, Group &g, int32_t dtype, int32_t op,
                         const void *in, void *out, int64_t count) {
  if (!onDevice(ctx, {in, out}))
    return Host->allReduce(ctx, g, dtype, op, in, out, count);
  std::string err;
  NcclOps *c = begin(ctx, g, {kAllReduce, dtype, op, count, -1});
  if (!c) {
    if (in != out)
      copy(ctx, out, in, count * dtypeSize(dtype));
  } else if (count) {
    nccl(ctx, c->allReduce(ctx, dtype, op, in, out, count, &err), err);
  }
  sync(ctx);
}

void NcclComm::allGather(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                         const void *in, void *out, int64_t outer,
                         int64_t inner) {
  if (!onDevice(ctx, {in, out}))
    return Host->allGather(ctx, g, dtype, in, out, outer, inner);
  int64_t p = g.size, row = inner * dtypeSize(dtype);
  std::string err;
  NcclOps *c = begin(ctx, g, {kAllGather, dtype, -1, outer, inner});
  if (!c) {
    copy(ctx, out, in, outer * row);
  } else if (outer == 1) {
    nccl(ctx, c->allGather(ctx, dtype, in, out, inner, &err), err);
  } else if (outer * inner != 0) {
    // NCCL gathers [p][outer][inner]; out is [outer][p][inner].
    void *tmp = Ops->scratch(p * outer * row, &err);
    check(ctx, tmp != nullptr, err);
    nccl(ctx, c->allGather(ctx, dtype, in, tmp, outer * inner, &err), err);
    for (int64_t j = 0; j < p; ++j)
      for (int64_t o = 0; o < outer; ++o)
        copy(ctx, at(out, (o * p + j) * row), at(tmp, (j * outer + o) * row),
             row);
  }
  sync(ctx);
}

void NcclComm::reduceScatter(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                             int32_t op, const void *in, void *out,
                             int64_t outer, int64_t inner) {
  if (!onDevice(ctx, {in, out}))
    return Host->reduceScatter(ctx, g, dtype, op, in, out, outer, inner);
  int64_t p = g.size, row = inner * dtypeSize(dtype);
  std::string err;
  NcclOps *c = begin(ctx, g, {kReduceScatter, dtype, op, outer, inner});
  if (!c) {
    copy(ctx, out, in, outer * row);
  } else if (outer == 1) {
    nccl(ctx, c->reduceScatter(ctx, dtype, op, in, out, inner, &err), err);
  } else if (outer * inner != 0) {
    // in is [outer][p][inner]; NCCL scatters [p][outer][inner].
    void *tmp = Ops->scratch(p * outer * row, &err);
    check(ctx, tmp != nullptr, err);
    for (int64_t j = 0; j < p; ++j)
      for (int64_t o = 0; o < outer; ++o)
        copy(ctx, at(tmp, (j * outer + o) * row), at(in, (o * p + j) * row),
             row);
    nccl(ctx, c->reduceScatter(ctx, dtype, op, tmp, out, outer * inner, &err),
         err);
  }
  sync(ctx);
}

void NcclComm::allToAll(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                        const void *in, void *out, int64_t block) {
  if (!onDevice(ctx, {in, out}))
    return Host->allToAll(ctx, g, dtype, in, out, block);
  int64_t p = g.size, bb = block * dtypeSize(dtype), me = g.index;
  std::string err;
  NcclOps *c = begin(ctx, g, {kAllToAll, dtype, -1, block, -1});
  if (c && block) {
    std::vector<NcclOps::Transfer> ts;
    for (int64_t j = 0; j < p; ++j)
      if (j != me) {
        ts.push_back({true, const_cast<char *>(at(in, j * bb)), block, j});
        ts.push_back({false, at(out, j * bb), block, j});
      }
    nccl(ctx, c->exchange(ctx, dtype, ts, &err), err);
  }
  copy(ctx, at(out, me * bb), at(in, me * bb), bb);
  sync(ctx);
}

void NcclComm::barrier(loom_rt_ctx &ctx, Group &g) {
  sync(ctx);
  Host->barrier(ctx, g);
}

// Point to point: the sender posts a host record of the size first, the
// receiver checks it, then both issue their NCCL halves.

void NcclComm::send(loom_rt_ctx &ctx, int32_t dtype, const void *buf,
                    int64_t count, int64_t dst, int64_t tag) {
  if (!onDevice(ctx, {buf}))
    return Host->send(ctx, dtype, buf, count, dst, tag);
  sync(ctx);
  postRecord(ctx, buf, count * dtypeSize(dtype), dst, tag);
  std::string err;
  if (count)
    nccl(ctx,
         Nccl->exchange(ctx, dtype,
                        {{true, const_cast<void *>(buf), count, dst}}, &err),
         err);
  sync(ctx);
}

void NcclComm::recv(loom_rt_ctx &ctx, int32_t dtype, void *buf, int64_t count,
                    int64_t src, int64_t tag) {
  if (!onDevice(ctx, {buf}))
    return Host->recv(ctx, dtype, buf, count, src, tag);
  sync(ctx);
  takeRecord(ctx, count * dtypeSize(dtype), src, tag);
  std::string err;
  if (count)
    nccl(ctx, Nccl->exchange(ctx, dtype, {{false, buf, count, src}}, &err),
         err);
  sync(ctx);
}

void NcclComm::sendRecv(loom_rt_ctx &ctx, int32_t dtype, const void *sendBuf,
                        int64_t sendCount, int64_t dst, void *recvBuf,
                        int64_t recvCount, int64_t src, int64_t tag) {
  if (!onDevice(ctx, {sendBuf, recvBuf}))
    return Host->sendRecv(ctx, dtype, sendBuf, sendCount, dst, recvBuf,
                          recvCount, src, tag);
  int64_t es = dtypeSize(dtype);
  sync(ctx);
  postRecord(ctx, sendBuf, sendCount * es, dst, tag);
  takeRecord(ctx, recvCount * es, src, tag);
  std::vector<NcclOps::Transfer> ts;
  if (sendCount)
    ts.push_back({true, const_cast<void *>(sendBuf), sendCount, dst});
  if (recvCount)
    ts.push_back({false, recvBuf, recvCount, src});
  std::string err;
  if (!ts.empty())
    nccl(ctx, Nccl->exchange(ctx, dtype, ts, &err), err);
  sync(ctx);
}

int deviceForRank(const std::vector<int> &devices, int localRank,
                  int localRanks, std::string *err) {
  if (devices.empty())
    return localRank;
  if (int(devices.size()) < localRanks) {
    *err = std::to_string(localRanks) +
           " ranks run on this host but --devices "
           "names " +
           std::to_string(devices.size()) +
           " device(s): give one device per rank, or run the ranks on one "
           "device (--backend cuda without mpirun)";
    return -1;
  }
  return devices[size_t(localRank)];
}

WrapComm ncclComms(std::vector<int> devices) {
  return [devices](int rank, std::unique_ptr<Comm> host,
                   std::string *err) -> std::unique_ptr<Comm> {
    int local = envInt("OMPI_COMM_WORLD_LOCAL_RANK", rank);
    int locals = envInt("OMPI_COMM_WORLD_LOCAL_SIZE", local + 1);
    int ordinal = deviceForRank(devices, local, locals, err);
    if (ordinal < 0)
      return nullptr;
    int32_t count = 0;
    if (loom_cuda_device_count(&count)) {
      *err = loom_cuda_last_error();
      return nullptr;
    }
    if (ordinal >= count) {
      *err = "local rank " + std::to_string(local) + " would run on device " +
             std::to_string(ordinal) + ", and this host has " +
             std::to_string(count) +
             " CUDA device(s): run fewer ranks per host, or run the ranks "
             "on one device (--backend cuda without mpirun)";
      return nullptr;
    }
    std::unique_ptr<CudaDeviceOps> ops = CudaDeviceOps::create(ordinal, err);
    if (!ops)
      return nullptr;
    loom_cuda_nccl *c = nullptr;
    if (loom_cuda_nccl_init_mpi(ops->device(), &c)) {
      *err = std::string("cannot start NCCL on device ") +
             std::to_string(ordinal) + ": " + loom_cuda_last_error();
      return nullptr;
    }
    auto nccl = std::make_unique<CudaNcclOps>(ops->device(), c, ops->stream());
    return std::make_unique<NcclComm>(std::move(host), std::move(ops),
                                      std::move(nccl));
  };
}

int runNccl(std::vector<int64_t> mesh, std::vector<int> devices,
            const RankBody &body, LaunchOptions options) {
  options.wrapComm = ncclComms(std::move(devices));
  return runMpi(std::move(mesh), body, options);
}

} // namespace loom::rt
