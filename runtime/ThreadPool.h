//===- runtime/ThreadPool.h - Threads inside one rank ----------*- C++ -*-===//
//
// One pool per rank context: the rank's own thread plus N - 1 workers,
// created when the rank starts and joined when it ends. parallelFor splits
// [0, n) into at most 4 N contiguous chunks of at least `grain` indices that
// the calling thread and the workers claim one by one, and returns when all
// are done. Which thread runs an index never changes what it
// computes (the body owns its outputs), so results do not depend on N.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_THREADPOOL_H
#define LOOM_RUNTIME_THREADPOOL_H

#include "loom/runtime/abi.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace loom::rt {

class ThreadPool {
public:
  using Body = void (*)(void *closure, int64_t begin, int64_t end);

  /// A pool of `threads` (>= 1) threads counting the caller. `cpus`: the
  /// CPUs to pin thread i to (cpus[i % size]); empty: no pinning. `ctx` is
  /// the rank the workers run for (their threadContext()).
  ThreadPool(int threads, std::vector<int> cpus, loom_rt_ctx *ctx);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return Size; }
  /// Whether the workers (and the caller, at construction) were pinned, and
  /// why not when they were not.
  bool pinned() const { return Pinned; }
  const std::string &pinNote() const { return PinNote; }

  /// Runs body(closure, b, e) over a partition of [0, n). Nested calls
  /// (from inside a body, on any thread of the pool) run serially on the
  /// calling thread. An exception thrown by a body (a failing runtime call)
  /// is rethrown here after every chunk has finished.
  void parallelFor(int64_t n, int64_t grain, Body body, void *closure);

  /// The chunks parallelFor uses for (n, grain) on `threads` threads:
  /// boundaries b[0] = 0 < b[1] < ... < b[c] = n, c <= threads, every chunk
  /// at least `grain` long unless c == 1.
  static std::vector<int64_t> partition(int64_t n, int64_t grain, int threads);

private:
  void workerMain();
  /// Claims and runs chunks of job `gen` until none is left (or the job is
  /// no longer `gen`).
  void runClaims(uint32_t gen);
  void runChunk(int index);

  int Size;
  loom_rt_ctx *Ctx;
  bool Pinned = false;
  std::string PinNote;
  std::vector<std::thread> Workers;

  // The job being run: valid until its chunks are all done. Chunks are
  // claimed from Claim = (generation << 32) | next chunk, so a worker that
  // wakes late never touches a later job, and the caller runs the chunks
  // that no worker has claimed yet (a loaded host's slow wake-ups cost no
  // more than running serially).
  Body JobBody = nullptr;
  void *JobClosure = nullptr;
  std::vector<int64_t> Bounds;
  std::atomic<int> NumChunks{0};
  std::atomic<uint64_t> Claim{0};
  std::atomic<int> DoneChunks{0};
  std::atomic<uint32_t> Generation{0};
  std::atomic<bool> Busy{false};
  std::exception_ptr Error;
  std::mutex ErrorMu;

  std::mutex Mu;
  std::condition_variable WakeCv;
  bool Stop = false;
};

/// CPUs this process may run on (sched_getaffinity; all of
/// hardware_concurrency() where the OS has no affinity API).
std::vector<int> availableCpus();

/// Threads per rank when none are asked for: the available CPUs divided by
/// the ranks of this host (at least 1).
int defaultThreadsPerRank(int localRanks);

/// Ranks of this job on this host under mpirun ($OMPI_COMM_WORLD_LOCAL_SIZE,
/// $MPI_LOCALNRANKS, $SLURM_NTASKS_PER_NODE...; 1 if unknown) and this
/// process's index among them.
int mpiLocalRanks();
int mpiLocalRank();

/// Keeps the generated code's buffers mapped between runs (once per
/// process; glibc only): malloc serves allocations below 32 MiB from its
/// heaps instead of a fresh mmap each (M_MMAP_THRESHOLD), and keeps up to
/// 64 MiB of freed heap top instead of handing it back to the OS
/// (M_TRIM_THRESHOLD). Under glibc's dynamic defaults, runs from Python
/// (Bundle.run: a new rank thread per call) faulted in fresh zeroed pages
/// for their activation buffers on every call: about 1200 page faults per
/// bench/forward pass, a third of its CPU time; none with these settings
/// (docs/BENCHMARKS.md). Not set when the environment sets either
/// threshold, or with $LOOM_MALLOC_KEEP=0. Returns what was done.
std::string keepFreedBuffers();

/// Creates ctx's pool with `threads` threads (<= 0: the default for
/// `localRanks` ranks per host), pinning thread i of local rank `localRank`
/// to CPU (localRank * threads + i) when the CPUs suffice for every local
/// rank's threads. Called on the rank's own thread; calls
/// keepFreedBuffers() first.
void startRankThreads(loom_rt_ctx &ctx, int threads, int localRank,
                      int localRanks);

} // namespace loom::rt

#endif // LOOM_RUNTIME_THREADPOOL_H
