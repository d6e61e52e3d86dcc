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

/// N ranks sharing one device: the collectives above on device buffers,
/// host buffers handed to `host` (the rank's threads communicator), whose
/// groups and failure handling it also uses.
class SingleDeviceComm final : public Comm {
public:
  SingleDeviceComm(std::unique_ptr<Comm> host, std::unique_ptr<DeviceOps> ops)
      : Host(std::move(host)), Ops(std::move(ops)) {}
  const char *name() const override { return "cuda-single-device"; }
  DeviceOps &ops() { return *Ops; }

  std::unique_ptr<GroupImpl> createGroup(loom_rt_ctx &ctx,
                                         const Group &group) override;
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

private:
  /// True when every non-null buffer is device memory, false when all are
  /// host memory; fails the job when they are mixed.
  bool onDevice(loom_rt_ctx &ctx, std::initializer_list<const void *> bufs);
  /// Publishes this rank's call and two addresses to the group; fails every
  /// member naming both sides when the calls differ. Returns [p][2]
  /// addresses.
  std::vector<uint64_t> publish(loom_rt_ctx &ctx, Group &g, const CollSig &sig,
                                const void *a, const void *b);
  /// Waits for the stream, then for the group.
  void settle(loom_rt_ctx &ctx, Group &g);
  void check(loom_rt_ctx &ctx, bool ok, const std::string &err);
  /// The device halves of send and recv (host messages carry the address).
  void postSend(loom_rt_ctx &ctx, const void *buf, int64_t bytes, int64_t dst,
                int64_t tag);
  void takeRecv(loom_rt_ctx &ctx, void *buf, int64_t bytes, int64_t src,
                int64_t tag);
  void awaitAck(loom_rt_ctx &ctx, int64_t dst, int64_t tag);

  std::unique_ptr<Comm> Host;
  std::unique_ptr<DeviceOps> Ops;
};

/// LaunchOptions::wrapComm for runThreads that makes each rank a
/// SingleDeviceComm over `makeOps(rank)` (null + *err: the job fails before
/// any rank starts).
using MakeDeviceOps =
    std::function<std::unique_ptr<DeviceOps>(int rank, std::string *err)>;
WrapComm singleDeviceComms(MakeDeviceOps makeOps);

/// runThreads with N ranks sharing CUDA device `ordinal`, one stream each.
int runSingleDevice(int nranks, std::vector<int64_t> mesh, int ordinal,
                    const RankBody &body, LaunchOptions options = {},
                    LaunchResult *result = nullptr);

} // namespace loom::rt

#endif // LOOM_RUNTIME_CUDA_DEVICECOMM_H
