//===- runtime/ThreadsComm.cpp - Shared-memory communicator -----*- C++ -*-===//

#include "ThreadsComm.h"
#include "DType.h"
#include "Sanitized.h"
#include "ThreadPool.h"

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

#ifdef LOOM_RT_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

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

/// One member's published state, on cache lines of its own. `seq` counts
/// the barriers the member has entered (mod 2^32); what it publishes for
/// barrier n (buffer pointers, the call's signature, its staging slot) is
/// written before seq becomes n (release) and read by peers after they see
/// it (acquire). A member writes what it publishes for barrier n + 2 only
/// after every member has entered barrier n + 1, i.e. finished reading what
/// was published for n: so signatures and staging are double-buffered by
/// the parity of the barrier number and no second barrier is needed to free
/// them.
struct alignas(64) Slot {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> sleepers{0}; ///< peers in a futex wait on seq
  std::atomic<int32_t> cpu{-1};      ///< sched_getcpu() at its last arrival
  const void *in = nullptr;
  void *out = nullptr;
  CollSig sig[2];
};

struct ThreadGroupShared {
  int64_t p = 1;
  std::vector<int64_t> members;
  std::unique_ptr<Slot[]> slots;
  char *staging = nullptr; ///< [p][2][kSmallBytes]

  explicit ThreadGroupShared(const std::vector<int64_t> &m)
      : p(int64_t(m.size())), members(m), slots(new Slot[m.size()]) {
    staging = static_cast<char *>(
        std::aligned_alloc(64, size_t(2 * p * ThreadsComm::kSmallBytes)));
  }
  ~ThreadGroupShared() { std::free(staging); }
  char *stage(int64_t member, uint64_t barrier) {
    return staging +
           (member * 2 + int64_t(barrier & 1)) * ThreadsComm::kSmallBytes;
  }
};

