//===- loom/runtime/Runtime.h - C++ launcher and weight API -----*- C++ -*-===//
//
// The C++ side of the Loom runtime used by tools (loom-run) and tests: start N
// ranks over a communicator, run a per-rank body on each, collect failures;
// memory-map weight slices. Generated code only ever sees abi.h.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_RUNTIME_H
#define LOOM_RUNTIME_RUNTIME_H

#include "loom/Support/MappedFile.h"
#include "loom/runtime/abi.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace loom::rt {

class Comm;

/// The per-rank entry point: returns 0 on success. A non-zero return, an
/// exception, or loom_rt_abort() on any rank fails the whole job.
using RankBody = std::function<int(loom_rt_ctx *)>;

/// What a failing rank does with the threads communicator.
enum class OnFailure {
  /// The failing rank unwinds (C++ exception loom::rt::RankAborted through
  /// the runtime call); every other rank stops at its next (or current)
  /// runtime call within bounded time; runThreads() returns non-zero with
  /// every rank's message. Requires that generated code has unwind tables
  /// (code that LLVM emits without `nounwind` has them).
  Return,
  /// The failing rank prints its message and the process _Exit(1)s at once.
  Exit,
};

/// Makes rank `rank`'s communicator from its threads or MPI communicator (which
/// the result may keep for host buffers and the rendezvous, e.g. the
/// single-device CUDA communicator of runtime/cuda); null + *error fails the
/// job before any rank starts.
using WrapComm = std::function<std::unique_ptr<Comm>(
    int rank, std::unique_ptr<Comm> host, std::string *error)>;

struct LaunchOptions {
  /// Timeout of every blocking runtime call, seconds. <= 0: take
  /// $LOOM_COLLECTIVE_TIMEOUT_S, else 60.
  double timeoutSeconds = 0;
  OnFailure onFailure = OnFailure::Return;
  /// Chrome-trace output file; empty: $LOOM_TRACE (tracing off if unset).
  /// Under MPI each rank writes <path>.<rank>.
  std::string tracePath;
  /// Do not print failure messages to stderr (tests).
  bool quiet = false;
  /// Threads of each rank's pool (loom_rt_parallel_for, OpenBLAS). <= 0:
  /// the available cores divided by the ranks of the host (all ranks of a
  /// runThreads job; under MPI $OMPI_COMM_WORLD_LOCAL_SIZE and friends).
  int threadsPerRank = 0;
  /// runMpi: finalize MPI when the job ends (a process that runs one job,
  /// loom-run). False: MPI stays initialized for this process's next job
  /// and is finalized when the process exits (the Python package runs
  /// many jobs in one process; MPI cannot be initialized twice).
  bool finalizeMpi = true;
  /// runThreads, runMpi: wraps each rank's threads or MPI communicator
  /// (empty: none).
  WrapComm wrapComm;
};

struct LaunchResult {
  /// 0 when every rank succeeded, else 1.
  int status = 0;
  /// One line per failure: "loom-rt: rank R ...: <what> failed: <why>".
  std::vector<std::string> messages;
  /// Per-rank return values of the body (-1 if it did not return).
  std::vector<int> rankStatus;
};

/// Thrown through a failing runtime call in OnFailure::Return mode. Catching
/// it in the body is allowed but the job is failed anyway.
struct RankAborted {
  std::string message;
};

/// Runs `body` on `nranks` ranks, each on its own std::thread, over the
/// shared-memory `threads` communicator. `mesh` is the mesh shape (empty:
/// [nranks]); its product must equal nranks. Returns 0 iff every rank
/// succeeded; details in `*result` when given.
int runThreads(int nranks, std::vector<int64_t> mesh, const RankBody &body,
               const LaunchOptions &options = {},
               LaunchResult *result = nullptr);

/// The f32 GEMMs behind loom_rt_sgemm, e.g. "weights packed once, kernel
/// avx2+fma 6x16 (chosen from CPU features); other products: OpenBLAS
/// 0.3.21 ... , core Haswell (chosen from CPU features: avx2 + fma)"
/// (loom/runtime/Gemm.h); loads OpenBLAS if it was not loaded yet
/// (runtime/Gemm.cpp: the core is named from cpuid features before the library
/// starts, unless OPENBLAS_CORETYPE is set).
std::string gemmBackend();

/// The OpenBLAS core (an OPENBLAS_CORETYPE name) for a CPU with these
/// features; empty: let OpenBLAS choose. `avx512`: F, BW, VL, DQ and CD.
std::string openBlasCoreFor(bool amd, bool avx, bool avx2, bool fma,
                            bool avx512, bool avx512bf16);

/// True when the runtime was built with MPI (LOOM_RT_HAVE_MPI).
bool mpiAvailable();
/// True when this process looks started by mpirun/srun (OMPI/PMI env).
bool launchedByMpirun();

/// Runs `body` as this process's rank under MPI (one process per rank; the
/// rank and world size come from MPI). Initialises MPI if needed and
/// finalises it on success. The product of `mesh` (empty: [world size]) must
/// equal the world size. Any failure MPI_Abort()s the whole job with a
/// message; on success returns the body's status (0).
int runMpi(std::vector<int64_t> mesh, const RankBody &body,
           const LaunchOptions &options = {});

/// The memory mapping shared with the format readers
/// (loom/Support/MappedFile.h).
using loom::MappedFile;

/// The process-wide mapping of weight file `path` (MappedFile::share),
/// or null with *error naming it ("weight file '<path>': cannot open: ...").
std::shared_ptr<const MappedFile> mapFile(const std::string &path,
                                          std::string *error);

/// Maps [offset, offset+size) of `path` and registers it as weight `index` of
/// `ctx` (the mapping is kept alive by the context). False + *error on
/// failure.
bool mapWeight(loom_rt_ctx *ctx, int64_t index, const std::string &path,
               int64_t offset, int64_t size, std::string *error);

/// Time this rank spent inside communication calls (collectives, barriers,
/// send/recv, including the wait for peers) and their number, since the
/// context was made. loom-run's --bench splits time per token with it.
struct CommStats {
  int64_t ns = 0;
  int64_t calls = 0;
};
CommStats commStats(const loom_rt_ctx *ctx);

/// Threads of ctx's pool and, when it has more than one, why they are not
/// pinned to cores (empty: pinned).
int rankThreads(const loom_rt_ctx *ctx);
std::string rankThreadsPinNote(const loom_rt_ctx *ctx);

/// The cores this process may use (its CPU affinity mask) and the default
/// threads per rank for `localRanks` ranks on this host (at least 1).
int availableCores();
int defaultRankThreads(int localRanks);

/// Name of a dtype / reduce op ("f32", "sum"; "?" if invalid).
const char *dtypeName(int32_t dtype);
const char *reduceOpName(int32_t op);

/// Timeout from $LOOM_COLLECTIVE_TIMEOUT_S, else 60 s.
double defaultTimeoutSeconds();

} // namespace loom::rt

#endif // LOOM_RUNTIME_RUNTIME_H
