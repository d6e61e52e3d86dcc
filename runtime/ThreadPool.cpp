//===- runtime/ThreadPool.cpp - Threads inside one rank ----------*- C++
//-*-===//
//
// A fork-join pool for loom_rt_parallel_for (abi.h). Generated code calls it
// for every big parallel loop, hundreds of times per decoded token, so a
// call must cost microseconds: idle workers spin for a short while on the
// job counter before they sleep on a condition variable, and the caller
// runs the first chunk itself. While the rank is in an OpenBLAS call the
// workers sleep (after the spin), so BLAS threads and pool workers never
// compete for long: OpenBLAS gets the rank's thread count for its calls
// (Gemm.cpp) and the pool is idle then.
//
//===----------------------------------------------------------------------===//

#include "ThreadPool.h"

#include "Comm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <mutex>

namespace loom::rt {

namespace {

/// True on a pool worker, and on a caller while it runs a parallelFor:
/// a parallelFor from there runs serially (nested parallelism is refused).
thread_local bool InParallel = false;

/// How long an idle worker spins for the next job before it sleeps.
constexpr int64_t kSpinNs = 50000;

/// glibc serves allocations below this from its heaps (keepFreedBuffers).
constexpr int kKeepBelowBytes = 32 << 20;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Pins the calling thread to `cpu`; false where the OS refuses or has no
/// affinity API.
bool pinCurrentThread(int cpu) {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
#else
  (void)cpu;
  return false;
#endif
}

int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  long n = std::strtol(v, &end, 10);
  return end && *end == 0 ? int(n) : fallback;
}

} // namespace

std::vector<int> availableCpus() {
  std::vector<int> cpus;
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set))
        cpus.push_back(c);
#endif
  if (cpus.empty()) {
    int n = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int c = 0; c < n; ++c)
      cpus.push_back(c);
  }
  return cpus;
}

int mpiLocalRanks() {
  for (const char *name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
        "MV2_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"})
    if (int n = envInt(name, 0); n > 0)
      return n;
  return 1;
}

int mpiLocalRank() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"})
    if (int n = envInt(name, -1); n >= 0)
      return n;
  return 0;
}

int defaultThreadsPerRank(int localRanks) {
  int cpus = int(availableCpus().size());
  return std::max(1, cpus / std::max(1, localRanks));
}

std::vector<int64_t> ThreadPool::partition(int64_t n, int64_t grain,
                                           int threads) {
  std::vector<int64_t> bounds{0};
  if (n <= 0)
    return bounds;
  grain = std::max<int64_t>(1, grain);
  // Every chunk has at least `grain` indices (one chunk when n < 2 grain).
  int64_t chunks = std::clamp<int64_t>(n / grain, 1, std::max(1, threads));
  for (int64_t i = 1; i <= chunks; ++i)
    bounds.push_back(int64_t(__int128(n) * i / chunks));
  return bounds;
}

