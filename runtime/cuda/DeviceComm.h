//===- runtime/cuda/DeviceComm.h - Collectives on device buffers -*- C++
//-*-===//
//
// Communicators (loom::rt::Comm) whose collectives work on device memory, so
// that generated GPU host code can call the loom_rt_* ABI of abi.h with
// device pointers (docs/GPU.md, "Collectives on device buffers").
//
// The single-device communicator: N ranks as threads of one process share
// one GPU, each with its own stream. The host side (rendezvous, signature
// check, failure, host buffers) is the threads communicator it wraps; the
// data moves as device copies plus one generated reduction kernel (PTX text
// made here, JIT-compiled by the driver): every output element is reduced
// by one rank, members in order 0..p-1, f16/bf16 accumulated in f32 and
// rounded once, which is the order and rounding of the threads backend, so
// the two give the same bits for sums (NaN payloads aside).
//
// The device operations sit behind `DeviceOps` (one object per rank, bound
// to the rank's stream): `CudaDeviceOps` drives the CUDA runtime of cuda.h;
// tests give a host-memory implementation, so the communicator's logic runs
// with real data on machines without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_DEVICECOMM_H
#define LOOM_RUNTIME_CUDA_DEVICECOMM_H

#include "../Comm.h"

#include "loom/runtime/Runtime.h"
#include "loom/runtime/cuda.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::rt {

/// The device work of one rank, in issue order on the rank's stream. Every
/// call returns false with *err set on failure.
class DeviceOps {
public:
  virtual ~DeviceOps();
  /// Whether `p` is device memory; host memory is left to the CPU backend.
  virtual bool isDevice(const void *p) = 0;
  /// Device-to-device copy of `bytes` (asynchronous on the stream).
  virtual bool copy(void *dst, const void *src, int64_t bytes,
                    std::string *err) = 0;
  /// out[r * dstStride + c] = op over j < p of srcs[j][r * srcStride + c]
  /// for r < rows, c < cols (strides in elements), members in order,
  /// f16/bf16 accumulated in f32 and rounded once (abi.h's semantics).
  virtual bool reduce(int32_t dtype, int32_t op, const void *const *srcs, int p,
                      void *out, int64_t rows, int64_t cols, int64_t srcStride,
                      int64_t dstStride, std::string *err) = 0;
  /// Waits until the stream's work is done.
  virtual bool sync(std::string *err) = 0;
  /// Device memory of at least `bytes` owned by this object (grown on
  /// demand; valid until the next call with a larger size).
  virtual void *scratch(int64_t bytes, std::string *err) = 0;
};

/// DeviceOps on a CUDA device through cuda.h (one stream per object).
class CudaDeviceOps final : public DeviceOps {
public:
  /// Opens device `ordinal` and a stream of its own; null + *err on failure.
  static std::unique_ptr<CudaDeviceOps> create(int ordinal, std::string *err);
  ~CudaDeviceOps() override;
  bool isDevice(const void *p) override;
  bool copy(void *dst, const void *src, int64_t bytes,
            std::string *err) override;
  bool reduce(int32_t dtype, int32_t op, const void *const *srcs, int p,
              void *out, int64_t rows, int64_t cols, int64_t srcStride,
              int64_t dstStride, std::string *err) override;
  bool sync(std::string *err) override;
  void *scratch(int64_t bytes, std::string *err) override;
  loom_cuda_stream stream() const { return Stream; }
  loom_cuda_device *device() const { return Dev; }

private:
  CudaDeviceOps() = default;
  loom_cuda_device *Dev = nullptr;
  loom_cuda_stream Stream = nullptr;
  std::map<std::pair<int32_t, int32_t>, loom_cuda_module *> Kernels;
  loom_cuda_ptr Scratch = 0, Table = 0;
  int64_t ScratchBytes = 0, TableBytes = 0;
};

/// The PTX of the reduction kernel `loom_reduce` for (dtype, op): the
/// arguments are (u64 table of p source pointers, u32 p, u64 out, u64 rows,
/// u64 cols, u64 srcStride, u64 dstStride); any 1-D launch (grid-stride).
std::string reduceKernelPtx(int32_t dtype, int32_t op);

/// What the device communicators share: a host communicator (threads or
/// MPI) for host buffers, the rendezvous and failures; the rank's DeviceOps;
/// the checks of a call's buffers and of what the group's members call.
class DeviceCommBase : public Comm {
public:
  DeviceCommBase(std::unique_ptr<Comm> host, std::unique_ptr<DeviceOps> ops)
      : Host(std::move(host)), Ops(std::move(ops)) {}
  DeviceOps &ops() { return *Ops; }

