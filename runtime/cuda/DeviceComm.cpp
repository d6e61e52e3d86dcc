//===- runtime/cuda/DeviceComm.cpp - Collectives on device buffers --------===//
//
// The single-device communicator (see DeviceComm.h). Each collective on
// device buffers is:
//   1. the rank waits for its stream (its input is complete), then one host
//      all-gather over the wrapped threads communicator publishes what it
//      calls (kind, dtype, op, sizes) and the device addresses peers read;
//      a rank that calls something else fails every member, both sides
//      named (as the threads backend);
//   2. device work on the rank's stream reading peers' buffers directly
//      (one address space: every rank's allocations are on the same GPU);
//   3. the rank waits for its stream, then for the group, so no buffer is
//      overwritten or freed while a peer still reads it.
// all_reduce is a reduce-scatter into each rank's scratch (chunk i reduced
// by member i, members in order) followed by copies of the chunks into
// every output, so in == out is allowed and each element is reduced once,
// in the threads backend's order.
//
//===----------------------------------------------------------------------===//

#include "DeviceComm.h"

#include "../DType.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace loom::rt {

DeviceOps::~DeviceOps() = default;

namespace {

const char *at(const void *base, int64_t bytes) {
  return static_cast<const char *>(base) + bytes;
}
const void *addr(uint64_t a) { return reinterpret_cast<const void *>(a); }

/// Host message tags of the device send/recv (never a user tag, which is
/// >= 0): the record of a send and the receiver's acknowledgement.
int64_t recordTag(int64_t tag) { return -4 - 2 * tag; }
int64_t ackTag(int64_t tag) { return -3 - 2 * tag; }

} // namespace

//===----------------------------------------------------------------------===//
// SingleDeviceComm
//===----------------------------------------------------------------------===//

std::unique_ptr<GroupImpl> DeviceCommBase::createGroup(loom_rt_ctx &ctx,
                                                       const Group &group) {
  // The group's rendezvous is the threads communicator's.
  return Host->createGroup(ctx, group);
}

void DeviceCommBase::check(loom_rt_ctx &ctx, bool ok, const std::string &err) {
  if (!ok)
    failCurrent(ctx, "device: " + err);
}

bool DeviceCommBase::onDevice(loom_rt_ctx &ctx,
                              std::initializer_list<const void *> bufs) {
  int device = 0, host = 0;
  for (const void *b : bufs)
    if (b)
      (Ops->isDevice(b) ? device : host)++;
  if (device && host)
    failCurrent(ctx, "the buffers are partly device and partly host memory: "
                     "on the cuda backend a call's buffers are all device "
                     "buffers or all host buffers");
  return device > 0;
}

std::vector<uint64_t> DeviceCommBase::publish(loom_rt_ctx &ctx, Group &g,
                                              const CollSig &sig, const void *a,
                                              const void *b) {
  constexpr int64_t kWords = 7;
  int64_t mine[kWords] = {sig.kind,
                          sig.dtype,
                          sig.op,
                          sig.count,
                          sig.inner,
                          int64_t(reinterpret_cast<uintptr_t>(a)),
                          int64_t(reinterpret_cast<uintptr_t>(b))};
  std::vector<int64_t> all(size_t(g.size * kWords));
  Host->allGather(ctx, g, LOOM_RT_I64, mine, all.data(), 1, kWords);
  std::vector<uint64_t> addrs(size_t(2 * g.size));
  for (int64_t j = 0; j < g.size; ++j) {
    const int64_t *w = &all[size_t(j * kWords)];
    CollSig theirs{w[0], w[1], w[2], w[3], w[4]};
    if (!(theirs == sig))
      failCurrent(ctx,
                  collectiveMismatch(g.members, sig, g.members[j], theirs));
    addrs[size_t(2 * j)] = uint64_t(w[5]);
    addrs[size_t(2 * j + 1)] = uint64_t(w[6]);
  }
  return addrs;
}

void DeviceCommBase::sync(loom_rt_ctx &ctx) {
  std::string err;
  check(ctx, Ops->sync(&err), err);
}

void DeviceCommBase::settle(loom_rt_ctx &ctx, Group &g) {
  sync(ctx);
  Host->barrier(ctx, g);
}

std::vector<uint64_t> SingleDeviceComm::meet(loom_rt_ctx &ctx, Group &g,
                                             const CollSig &sig,
                                             const void *in) {
  sync(ctx);
  if (g.size > 1)
    return publish(ctx, g, sig, in, nullptr);
  return {uint64_t(reinterpret_cast<uintptr_t>(in)), 0};
}

void SingleDeviceComm::finish(loom_rt_ctx &ctx, Group &g) {
  if (g.size > 1)
    settle(ctx, g);
  else
    sync(ctx);
}

void DeviceCommBase::copy(loom_rt_ctx &ctx, void *dst, const void *src,
                          int64_t bytes) {
  std::string err;
  if (bytes)
    check(ctx, Ops->copy(dst, src, bytes, &err), err);
}