namespace {

struct ThreadGroupImpl final : GroupImpl {
  ThreadGroupShared *sh = nullptr;
  uint64_t arrivals = 0; ///< barriers entered by this rank
  /// Longest spin of a wait (0: none; see spinLimitNs) and the current
  /// adaptive budget: halved when a spin ends without the peer, doubled
  /// (up to the limit) when the peer comes while spinning.
  int64_t spinLimitNs = 0;
  int64_t spinBudgetNs = 0;
};

ThreadGroupShared &shared(Group &g) {
  return *static_cast<ThreadGroupImpl &>(*g.impl).sh;
}

int32_t currentCpu() {
  int c = sched_getcpu();
  return c < 0 ? -1 : int32_t(c);
}

/// Whether peer slot s has entered barrier n (wrap-around safe).
inline bool entered(const Slot &s, uint32_t n) {
  return int32_t(s.seq.load(std::memory_order_acquire) - n) >= 0;
}

/// Waits until member j of the group has entered barrier n (this rank
/// entered it at `start`, set here when 0): spin (within the adaptive budget,
/// and only while the peer last ran on another CPU: spinning while it waits for
/// this very CPU only delays it), then poll with sched_yield (which hands the
/// CPU to a descheduled peer on an oversubscribed machine), then sleep on the
/// member's futex in short slices, re-checking the job's abort flag and the
/// deadline.
void waitFor(loom_rt_ctx &ctx, ThreadWorld &world, ThreadGroupImpl &impl,
             int64_t j, uint32_t n, int64_t &start) {
  ThreadGroupShared &sh = *impl.sh;
  Slot &s = sh.slots[j];
  if (entered(s, n))
    return;
  if (start == 0)
    start = loom_rt_now_ns();
  if (impl.spinBudgetNs > 0) {
    int32_t peerCpu = s.cpu.load(std::memory_order_relaxed);
    if (peerCpu < 0 || peerCpu != currentCpu()) {
      int64_t until = start + impl.spinBudgetNs;
      for (int i = 1;; ++i) {
        if (entered(s, n)) {
          impl.spinBudgetNs = std::min(impl.spinLimitNs, impl.spinBudgetNs * 2);
          return;
        }
        if (world.spinPause())
          cpuRelax();
        if ((i & 63) == 0 && (loom_rt_now_ns() >= until || world.aborted()))
          break;
      }
    }
  }
  // Not caught by the spin: a spin as long as this wait would have caught
  // it if it was short (grow the budget to twice the wait), else it was
  // wasted (halve it).
  auto adapt = [&] {
    if (impl.spinLimitNs == 0)
      return;
    int64_t waited = loom_rt_now_ns() - start;
    impl.spinBudgetNs = waited <= impl.spinLimitNs / 2
                            ? std::max(impl.spinBudgetNs, 2 * waited)
                            : impl.spinBudgetNs / 2;
  };
  int64_t yieldUntil = loom_rt_now_ns() + world.yieldNs();
  for (int i = 1;; ++i) {
    if (entered(s, n))
      return adapt();
    if ((i & 7) == 0 && (loom_rt_now_ns() >= yieldUntil || world.aborted()))
      break;
    sched_yield();
  }
  int64_t deadline = deadlineAfter(ctx.timeoutSeconds);
  while (true) {
    uint32_t seen = s.seq.load(std::memory_order_seq_cst);
    if (int32_t(seen - n) >= 0)
      return adapt();
    if (world.aborted())
      failCurrent(ctx, "stopped because another rank failed");
    if (loom_rt_now_ns() > deadline) {
      std::string missing;
      for (int64_t k = 0; k < sh.p; ++k)
        if (!entered(sh.slots[k], n))
          missing +=
              (missing.empty() ? "" : ",") + std::to_string(sh.members[k]);
      failCurrent(ctx, "timed out after " + fmtSeconds(ctx.timeoutSeconds) +
                           " s waiting for group member rank(s) " +
                           (missing.empty() ? "?" : missing) +
                           " (timeout: loom_rt_set_timeout or "
                           "LOOM_COLLECTIVE_TIMEOUT_S)");
    }
    s.sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (s.seq.load(std::memory_order_seq_cst) == seen)
      futexWait(&s.seq, seen, kSleepSliceNs);
    s.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

/// The group barrier: this member enters barrier number ++arrivals and
/// waits until every member has. No shared counter: each member writes only
/// its own slot and reads the others'. Returns the barrier number.
uint64_t groupBarrier(loom_rt_ctx &ctx, ThreadWorld &world, Group &g) {
  auto &impl = static_cast<ThreadGroupImpl &>(*g.impl);
  ThreadGroupShared &sh = *impl.sh;
  uint64_t n = ++impl.arrivals;
  if (sh.p == 1)
    return n;
  Slot &me = sh.slots[g.index];
  me.cpu.store(currentCpu(), std::memory_order_relaxed);
  me.seq.store(uint32_t(n), std::memory_order_seq_cst);
  if (me.sleepers.load(std::memory_order_seq_cst))
    futexWakeAll(&me.seq);
  int64_t start = 0; // set by the first wait that is not over at once
  for (int64_t k = 1; k < sh.p; ++k)
    waitFor(ctx, world, impl, (g.index + k) % sh.p, uint32_t(n), start);
  return n;
}

/// The number the next groupBarrier of this rank in g will have (what the
/// data published for it is double-buffered by).
uint64_t nextBarrier(Group &g) {
  return static_cast<ThreadGroupImpl &>(*g.impl).arrivals + 1;
}

/// The first barrier of a collective: publishes what this rank calls and
/// fails every member if any member calls something else. Returns the
/// barrier number.
uint64_t meet(loom_rt_ctx &ctx, ThreadWorld &world, Group &g,
              const CollSig &mine) {
  auto &impl = static_cast<ThreadGroupImpl &>(*g.impl);
  ThreadGroupShared &sh = *impl.sh;
  uint64_t n = impl.arrivals + 1;
  if (sh.p == 1)
    return n;
  sh.slots[g.index].sig[n & 1] = mine;
  groupBarrier(ctx, world, g);
  for (int64_t j = 0; j < sh.p; ++j) {
    const CollSig &theirs = sh.slots[j].sig[n & 1];
    if (j == g.index || theirs == mine)
      continue;
    failCurrent(ctx,
                collectiveMismatch(sh.members, mine, sh.members[j], theirs));
  }
  return n;
}

/// The one barrier of a staged (small) collective: copies this rank's `bytes`
/// of `in` into its staging slot of the coming barrier, then meets. Returns
/// the barrier number: read member j's piece at stage(j, n).
uint64_t stageAndMeet(loom_rt_ctx &ctx, ThreadWorld &world, Group &g,
                      const CollSig &sig, const void *in, int64_t bytes) {
  uint64_t n = nextBarrier(g);
  if (bytes)
    std::memcpy(shared(g).stage(g.index, n), in, size_t(bytes));
  meet(ctx, world, g, sig);
  return n;
}

/// Up to 64 source pointers on the stack (no allocation per call).
struct Sources {
  const void *small[64];
  std::vector<const void *> big;
  const void **ptr;
  explicit Sources(int64_t p) : ptr(small) {
    if (p > 64) {
      big.resize(size_t(p));
      ptr = big.data();
    }
  }
  const void *&operator[](int64_t j) { return ptr[j]; }
};

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

} // namespace

//===----------------------------------------------------------------------===//
// ThreadWorld
//===----------------------------------------------------------------------===//

ThreadWorld::ThreadWorld(int nranks, OnFailure onFailure, bool quiet)
    : NRanks(nranks), Mode(onFailure), Quiet(quiet) {
  auto envUs = [](const char *name, int64_t dflt) {
    const char *v = std::getenv(name);
    return (v && *v ? std::max<int64_t>(0, std::atoll(v)) : dflt) * 1000;
  };
  const char *spin = std::getenv("LOOM_RT_SPIN_US");
  SpinFromEnv = spin && *spin;
  // Instrumented atomics make a spin slow and the sanitizer's own threads
  // need the CPU: sanitizer builds never spin unless asked to.
  SpinNs = envUs("LOOM_RT_SPIN_US", kSanitized ? 0 : kDefaultSpinUs);
  YieldNs = envUs("LOOM_RT_YIELD_US", 1000);
  const char *pause = std::getenv("LOOM_RT_SPIN_PAUSE");
  SpinPause = pause && *pause && std::atoi(pause) != 0;
  Cores = int(availableCpus().size());
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
  // seq_cst: a failing rank stores the flag, then reads Readers; a reader
  // raises Readers, then reads the flag. Both must be seq_cst so that one
  // of them sees the other (a release store may sit in the store buffer).
  Aborted.store(true, std::memory_order_seq_cst);
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

std::unique_ptr<GroupImpl> ThreadsComm::createGroup(loom_rt_ctx &ctx,
                                                    const Group &group) {
  auto impl = std::make_unique<ThreadGroupImpl>();
  impl->sh = World.groupFor(group.mask, group.members);
  // Spinning only pays when every thread of the job can own a core: else a
  // spinning rank holds the CPU that a peer (or a peer's worker) needs.
  int64_t threads = int64_t(World.size()) * std::max(1, ctx.numThreads);
  impl->spinLimitNs =
      World.spinFromEnv() || threads <= World.cores() ? World.spinNs() : 0;
  impl->spinBudgetNs = impl->spinLimitNs;
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
  int64_t bytes = count * es;
  Sources srcs(p);

  if (bytes <= kSmallBytes) {
    // Staged: one barrier; every member reduces all slots in member order
    // (the same bits everywhere, in place or not).
    uint64_t n = stageAndMeet(ctx, World, g, {kAllReduce, dtype, op, count, -1},
                              in, bytes);
    for (int64_t j = 0; j < p; ++j)
      srcs[j] = sh.stage(j, n);
    reduceElements(dtype, op, out, srcs.ptr, int(p), count);
    return;
  }

  sh.slots[g.index].in = in;
  sh.slots[g.index].out = out;
  meet(ctx, World, g, {kAllReduce, dtype, op, count, -1});
  int64_t lo, hi;
  reduceChunk(count, p, es, g.index, lo, hi);
  ReadPhase reduce(ctx, World);
  if (hi > lo) {
    for (int64_t j = 0; j < p; ++j)
      srcs[j] = static_cast<const char *>(sh.slots[j].in) + lo * es;
    reduceElements(dtype, op, static_cast<char *>(out) + lo * es, srcs.ptr,
                   int(p), hi - lo);
  }
  reduce.end();
  groupBarrier(ctx, World, g);
  ReadPhase gather(ctx, World);
  for (int64_t k = 1; k < p; ++k) {
    int64_t j = (g.index + k) % p; // stagger to spread the reads
    reduceChunk(count, p, es, j, lo, hi);
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
  int64_t rowBytes = inner * es;
  int64_t bytes = outer * rowBytes;
  CollSig sig{kAllGather, dtype, -1, outer, inner};
  // Copies row o of member j's `from` to its place in out.
  auto place = [&](int64_t j, const char *from) {
    char *dst = static_cast<char *>(out) + j * rowBytes;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + o * p * rowBytes, from + o * rowBytes,
                  size_t(rowBytes));
  };
  if (bytes <= kSmallBytes) {
    // Staged: one barrier; my own piece straight from `in`.
    uint64_t n = stageAndMeet(ctx, World, g, sig, in, bytes);
    if (bytes)
      for (int64_t j = 0; j < p; ++j)
        place(j, j == g.index ? static_cast<const char *>(in) : sh.stage(j, n));
    return;
  }
  sh.slots[g.index].in = in;
  meet(ctx, World, g, sig);
  ReadPhase read(ctx, World);
  for (int64_t k = 0; k < p; ++k) {
    int64_t j = (g.index + k) % p;
    place(j, static_cast<const char *>(sh.slots[j].in));
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
  int64_t bytes = outer * p * inner * es;
  CollSig sig{kReduceScatter, dtype, op, outer, inner};
  Sources srcs(p);
  // Reduces my block of every row from the members' full inputs `from(j)`,
  // in member order (the same bits as the large path).
  auto reduceMine = [&](auto from) {
    for (int64_t o = 0; o < outer; ++o) {
      int64_t off = ((o * p) + g.index) * inner * es;
      for (int64_t j = 0; j < p; ++j)
        srcs[j] = from(j) + off;
      reduceElements(dtype, op, static_cast<char *>(out) + o * inner * es,
                     srcs.ptr, int(p), inner);
    }
  };
  if (bytes <= kSmallBytes) {
    // Staged: one barrier.
    uint64_t n = stageAndMeet(ctx, World, g, sig, in, bytes);
    if (bytes)
      reduceMine([&](int64_t j) -> const char * { return sh.stage(j, n); });
    return;
  }
  sh.slots[g.index].in = in;
  meet(ctx, World, g, sig);
  ReadPhase read(ctx, World);
  reduceMine(
      [&](int64_t j) { return static_cast<const char *>(sh.slots[j].in); });
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
  CollSig sig{kAllToAll, dtype, -1, block, -1};
  // Copies my block of member j's `from` to its place in out.
  auto take = [&](int64_t j, const char *from) {
    std::memcpy(static_cast<char *>(out) + j * bb, from + g.index * bb,
                size_t(bb));
  };
  if (p * bb <= kSmallBytes) {
    // Staged: one barrier.
    uint64_t n = stageAndMeet(ctx, World, g, sig, in, p * bb);
    if (bb)
      for (int64_t j = 0; j < p; ++j)
        take(j, j == g.index ? static_cast<const char *>(in) : sh.stage(j, n));
    return;
  }
  sh.slots[g.index].in = in;
  meet(ctx, World, g, sig);
  ReadPhase read(ctx, World);
  for (int64_t k = 0; k < p; ++k) {
    int64_t j = (g.index + k) % p;
    take(j, static_cast<const char *>(sh.slots[j].in));
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