  std::unique_ptr<GroupImpl> createGroup(loom_rt_ctx &ctx,
                                         const Group &group) override;
  void isend(loom_rt_ctx &ctx, int32_t dtype, const void *buf, int64_t count,
             int64_t dst, int64_t tag, P2PRequest &req) override;
  void irecv(loom_rt_ctx &ctx, int32_t dtype, void *buf, int64_t count,
             int64_t src, int64_t tag, P2PRequest &req) override;
  void wait(loom_rt_ctx &ctx, P2PRequest &req) override;
  void poll(loom_rt_ctx &ctx) override { Host->poll(ctx); }
  [[noreturn]] void fail(loom_rt_ctx &ctx,
                         const std::string &message) override {
    Host->fail(ctx, message);
    __builtin_unreachable(); // Comm::fail never returns
  }

protected:
  /// True when every non-null buffer is device memory, false when all are
  /// host memory; fails the job when they are mixed.
  bool onDevice(loom_rt_ctx &ctx, std::initializer_list<const void *> bufs);
  /// Publishes this rank's call and two addresses to the group; fails every
  /// member naming both sides when the calls differ. Returns [p][2]
  /// addresses.
  std::vector<uint64_t> publish(loom_rt_ctx &ctx, Group &g, const CollSig &sig,
                                const void *a, const void *b);
  /// Fails the job with a device error unless `ok`.
  void check(loom_rt_ctx &ctx, bool ok, const std::string &err);
  /// Waits for the rank's stream.
  void sync(loom_rt_ctx &ctx);
  /// Waits for the stream, then for the group.
  void settle(loom_rt_ctx &ctx, Group &g);
  /// A device copy, failing the job on error.
  void copy(loom_rt_ctx &ctx, void *dst, const void *src, int64_t bytes);
  /// The host record of a device send (address and size), and its check on
  /// the receiving side (a size mismatch fails the job naming both sizes).
  void postRecord(loom_rt_ctx &ctx, const void *buf, int64_t bytes, int64_t dst,
                  int64_t tag);
  uint64_t takeRecord(loom_rt_ctx &ctx, int64_t bytes, int64_t src,
                      int64_t tag);

  std::unique_ptr<Comm> Host;
  std::unique_ptr<DeviceOps> Ops;
};

/// N ranks sharing one device: the collectives above on device buffers,
/// host buffers handed to `host` (the rank's threads communicator), whose
/// groups and failure handling it also uses.
class SingleDeviceComm final : public DeviceCommBase {
public:
  using DeviceCommBase::DeviceCommBase;
  const char *name() const override { return "cuda-single-device"; }

  void allReduce(loom_rt_ctx &ctx, Group &g, int32_t dtype, int32_t op,
                 const void *in, void *out, int64_t count) override;
  void allGather(loom_rt_ctx &ctx, Group &g, int32_t dtype, const void *in,
                 void *out, int64_t outer, int64_t inner) override;
  void reduceScatter(loom_rt_ctx &ctx, Group &g, int32_t dtype, int32_t op,
                     const void *in, void *out, int64_t outer,
                     int64_t inner) override;
  void allToAll(loom_rt_ctx &ctx, Group &g, int32_t dtype, const void *in,
                void *out, int64_t block) override;
  void barrier(loom_rt_ctx &ctx, Group &g) override;
  void send(loom_rt_ctx &ctx, int32_t dtype, const void *buf, int64_t count,
            int64_t dst, int64_t tag) override;
  void recv(loom_rt_ctx &ctx, int32_t dtype, void *buf, int64_t count,
            int64_t src, int64_t tag) override;
  void sendRecv(loom_rt_ctx &ctx, int32_t dtype, const void *sendBuf,
                int64_t sendCount, int64_t dst, void *recvBuf,
                int64_t recvCount, int64_t src, int64_t tag) override;

private:
  /// Waits for the stream, then publishes the call and `in` (a group of
  /// one: just `in`). Returns [p][2] addresses.
  std::vector<uint64_t> meet(loom_rt_ctx &ctx, Group &g, const CollSig &sig,
                             const void *in);
  /// settle() for a group, sync() for one rank.
  void finish(loom_rt_ctx &ctx, Group &g);
  /// The receiving half of a device transfer: copy from the sender's
  /// buffer, wait for the stream, acknowledge.
  void takeRecv(loom_rt_ctx &ctx, void *buf, int64_t bytes, int64_t src,
                int64_t tag);
  void awaitAck(loom_rt_ctx &ctx, int64_t dst, int64_t tag);
};

/// The NCCL calls of one rank on its stream, over the world communicator
/// (shapes as cuda.h's loom_cuda_nccl_*). Returns false + *err on failure.
class NcclOps {
public:
  virtual ~NcclOps();
  virtual bool allReduce(loom_rt_ctx &ctx, int32_t dtype, int32_t op,
                         const void *in, void *out, int64_t count,
                         std::string *err) = 0;
  /// out is [world][count].
  virtual bool allGather(loom_rt_ctx &ctx, int32_t dtype, const void *in,
                         void *out, int64_t count, std::string *err) = 0;
  /// in is [world][count].
  virtual bool reduceScatter(loom_rt_ctx &ctx, int32_t dtype, int32_t op,
                             const void *in, void *out, int64_t count,
                             std::string *err) = 0;
  /// Sends and receives issued as one NCCL group (no ordering deadlock).
  struct Transfer {
    bool send;
    void *buf;
    int64_t count;
    int64_t peer;
  };
  virtual bool exchange(loom_rt_ctx &ctx, int32_t dtype,
                        const std::vector<Transfer> &transfers,
                        std::string *err) = 0;
  /// A new NCCL id (the first member of a group makes it; NcclComm hands
  /// it to the others over the host communicator).
  virtual bool newId(uint8_t *id, std::string *err) = 0;
  /// The communicator of g's members from the id of its first member,
  /// ranked by group index (peers of `exchange` are group indices).
  /// Collective over g's members; null + *err on failure.
  virtual std::unique_ptr<NcclOps> join(loom_rt_ctx &ctx, const Group &g,
                                        const uint8_t *id,
                                        std::string *err) = 0;
};

