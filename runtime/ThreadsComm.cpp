//===- runtime/ThreadsComm.cpp - Shared-memory communicator -----*- C++ -*-===//

#include "ThreadsComm.h"
#include "DType.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <sstream>
#include <thread>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace loom::rt {
namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

void futexWait(std::atomic<uint32_t> *addr, uint32_t expected, long ns) {
  timespec ts{0, ns};
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(addr), FUTEX_WAIT_PRIVATE,
          expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t> *addr) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(addr), FUTEX_WAKE_PRIVATE,
          0x7fffffff, nullptr, nullptr, 0);
}

/// How often a sleeping waiter re-checks the abort flag and its deadline.
constexpr long kSleepSliceNs = 2'000'000; // 2 ms

std::string fmtSeconds(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

} // namespace

struct alignas(64) Slot {
  const void *in = nullptr;
  void *out = nullptr;
  /// The signature published before barrier number n of this member is
  /// sig[n & 1]: a member writes the next one only after every member has
  /// passed the barrier that follows the reads of this one.
  CollSig sig[2];
  std::atomic<uint64_t> arrivals{0}; ///< barriers entered by this member
};

struct ThreadGroupShared {
  int64_t p = 1;
  std::vector<int64_t> members;
  alignas(64) std::atomic<uint32_t> count{0};
  alignas(64) std::atomic<uint32_t> gen{0};
  std::atomic<uint32_t> sleepers{0};
  std::unique_ptr<Slot[]> slots;
  char *staging = nullptr; ///< [2][p][kSmallBytes]

  explicit ThreadGroupShared(const std::vector<int64_t> &m)
      : p(int64_t(m.size())), members(m), slots(new Slot[m.size()]) {
    staging = static_cast<char *>(
        std::aligned_alloc(64, size_t(2 * p * ThreadsComm::kSmallBytes)));
  }
  ~ThreadGroupShared() { std::free(staging); }
  char *stage(uint64_t parity, int64_t member) {
    return staging + ((parity & 1) * p + member) * ThreadsComm::kSmallBytes;
  }
};

