//===- runtime/ThreadsComm.h - Shared-memory communicator -------*- C++ -*-===//
//
// The `threads` communicator: N ranks as std::threads of one process.
//
// Each group has a rendezvous object shared by its members (created by the
// first member that uses the group): one slot per member on cache lines of
// its own (barrier counter, futex sleeper count, last CPU, published buffer
// pointers and call signature) and a double-buffered staging area. A
// barrier is per-member flags: enter n (release), wait for every other
// member's counter to reach n (spin while that member last ran on another
// CPU, within an adaptive budget; then sched_yield polling; then futex
// waits in 2 ms slices so that the abort flag and the deadline are
// re-checked). What a member publishes for barrier n is double-buffered by
// the parity of n (rewritten only after every member entered n + 1).
//
//  - small (input <= kSmallBytes) all_reduce / all_gather / reduce_scatter /
//    all_to_all: copy in -> my staging half; one barrier; read the peers'
//    halves (reductions in member order 0..p-1 on every member).
//  - all_reduce, large: publish in/out; barrier; reduce my 1/p chunk
//    reading every peer's input directly into my output; barrier; copy the
//    other chunks from their owners' outputs; barrier. (A reduce-scatter +
//    all-gather in shared memory: every byte is read from a peer once.)
//  - all_gather / reduce_scatter / all_to_all, large: publish; barrier; read
//    peers directly; barrier.
//  - send/recv: eager, the message is copied into the receiver's mailbox
//    (send never blocks). isend is send (complete at once); irecv records
//    the receive and its wait is the blocking recv (the message waits in
//    the mailbox meanwhile), so a rank computes while its peer sends.
//
// Failure: a shared abort flag. A failing rank records its message and sets
// the flag; every waiting rank sees it within a few ms and fails too. Before
// a failing rank unwinds it waits until no rank is in a peer-reading phase
// (ThreadWorld::Readers), so buffers are never freed under a reader.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_THREADSCOMM_H
#define LOOM_RUNTIME_THREADSCOMM_H

#include "Comm.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

namespace loom::rt {

struct ThreadGroupShared;

/// State shared by all ranks of one runThreads() job.
class ThreadWorld {
public:
  ThreadWorld(int nranks, OnFailure onFailure, bool quiet);
  ~ThreadWorld();

  int size() const { return NRanks; }

  /// Records a failure message and raises the abort flag. Returns true for
  /// the first failure of the job.
  bool recordFailure(const std::string &message);
  bool aborted() const { return Aborted.load(std::memory_order_acquire); }
  std::string firstFailure();
  std::vector<std::string> failures();

  /// The rendezvous of the group whose members are `members` (created once).
  ThreadGroupShared *groupFor(uint64_t mask,
                              const std::vector<int64_t> &members);

  struct Message {
    int64_t src;
    int64_t tag;
    std::vector<char> data;
  };
  struct Mailbox {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Message> queue;
  };
  Mailbox &mailbox(int64_t rank) { return *Mailboxes[rank]; }

  /// Ranks currently reading peers' buffers (between two barriers). A
  /// failing rank raises the abort flag, then waits for this to drop to 0
  /// before unwinding (and freeing its buffers), so no peer ever reads freed
  /// memory. A reader that sees the flag on entry backs out.
  std::atomic<int> Readers{0};

  OnFailure onFailure() const { return Mode; }
  bool quiet() const { return Quiet; }
  /// How long a barrier waiter may spin ($LOOM_RT_SPIN_US, default
  /// kDefaultSpinUs, 0 in sanitizer builds; with `pause` when
  /// $LOOM_RT_SPIN_PAUSE=1), then polls with sched_yield (default 1 ms;
  /// $LOOM_RT_YIELD_US) before sleeping on the futex. Without
  /// $LOOM_RT_SPIN_US a group whose job has more threads than cores() never
  /// spins.
  int64_t spinNs() const { return SpinNs; }
  bool spinFromEnv() const { return SpinFromEnv; }
  int64_t yieldNs() const { return YieldNs; }
  bool spinPause() const { return SpinPause; }
  int cores() const { return Cores; }
  static constexpr int64_t kDefaultSpinUs = 200;

private:
  int NRanks;
  OnFailure Mode;
  bool Quiet;
  int64_t SpinNs;
  int64_t YieldNs;
  bool SpinFromEnv = false;
  bool SpinPause = false;
  int Cores = 1;
  std::atomic<bool> Aborted{false};
  std::mutex Mu;
  std::vector<std::string> Messages;
  std::map<std::pair<uint64_t, int64_t>, std::unique_ptr<ThreadGroupShared>>
      Groups;
  std::vector<std::unique_ptr<Mailbox>> Mailboxes;
};

/// The per-rank communicator object.
class ThreadsComm final : public Comm {
public:
  explicit ThreadsComm(ThreadWorld &world) : World(world) {}
  const char *name() const override { return "threads"; }

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
  void poll(loom_rt_ctx &ctx) override;
  [[noreturn]] void fail(loom_rt_ctx &ctx, const std::string &message) override;

  /// Collectives with at most this many input bytes go through the
  /// one-barrier staging path.
  static constexpr int64_t kSmallBytes = 32 * 1024;

private:
  ThreadWorld &World;
};

} // namespace loom::rt

#endif // LOOM_RUNTIME_THREADSCOMM_H