/// One GPU per rank (process) over NCCL: the collectives on device buffers,
/// the whole mesh's on the world communicator, a group's (a mesh axis of a
/// dp x tp mesh) on a communicator of its members made at its first
/// collective (the NCCL id made by its first member and gathered over the
/// host communicator, then ncclCommInitRank; kept for the run).
/// Host buffers, the signature check and failures go to `host` (MPI under
/// mpirun: a failing rank aborts the job).
class NcclComm final : public DeviceCommBase {
public:
  NcclComm(std::unique_ptr<Comm> host, std::unique_ptr<DeviceOps> ops,
           std::unique_ptr<NcclOps> nccl)
      : DeviceCommBase(std::move(host), std::move(ops)), Nccl(std::move(nccl)) {
  }
  const char *name() const override { return "nccl"; }

  void allReduce(loom_rt_ctx &ctx, Group &g, int32_t dtype, int32_t op,
                 const void *in, void *out, int64_t count) override;
  void allGather(loom_rt_ctx &ctx, Group &g, int32_t dtype, const void *in,
                 void *out, int64_t outer, int64_t inner) override;
  void reduceScatter(loom_rt_ctx &ctx, Group &g, int32_t dtype, int32_t op,
                     const void *in, void *out, int64_t outer,
                     int64_t inner) override;
  void allToAll(loom_rt_ctx &ctx, Group &g, int32_t dtype, const void *in,
                void *out, int64_t block) override;
  void barrier(loom_rt_ctx &ctx, Group &g) override;
  void send(loom_rt_ctx &ctx, int32_t dtype, const void *buf, int64_t count,
            int64_t dst, int64_t tag) override;
  void recv(loom_rt_ctx &ctx, int32_t dtype, void *buf, int64_t count,
            int64_t src, int64_t tag) override;
  void sendRecv(loom_rt_ctx &ctx, int32_t dtype, const void *sendBuf,
                int64_t sendCount, int64_t dst, void *recvBuf,
                int64_t recvCount, int64_t src, int64_t tag) override;

private:
  /// Publishes g's call (every member checks the others') and returns the
  /// NCCL communicator of g; null for a group of one (done locally).
  NcclOps *begin(loom_rt_ctx &ctx, Group &g, const CollSig &sig);
  void nccl(loom_rt_ctx &ctx, bool ok, const std::string &err);
  std::unique_ptr<NcclOps> Nccl;
  /// Group mask -> the communicator of this rank's group of that mask.
  std::map<uint64_t, std::unique_ptr<NcclOps>> Groups;
};

/// LaunchOptions::wrapComm for runThreads that makes each rank a
/// SingleDeviceComm over `makeOps(rank)` (null + *err: the job fails before
/// any rank starts).
using MakeDeviceOps =
    std::function<std::unique_ptr<DeviceOps>(int rank, std::string *err)>;
WrapComm singleDeviceComms(MakeDeviceOps makeOps);

/// The same with CudaDeviceOps on device `ordinal` (a stream per rank).
WrapComm singleDeviceComms(int ordinal);

/// runThreads with N ranks sharing CUDA device `ordinal`, one stream each.
int runSingleDevice(int nranks, std::vector<int64_t> mesh, int ordinal,
                    const RankBody &body, LaunchOptions options = {},
                    LaunchResult *result = nullptr);

/// LaunchOptions::wrapComm for runMpi: an NCCL communicator per process
/// (as runNccl).
WrapComm ncclComms(std::vector<int> devices);

/// runMpi with an NCCL communicator per process: the process's device is
/// devices[local rank] (empty `devices`: the local rank's ordinal), the NCCL
/// id is broadcast by MPI. A rank whose device or NCCL fails to start fails
/// the job (MPI_Abort) with the reason.
int runNccl(std::vector<int64_t> mesh, std::vector<int> devices,
            const RankBody &body, LaunchOptions options = {});

/// The device of local rank `localRank` from `devices` (empty: the rank's
/// own ordinal), or -1 with *err when there are fewer devices than ranks.
int deviceForRank(const std::vector<int> &devices, int localRank,
                  int localRanks, std::string *err);

} // namespace loom::rt

#endif // LOOM_RUNTIME_CUDA_DEVICECOMM_H