namespace {

struct ThreadGroupImpl final : GroupImpl {
  ThreadGroupShared *sh = nullptr;
  uint64_t arrivals = 0;   ///< barriers entered by this rank
  uint64_t smallCalls = 0; ///< parity of the staging buffer
};

ThreadGroupShared &shared(Group &g) {
  return *static_cast<ThreadGroupImpl &>(*g.impl).sh;
}

/// The group barrier: sense-reversing through a generation counter. Spins
/// briefly, yields, then sleeps on a futex in short slices, checking the
/// job's abort flag and the deadline between slices.
void groupBarrier(loom_rt_ctx &ctx, ThreadWorld &world, Group &g) {
  auto &impl = static_cast<ThreadGroupImpl &>(*g.impl);
  ThreadGroupShared &sh = *impl.sh;
  if (sh.p == 1)
    return;
  uint64_t myArrival = ++impl.arrivals;
  sh.slots[g.index].arrivals.store(myArrival, std::memory_order_relaxed);
  uint32_t gen = sh.gen.load(std::memory_order_acquire);
  if (sh.count.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(sh.p)) {
    sh.count.store(0, std::memory_order_relaxed);
    sh.gen.store(gen + 1, std::memory_order_seq_cst);
    if (sh.sleepers.load(std::memory_order_seq_cst))
      futexWakeAll(&sh.gen);
    return;
  }
  // Spin (pause) for a few microseconds, then poll with sched_yield (which
  // lets a descheduled peer run on an oversubscribed machine) for up to
  // ~1 ms, then sleep on the futex.
  // Spin (pause) for a few microseconds, then poll with sched_yield (which
  // lets a descheduled peer run on an oversubscribed machine), then sleep on
  // the futex. Durations: ThreadWorld (LOOM_RT_SPIN_US / LOOM_RT_YIELD_US).
  int64_t start = loom_rt_now_ns();
  int64_t spinUntil = start + world.spinNs();
  for (int i = 0; world.spinNs() > 0; ++i) {
    if (sh.gen.load(std::memory_order_acquire) != gen)
      return;
    if (world.spinPause())
      cpuRelax();
    if ((i & 63) == 63 && loom_rt_now_ns() >= spinUntil)
      break;
  }
  int64_t yieldUntil = start + world.spinNs() + world.yieldNs();
  for (int i = 0;; ++i) {
    if (sh.gen.load(std::memory_order_acquire) != gen)
      return;
    if ((i & 7) == 7 && (loom_rt_now_ns() >= yieldUntil || world.aborted()))
      break;
    sched_yield();
  }
  int64_t deadline = deadlineAfter(ctx.timeoutSeconds);
  while (true) {
    if (sh.gen.load(std::memory_order_acquire) != gen)
      return;
    if (world.aborted())
      failCurrent(ctx, "stopped because another rank failed");
    if (loom_rt_now_ns() > deadline) {
      std::string missing;
      for (int64_t j = 0; j < sh.p; ++j)
        if (sh.slots[j].arrivals.load(std::memory_order_relaxed) < myArrival)
          missing +=
              (missing.empty() ? "" : ",") + std::to_string(sh.members[j]);
      failCurrent(ctx, "timed out after " + fmtSeconds(ctx.timeoutSeconds) +
                           " s waiting for group member rank(s) " +
                           (missing.empty() ? "?" : missing) +
                           " (timeout: loom_rt_set_timeout or "
                           "LOOM_COLLECTIVE_TIMEOUT_S)");
    }
    sh.sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (sh.gen.load(std::memory_order_seq_cst) == gen)
      futexWait(&sh.gen, gen, kSleepSliceNs);
    sh.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

/// The first barrier of a collective: publishes what this rank calls and
/// fails every member if any member calls something else.
void meet(loom_rt_ctx &ctx, ThreadWorld &world, Group &g, const CollSig &mine) {
  auto &impl = static_cast<ThreadGroupImpl &>(*g.impl);
  ThreadGroupShared &sh = *impl.sh;
  if (sh.p == 1)
    return;
  uint64_t n = impl.arrivals + 1;
  sh.slots[g.index].sig[n & 1] = mine;
  groupBarrier(ctx, world, g);
  for (int64_t j = 0; j < sh.p; ++j) {
    const CollSig &theirs = sh.slots[j].sig[n & 1];
    if (j == g.index || theirs == mine)
      continue;
    failCurrent(ctx,
                collectiveMismatch(sh.members, mine, sh.members[j], theirs));
  }
}

/// Marks a phase in which this rank reads peers' buffers (see
/// ThreadWorld::Readers).
struct ReadPhase {
  ThreadWorld &world;
  bool active = true;
  ReadPhase(loom_rt_ctx &ctx, ThreadWorld &w) : world(w) {
    world.Readers.fetch_add(1, std::memory_order_seq_cst);
    if (world.aborted()) {
      end();
      failCurrent(ctx, "stopped because another rank failed");
    }
  }
  void end() {
    if (active)
      world.Readers.fetch_sub(1, std::memory_order_seq_cst);
    active = false;
  }
  ~ReadPhase() { end(); }
};

/// Chunk [lo, hi) of member i when count elements are split in p pieces
/// aligned to 64 bytes.
void chunk(int64_t count, int64_t p, int64_t es, int64_t i, int64_t &lo,
           int64_t &hi) {
  int64_t align = std::max<int64_t>(1, 64 / es);
  int64_t per = ((count + p - 1) / p + align - 1) / align * align;
  lo = std::min(i * per, count);
  hi = std::min(lo + per, count);
}

} // namespace

//===----------------------------------------------------------------------===//
// ThreadWorld
//===----------------------------------------------------------------------===//

ThreadWorld::ThreadWorld(int nranks, OnFailure onFailure, bool quiet)
    : NRanks(nranks), Mode(onFailure), Quiet(quiet) {
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  auto envUs = [](const char *name, int64_t dflt) {
    const char *v = std::getenv(name);
    return (v && *v ? std::max<int64_t>(0, std::atoll(v)) : dflt) * 1000;
  };
  // Spinning only pays when every rank can own a core.
  SpinNs = envUs("LOOM_RT_SPIN_US", unsigned(nranks) <= hw ? 100 : 2);
  YieldNs = envUs("LOOM_RT_YIELD_US", 1000);
  for (int i = 0; i < nranks; ++i)
    Mailboxes.push_back(std::make_unique<Mailbox>());
}

ThreadWorld::~ThreadWorld() = default;

bool ThreadWorld::recordFailure(const std::string &message) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(Mu);
    first = Messages.empty();
    Messages.push_back(message);
  }
  Aborted.store(true, std::memory_order_release);
  // Wake mailbox waiters so they notice quickly.
  for (auto &mb : Mailboxes)
    mb->cv.notify_all();
  return first;
}