void DeviceCommBase::postRecord(loom_rt_ctx &ctx, const void *buf,
                                int64_t bytes, int64_t dst, int64_t tag) {
  int64_t rec[2] = {int64_t(reinterpret_cast<uintptr_t>(buf)), bytes};
  Host->send(ctx, LOOM_RT_I64, rec, 2, dst, recordTag(tag));
}

uint64_t DeviceCommBase::takeRecord(loom_rt_ctx &ctx, int64_t bytes,
                                    int64_t src, int64_t tag) {
  int64_t rec[2] = {0, 0};
  Host->recv(ctx, LOOM_RT_I64, rec, 2, src, recordTag(tag));
  if (rec[1] != bytes)
    failCurrent(ctx, "size mismatch: rank " + std::to_string(src) + " sent " +
                         std::to_string(rec[1]) + " bytes, expected " +
                         std::to_string(bytes));
  return uint64_t(rec[0]);
}

void SingleDeviceComm::allReduce(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                                 int32_t op, const void *in, void *out,
                                 int64_t count) {
  if (!onDevice(ctx, {in, out}))
    return Host->allReduce(ctx, g, dtype, op, in, out, count);
  int64_t es = dtypeSize(dtype), p = g.size;
  CollSig sig{kAllReduce, dtype, op, count, -1};
  sync(ctx);
  if (p == 1 || count == 0) {
    if (in != out)
      copy(ctx, out, in, count * es);
    if (p > 1)
      publish(ctx, g, sig, nullptr, nullptr);
    sync(ctx);
    return;
  }
  std::string err;
  void *scratch = Ops->scratch(count * es, &err);
  check(ctx, scratch != nullptr, err);
  std::vector<uint64_t> a = publish(ctx, g, sig, in, scratch);
  int64_t lo, hi;
  reduceChunk(count, p, es, g.index, lo, hi);
  if (hi > lo) {
    std::vector<const void *> srcs(static_cast<size_t>(p));
    for (int64_t j = 0; j < p; ++j)
      srcs[size_t(j)] = at(addr(a[size_t(2 * j)]), lo * es);
    check(ctx,
          Ops->reduce(dtype, op, srcs.data(), int(p),
                      const_cast<char *>(at(scratch, lo * es)), 1, hi - lo, 0,
                      0, &err),
          err);
  }
  settle(ctx, g);
  for (int64_t k = 0; k < p; ++k) {
    int64_t j = (g.index + k) % p;
    reduceChunk(count, p, es, j, lo, hi);
    copy(ctx, const_cast<char *>(at(out, lo * es)),
         at(addr(a[size_t(2 * j + 1)]), lo * es), (hi - lo) * es);
  }
  settle(ctx, g);
}

void SingleDeviceComm::allGather(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                                 const void *in, void *out, int64_t outer,
                                 int64_t inner) {
  if (!onDevice(ctx, {in, out}))
    return Host->allGather(ctx, g, dtype, in, out, outer, inner);
  int64_t p = g.size, row = inner * dtypeSize(dtype);
  std::vector<uint64_t> a =
      meet(ctx, g, {kAllGather, dtype, -1, outer, inner}, in);
  // Row o of member j goes to out[o][j].
  for (int64_t k = 0; k < p && row; ++k) {
    int64_t j = (g.index + k) % p;
    for (int64_t o = 0; o < outer; ++o)
      copy(ctx, const_cast<char *>(at(out, (o * p + j) * row)),
           at(addr(a[size_t(2 * j)]), o * row), row);
  }
  finish(ctx, g);
}

void SingleDeviceComm::reduceScatter(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                                     int32_t op, const void *in, void *out,
                                     int64_t outer, int64_t inner) {
  if (!onDevice(ctx, {in, out}))
    return Host->reduceScatter(ctx, g, dtype, op, in, out, outer, inner);
  int64_t p = g.size, es = dtypeSize(dtype);
  std::vector<uint64_t> a =
      meet(ctx, g, {kReduceScatter, dtype, op, outer, inner}, in);
  if (outer * inner != 0) {
    // out[o] = op over j of in_j[o][my index]: one strided reduction.
    std::vector<const void *> srcs(static_cast<size_t>(p));
    for (int64_t j = 0; j < p; ++j)
      srcs[size_t(j)] = at(addr(a[size_t(2 * j)]), g.index * inner * es);
    std::string err;
    check(ctx,
          Ops->reduce(dtype, op, srcs.data(), int(p), out, outer, inner,
                      p * inner, inner, &err),
          err);
  }
  finish(ctx, g);
}

void SingleDeviceComm::allToAll(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                                const void *in, void *out, int64_t block) {
  if (!onDevice(ctx, {in, out}))
    return Host->allToAll(ctx, g, dtype, in, out, block);
  int64_t p = g.size, bb = block * dtypeSize(dtype);
  std::vector<uint64_t> a = meet(ctx, g, {kAllToAll, dtype, -1, block, -1}, in);
  // Block j of out comes from block (my index) of member j.
  for (int64_t k = 0; k < p && bb; ++k) {
    int64_t j = (g.index + k) % p;
    copy(ctx, const_cast<char *>(at(out, j * bb)),
         at(addr(a[size_t(2 * j)]), g.index * bb), bb);
  }
  finish(ctx, g);
}