ThreadPool::ThreadPool(int threads, std::vector<int> cpus, loom_rt_ctx *ctx)
    : Size(std::max(1, threads)), Ctx(ctx) {
  if (Size > 1 && !cpus.empty()) {
#ifdef __linux__
    Pinned = pinCurrentThread(cpus[0]);
    if (!Pinned)
      PinNote = "pthread_setaffinity_np refused CPU " + std::to_string(cpus[0]);
#else
    PinNote = "this OS has no thread affinity API";
#endif
  }
  Workers.reserve(Size - 1);
  for (int i = 1; i < Size; ++i) {
    int cpu = Pinned ? cpus[size_t(i) % cpus.size()] : -1;
    Workers.emplace_back([this, cpu] {
      if (cpu >= 0)
        pinCurrentThread(cpu);
      workerMain();
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(Mu);
    Stop = true;
  }
  WakeCv.notify_all();
  for (std::thread &t : Workers)
    t.join();
}

void ThreadPool::runChunk(int index) {
  try {
    JobBody(JobClosure, Bounds[size_t(index)], Bounds[size_t(index) + 1]);
  } catch (...) {
    std::lock_guard<std::mutex> lock(ErrorMu);
    if (!Error)
      Error = std::current_exception();
  }
}

void ThreadPool::runClaims(uint32_t gen) {
  for (;;) {
    uint64_t cur = Claim.load(std::memory_order_acquire);
    if (uint32_t(cur >> 32) != gen)
      return;
    int index = int(uint32_t(cur));
    if (index >= NumChunks.load(std::memory_order_acquire))
      return;
    if (!Claim.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel))
      continue;
    runChunk(index);
    DoneChunks.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::workerMain() {
  ThreadContextScope current(Ctx);
  InParallel = true;
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = Generation.load(std::memory_order_acquire);
    if (gen == seen) {
      // Spin a little (the next loop of the program usually follows within
      // microseconds), then sleep until the caller bumps the generation.
      int64_t start = loom_rt_now_ns();
      for (int spin = 1;; ++spin) {
        cpuRelax();
        gen = Generation.load(std::memory_order_acquire);
        if (gen != seen)
          break;
        if ((spin & 255) == 0 && loom_rt_now_ns() - start > kSpinNs) {
          std::unique_lock<std::mutex> lock(Mu);
          WakeCv.wait(lock, [&] {
            return Stop || Generation.load(std::memory_order_acquire) != seen;
          });
          if (Stop)
            return;
          gen = Generation.load(std::memory_order_acquire);
          break;
        }
      }
    }
    seen = gen;
    runClaims(gen);
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, Body body,
                             void *closure) {
  if (n <= 0)
    return;
  bool expected = false;
  if (Size == 1 || n < 2 * std::max<int64_t>(1, grain) || InParallel ||
      !Busy.compare_exchange_strong(expected, true)) {
    body(closure, 0, n); // one chunk, a nested call, or another caller
    return;
  }
  // The new generation's claim counter goes first: a worker still inside
  // runClaims of the previous job (it lost the race for the last chunk and
  // is about to retry its compare-exchange) must fail against it rather than
  // claim an index of this job before NumChunks, Bounds and DoneChunks are
  // set — that ran a chunk twice, DoneChunks overshot `chunks` and the wait
  // below never ended (seen as a hang of SmolLM2 decode on 2 threads).
  uint32_t gen = Generation.load(std::memory_order_relaxed) + 1;
  Claim.store(uint64_t(gen) << 32, std::memory_order_seq_cst);
  // Up to 4 chunks per thread: a thread that the OS delays (a shared host)
  // leaves its later chunks to the others.
  Bounds = partition(n, grain, 4 * Size);
  JobBody = body;
  JobClosure = closure;
  Error = nullptr;
  int chunks = int(Bounds.size()) - 1;
  NumChunks.store(chunks, std::memory_order_relaxed);
  DoneChunks.store(0, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(Mu);
    Generation.store(gen, std::memory_order_release);
  }
  WakeCv.notify_all();
  InParallel = true;
  runClaims(gen);
  InParallel = false;
  // The closure lives in the caller's frame: wait for every claimed chunk
  // even when one failed.
  for (int spin = 1; DoneChunks.load(std::memory_order_acquire) != chunks;
       ++spin) {
    if (spin < 4096)
      cpuRelax();
    else
      std::this_thread::yield();
  }
  std::exception_ptr error = Error;
  Error = nullptr;
  Busy.store(false, std::memory_order_release);
  if (error)
    std::rethrow_exception(error);
}

std::string keepFreedBuffers() {
#ifdef __GLIBC__
  static std::string note; // written once, under call_once
  static std::once_flag once;
  std::call_once(once, [] {
    const char *tunables = std::getenv("GLIBC_TUNABLES");
    if (envInt("LOOM_MALLOC_KEEP", 1) == 0)
      note = "not set ($LOOM_MALLOC_KEEP=0)";
    else if (std::getenv("MALLOC_MMAP_THRESHOLD_") ||
             std::getenv("MALLOC_TRIM_THRESHOLD_") ||
             (tunables && (std::strstr(tunables, "mmap_threshold") ||
                           std::strstr(tunables, "trim_threshold"))))
      note = "left as the environment sets it";
    else if (mallopt(M_MMAP_THRESHOLD, kKeepBelowBytes) == 1 &&
             mallopt(M_TRIM_THRESHOLD, 2 * kKeepBelowBytes) == 1)
      note = "buffers below 32 MiB from the heap, 64 MiB kept";
    else
      note = "mallopt refused";
  });
  return note;
#else
  return "not glibc: the C library's defaults";
#endif
}

void startRankThreads(loom_rt_ctx &ctx, int threads, int localRank,
                      int localRanks) {
  keepFreedBuffers();
  if (threads <= 0)
    threads = defaultThreadsPerRank(localRanks);
  std::vector<int> cpus = availableCpus();
  std::vector<int> mine;
  std::string note;
  if (threads > 1) {
    if (envInt("LOOM_PIN_THREADS", 1) == 0) {
      note = "not pinned ($LOOM_PIN_THREADS=0)";
    } else if (int64_t(threads) * std::max(1, localRanks) >
               int64_t(cpus.size())) {
      note = "not pinned: " + std::to_string(threads) + " threads x " +
             std::to_string(localRanks) + " local ranks > " +
             std::to_string(cpus.size()) + " CPUs";
    } else {
      for (int i = 0; i < threads; ++i)
        mine.push_back(cpus[size_t(localRank * threads + i) % cpus.size()]);
    }
  }
  ctx.numThreads = threads;
  ctx.pool = std::make_shared<ThreadPool>(threads, mine, &ctx);
  ctx.pinNote = note.empty() ? ctx.pool->pinNote() : note;
}

int rankThreads(const loom_rt_ctx *ctx) {
  return ctx && ctx->pool ? ctx->pool->size() : 1;
}
std::string rankThreadsPinNote(const loom_rt_ctx *ctx) {
  return ctx ? ctx->pinNote : std::string();
}
int availableCores() { return int(availableCpus().size()); }
int defaultRankThreads(int localRanks) {
  return defaultThreadsPerRank(localRanks);
}

} // namespace loom::rt

using namespace loom::rt;

extern "C" {

void loom_rt_parallel_for(loom_rt_ctx *ctx, int64_t n, int64_t grain,
                          void (*body)(void *closure, int64_t begin,
                                       int64_t end),
                          void *closure) {
  if (!ctx)
    ctx = threadContext();
  if (n <= 0)
    return;
  if (!ctx || !ctx->pool) {
    body(closure, 0, n);
    return;
  }
  // $LOOM_PARALLEL_GRAIN replaces every grain (tests: split even the loops
  // of tiny models; measurements of the grain's effect).
  static const int64_t forced = envInt("LOOM_PARALLEL_GRAIN", 0);
  ctx->pool->parallelFor(n, forced > 0 ? forced : grain, body, closure);
}

int32_t loom_rt_num_threads(loom_rt_ctx *ctx) {
  if (!ctx)
    ctx = threadContext();
  return ctx && ctx->pool ? ctx->pool->size() : 1;
}

} // extern "C"