std::string ThreadWorld::firstFailure() {
  std::lock_guard<std::mutex> lock(Mu);
  return Messages.empty() ? std::string() : Messages.front();
}

std::vector<std::string> ThreadWorld::failures() {
  std::lock_guard<std::mutex> lock(Mu);
  return Messages;
}

ThreadGroupShared *ThreadWorld::groupFor(uint64_t mask,
                                         const std::vector<int64_t> &members) {
  std::lock_guard<std::mutex> lock(Mu);
  auto &slot = Groups[{mask, members.front()}];
  if (!slot)
    slot = std::make_unique<ThreadGroupShared>(members);
  return slot.get();
}

//===----------------------------------------------------------------------===//
// ThreadsComm
//===----------------------------------------------------------------------===//

std::unique_ptr<GroupImpl> ThreadsComm::createGroup(loom_rt_ctx &,
                                                    const Group &group) {
  auto impl = std::make_unique<ThreadGroupImpl>();
  impl->sh = World.groupFor(group.mask, group.members);
  return impl;
}

void ThreadsComm::poll(loom_rt_ctx &ctx) {
  if (World.aborted())
    failCurrent(ctx, "stopped because another rank failed");
}

void ThreadsComm::fail(loom_rt_ctx &ctx, const std::string &message) {
  (void)ctx;
  World.recordFailure(message); // raises the abort flag (seq_cst)
  // Let peers finish reading our buffers before we unwind and free them.
  int64_t limit = loom_rt_now_ns() + 10'000'000'000;
  while (World.Readers.load(std::memory_order_seq_cst) != 0 &&
         loom_rt_now_ns() < limit)
    sched_yield();
  if (World.onFailure() == OnFailure::Exit) {
    std::fprintf(stderr, "%s\nloom-rt: job failed, exiting\n", message.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
  throw RankAborted{message};
}

void ThreadsComm::allReduce(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                            int32_t op, const void *in, void *out,
                            int64_t count) {
  int64_t es = dtypeSize(dtype);
  int64_t p = g.size;
  if (p == 1 || count == 0) {
    if (in != out && count)
      std::memcpy(out, in, size_t(count * es));
    if (p > 1)
      meet(ctx, World, g, {kAllReduce, dtype, op, count, -1});
    return;
  }
  ThreadGroupShared &sh = shared(g);
  auto &impl = static_cast<ThreadGroupImpl &>(*g.impl);
  int64_t bytes = count * es;

  if (bytes <= kSmallBytes) {
    uint64_t parity = impl.smallCalls++;
    std::memcpy(sh.stage(parity, g.index), in, size_t(bytes));
    meet(ctx, World, g, {kAllReduce, dtype, op, count, -1});
    const void *ins[64];
    std::vector<const void *> big;
    const void **srcs = ins;
    if (p > 64) {
      big.resize(p);
      srcs = big.data();
    }
    for (int64_t j = 0; j < p; ++j)
      srcs[j] = sh.stage(parity, j);
    reduceElements(dtype, op, out, srcs, int(p), count);
    return;
  }

  sh.slots[g.index].in = in;
  sh.slots[g.index].out = out;
  meet(ctx, World, g, {kAllReduce, dtype, op, count, -1});
  int64_t lo, hi;
  chunk(count, p, es, g.index, lo, hi);
  ReadPhase reduce(ctx, World);
  if (hi > lo) {
    std::vector<const void *> srcs(p);
    for (int64_t j = 0; j < p; ++j)
      srcs[j] = static_cast<const char *>(sh.slots[j].in) + lo * es;
    reduceElements(dtype, op, static_cast<char *>(out) + lo * es, srcs.data(),
                   int(p), hi - lo);
  }
  reduce.end();
  groupBarrier(ctx, World, g);
  ReadPhase gather(ctx, World);
  for (int64_t k = 1; k < p; ++k) {
    int64_t j = (g.index + k) % p; // stagger to spread the reads
    chunk(count, p, es, j, lo, hi);
    if (hi > lo)
      std::memcpy(static_cast<char *>(out) + lo * es,
                  static_cast<const char *>(sh.slots[j].out) + lo * es,
                  size_t((hi - lo) * es));
  }
  gather.end();
  groupBarrier(ctx, World, g);
}

void ThreadsComm::allGather(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                            const void *in, void *out, int64_t outer,
                            int64_t inner) {
  int64_t es = dtypeSize(dtype);
  int64_t p = g.size;
  if (p == 1) {
    if (outer * inner != 0)
      std::memcpy(out, in, size_t(outer * inner * es));
    return;
  }
  ThreadGroupShared &sh = shared(g);
  sh.slots[g.index].in = in;
  meet(ctx, World, g, {kAllGather, dtype, -1, outer, inner});
  ReadPhase read(ctx, World);
  int64_t rowBytes = inner * es;
  if (rowBytes) {
    for (int64_t k = 0; k < p; ++k) {
      int64_t j = (g.index + k) % p;
      const char *src = static_cast<const char *>(sh.slots[j].in);
      char *dst = static_cast<char *>(out) + j * rowBytes;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + o * p * rowBytes, src + o * rowBytes,
                    size_t(rowBytes));
    }
  }
  read.end();
  groupBarrier(ctx, World, g);
}

void ThreadsComm::reduceScatter(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                                int32_t op, const void *in, void *out,
                                int64_t outer, int64_t inner) {
  int64_t es = dtypeSize(dtype);
  int64_t p = g.size;
  if (p == 1) {
    if (outer * inner != 0)
      std::memcpy(out, in, size_t(outer * inner * es));
    return;
  }
  ThreadGroupShared &sh = shared(g);
  sh.slots[g.index].in = in;
  meet(ctx, World, g, {kReduceScatter, dtype, op, outer, inner});
  ReadPhase read(ctx, World);
  if (inner) {
    std::vector<const void *> srcs(p);
    for (int64_t o = 0; o < outer; ++o) {
      int64_t off = ((o * p) + g.index) * inner * es;
      for (int64_t j = 0; j < p; ++j)
        srcs[j] = static_cast<const char *>(sh.slots[j].in) + off;
      reduceElements(dtype, op, static_cast<char *>(out) + o * inner * es,
                     srcs.data(), int(p), inner);
    }
  }
  read.end();
  groupBarrier(ctx, World, g);
}

void ThreadsComm::allToAll(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                           const void *in, void *out, int64_t block) {
  int64_t bb = block * dtypeSize(dtype);
  int64_t p = g.size;
  if (p == 1) {
    if (bb)
      std::memcpy(out, in, size_t(bb));
    return;
  }
  ThreadGroupShared &sh = shared(g);
  sh.slots[g.index].in = in;
  meet(ctx, World, g, {kAllToAll, dtype, -1, block, -1});
  ReadPhase read(ctx, World);
  if (bb)
    for (int64_t k = 0; k < p; ++k) {
      int64_t j = (g.index + k) % p;
      std::memcpy(static_cast<char *>(out) + j * bb,
                  static_cast<const char *>(sh.slots[j].in) + g.index * bb,
                  size_t(bb));
    }
  read.end();
  groupBarrier(ctx, World, g);
}

void ThreadsComm::barrier(loom_rt_ctx &ctx, Group &g) {
  meet(ctx, World, g, {kBarrier, -1, -1, -1, -1});
}

void ThreadsComm::send(loom_rt_ctx &ctx, int32_t dtype, const void *buf,
                       int64_t count, int64_t dst, int64_t tag) {
  size_t bytes = size_t(count * dtypeSize(dtype));
  ThreadWorld::Message msg{ctx.rank, tag, std::vector<char>(bytes)};
  if (bytes)
    std::memcpy(msg.data.data(), buf, bytes);
  ThreadWorld::Mailbox &mb = World.mailbox(dst);
  {
    std::lock_guard<std::mutex> lock(mb.mu);
    mb.queue.push_back(std::move(msg));
  }
  mb.cv.notify_all();
}

void ThreadsComm::recv(loom_rt_ctx &ctx, int32_t dtype, void *buf,
                       int64_t count, int64_t src, int64_t tag) {
  size_t bytes = size_t(count * dtypeSize(dtype));
  ThreadWorld::Mailbox &mb = World.mailbox(ctx.rank);
  int64_t deadline = deadlineAfter(ctx.timeoutSeconds);
  std::unique_lock<std::mutex> lock(mb.mu);
  while (true) {
    for (auto it = mb.queue.begin(); it != mb.queue.end(); ++it) {
      if (it->src != src || it->tag != tag)
        continue;
      if (it->data.size() != bytes) {
        size_t got = it->data.size();
        lock.unlock();
        failCurrent(ctx, "size mismatch: rank " + std::to_string(src) +
                             " sent " + std::to_string(got) +
                             " bytes, expected " + std::to_string(bytes));
      }
      if (bytes)
        std::memcpy(buf, it->data.data(), bytes);
      mb.queue.erase(it);
      return;
    }
    if (World.aborted()) {
      lock.unlock();
      failCurrent(ctx, "stopped because another rank failed");
    }
    if (loom_rt_now_ns() > deadline) {
      lock.unlock();
      failCurrent(ctx, "timed out after " + fmtSeconds(ctx.timeoutSeconds) +
                           " s waiting for a message from rank " +
                           std::to_string(src));
    }
    mb.cv.wait_for(lock, std::chrono::milliseconds(5));
  }
}

void ThreadsComm::sendRecv(loom_rt_ctx &ctx, int32_t dtype, const void *sendBuf,
                           int64_t sendCount, int64_t dst, void *recvBuf,
                           int64_t recvCount, int64_t src, int64_t tag) {
  send(ctx, dtype, sendBuf, sendCount, dst, tag); // eager: never blocks
  recv(ctx, dtype, recvBuf, recvCount, src, tag);
}

void ThreadsComm::isend(loom_rt_ctx &ctx, int32_t dtype, const void *buf,
                        int64_t count, int64_t dst, int64_t tag, P2PRequest &) {
  send(ctx, dtype, buf, count, dst, tag); // eager: complete on return
}

void ThreadsComm::irecv(loom_rt_ctx &, int32_t, void *, int64_t, int64_t,
                        int64_t, P2PRequest &) {
  // Matched at the wait: the message waits in this rank's mailbox.
}

void ThreadsComm::wait(loom_rt_ctx &ctx, P2PRequest &req) {
  if (!req.isSend)
    recv(ctx, req.dtype, req.buf, req.count, req.peer, req.tag);
}

} // namespace loom::rt