void SingleDeviceComm::barrier(loom_rt_ctx &ctx, Group &g) {
  // The stream too: work issued before a barrier is done after it.
  settle(ctx, g);
}

// Point to point on device buffers: the sender waits for its stream and
// posts a host message with the address and size (eager, never blocks); the
// receiver copies from the sender's buffer, waits for its stream and
// acknowledges; the sender returns after the acknowledgement, when its
// buffer may be reused.

void SingleDeviceComm::awaitAck(loom_rt_ctx &ctx, int64_t dst, int64_t tag) {
  int64_t ack = 0;
  Host->recv(ctx, LOOM_RT_I64, &ack, 1, dst, ackTag(tag));
}

void SingleDeviceComm::takeRecv(loom_rt_ctx &ctx, void *buf, int64_t bytes,
                                int64_t src, int64_t tag) {
  copy(ctx, buf, addr(takeRecord(ctx, bytes, src, tag)), bytes);
  sync(ctx);
  int64_t ack = 1;
  Host->send(ctx, LOOM_RT_I64, &ack, 1, src, ackTag(tag));
}

void SingleDeviceComm::send(loom_rt_ctx &ctx, int32_t dtype, const void *buf,
                            int64_t count, int64_t dst, int64_t tag) {
  if (!onDevice(ctx, {buf}))
    return Host->send(ctx, dtype, buf, count, dst, tag);
  sync(ctx);
  postRecord(ctx, buf, count * dtypeSize(dtype), dst, tag);
  awaitAck(ctx, dst, tag);
}

void SingleDeviceComm::recv(loom_rt_ctx &ctx, int32_t dtype, void *buf,
                            int64_t count, int64_t src, int64_t tag) {
  if (!onDevice(ctx, {buf}))
    return Host->recv(ctx, dtype, buf, count, src, tag);
  takeRecv(ctx, buf, count * dtypeSize(dtype), src, tag);
}

void SingleDeviceComm::sendRecv(loom_rt_ctx &ctx, int32_t dtype,
                                const void *sendBuf, int64_t sendCount,
                                int64_t dst, void *recvBuf, int64_t recvCount,
                                int64_t src, int64_t tag) {
  if (!onDevice(ctx, {sendBuf, recvBuf}))
    return Host->sendRecv(ctx, dtype, sendBuf, sendCount, dst, recvBuf,
                          recvCount, src, tag);
  int64_t es = dtypeSize(dtype);
  // The record goes out first (eager), so a ring of sendrecvs never waits
  // on itself; the acknowledgement is awaited last.
  sync(ctx);
  postRecord(ctx, sendBuf, sendCount * es, dst, tag);
  takeRecv(ctx, recvBuf, recvCount * es, src, tag);
  awaitAck(ctx, dst, tag);
}

void DeviceCommBase::isend(loom_rt_ctx &ctx, int32_t dtype, const void *buf,
                           int64_t count, int64_t dst, int64_t tag,
                           P2PRequest &req) {
  if (onDevice(ctx, {buf}))
    failCurrent(ctx, "non-blocking send of a device buffer: not supported by "
                     "the cuda backend (pipeline boundaries "
                     "are host arrays; use loom_rt_send)");
  Host->isend(ctx, dtype, buf, count, dst, tag, req);
}

void DeviceCommBase::irecv(loom_rt_ctx &ctx, int32_t dtype, void *buf,
                           int64_t count, int64_t src, int64_t tag,
                           P2PRequest &req) {
  if (onDevice(ctx, {buf}))
    failCurrent(ctx, "non-blocking receive into a device buffer: not "
                     "supported by the cuda backend (pipeline "
                     "boundaries are host arrays; use loom_rt_recv)");
  Host->irecv(ctx, dtype, buf, count, src, tag, req);
}

void DeviceCommBase::wait(loom_rt_ctx &ctx, P2PRequest &req) {
  Host->wait(ctx, req);
}

//===----------------------------------------------------------------------===//
// Launching
//===----------------------------------------------------------------------===//

WrapComm singleDeviceComms(MakeDeviceOps makeOps) {
  return [makeOps =
              std::move(makeOps)](int rank, std::unique_ptr<Comm> host,
                                  std::string *err) -> std::unique_ptr<Comm> {
    std::unique_ptr<DeviceOps> ops = makeOps(rank, err);
    if (!ops)
      return nullptr;
    return std::make_unique<SingleDeviceComm>(std::move(host), std::move(ops));
  };
}

WrapComm singleDeviceComms(int ordinal) {
  return singleDeviceComms([ordinal](int, std::string *err) {
    std::unique_ptr<DeviceOps> ops = CudaDeviceOps::create(ordinal, err);
    return ops;
  });
}

int runSingleDevice(int nranks, std::vector<int64_t> mesh, int ordinal,
                    const RankBody &body, LaunchOptions options,
                    LaunchResult *result) {
  options.wrapComm = singleDeviceComms(ordinal);
  return runThreads(nranks, std::move(mesh), body, options, result);
}

} // namespace loom::rt
