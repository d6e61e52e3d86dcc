//===- loom/runtime/Executor.h - open a bundle, run its entries -*- C++ -*-===//
//
// The runtime's C++ API for running a bundle (docs/RUNTIME.md, "Executor"):
// what loom-run, the Python package and a GPU backend share.
//
//   auto ex = loom::run::Executor::open("out/", {});   // checks, dlopen
//   if (!ex) report(ex.error().message);
//   loom::run::RunResult r;
//   auto ok = (*ex)->run({{"x", xRef}}, {}, r);       // N thread ranks
//   r.ranks[0].outputs[0]                              // rank 0's "y"
//
// Opening a bundle reads and validates manifest.json (the schema of
// Manifest.h), chooses the backend and the ranks this process runs (every
// rank as a thread, or this process's rank under mpirun), checks the
// library (ELF bounds, integrity hashes, CPU features, ABI version) and
// dlopens it. `run` binds in-memory inputs (pointer + shape + dtype),
// maps each entry's weight slices once (interleaving and copying strided
// blocks per rank), packs the arguments of the calling convention of
// docs/BUNDLE.md, runs the entry on every local rank and returns each rank's
// outputs as arrays that own their memory (the callee's buffers, no copy
// when contiguous). State inputs (KV caches) are owned by the executor and
// kept from one run to the next. Every failure is a value; the library never
// exits the process. No LLVM, no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_EXECUTOR_H
#define LOOM_RUNTIME_EXECUTOR_H

#include "loom/Support/Result.h"
#include "loom/runtime/Generate.h"
#include "loom/runtime/Manifest.h"
#include "loom/runtime/Runtime.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::run {

template <typename T> using Expected = loom::Result<T>;
using loom::Error;
using loom::Status;
using loom::success;

/// A borrowed array: `data` holds prod(shape) elements of `dtype`, C order.
struct ArrayRef {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  int64_t numElements() const;
  int64_t numBytes() const { return numElements() * dtypeSize(dtype); }
};

/// An array that owns (or shares) its memory: C order, contiguous.
struct Array {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  void *data = nullptr;
  /// Keeps `data` alive (outputs that alias share one owner; a state
  /// array shares the executor's buffer, which later runs update).
  std::shared_ptr<void> owner;
  int64_t numElements() const;
  int64_t numBytes() const { return numElements() * dtypeSize(dtype); }
  ArrayRef ref() const { return {dtype, shape, data}; }
};

/// One input of an entry. `rank` >= 0 gives that local rank its own value
/// (overriding a value for every rank, `rank` = -1). A state input given
/// here is the initial state, copied into the executor's buffer.
struct Input {
  std::string name;
  ArrayRef array;
  int64_t rank = -1;
  /// How errors name this input; empty: "input '<name>'".
  std::string where;
};

enum class Backend { Auto, Threads, Mpi };

struct OpenOptions {
  /// Auto: MPI when the process was started by mpirun, else threads.
  Backend backend = Backend::Auto;
  /// 0: the bundle's mesh size; else it must equal it.
  int ranks = 0;
  /// Timeout of every blocking runtime call (<= 0: the runtime's default).
  double timeoutSeconds = 0;
  /// Threads per rank for the generated loops, the quantized kernels and
  /// OpenBLAS (0: the cores available divided by the ranks on this host).
  int threadsPerRank = 0;
  /// Chrome trace of every rank's calls (empty: $LOOM_TRACE or none).
  std::string tracePath;
  /// A progress bar on stderr while weights are mapped.
  bool progress = false;
  /// The CUDA device a GPU bundle (`loomc --target=cuda`) runs on; -1: not
  /// given (device 0). Refused for a CPU bundle.
  int cudaDevice = -1;
  /// A CUDA bundle's entry calls after the first of each (entry, rank) are
  /// captured into a CUDA graph and replayed, updated in place from call to
  /// call (loom-run --cuda-graphs; docs/GPU.md "CUDA graphs").
  bool cudaGraphs = false;
  /// The device communicator of a CUDA bundle's ranks (loom-run --backend
  /// cuda: the single-device communicator over the threads backend, NCCL
  /// over MPI; runtime/cuda/DeviceComm.h), wrapped around the backend's;
  /// empty: none. Refused for a CPU bundle.
  loom::rt::WrapComm deviceComm;
  /// Do not print the runtime's failure messages on stderr (they are in the
  /// returned Error either way).
  bool quiet = false;
  /// MPI: finalized after each job (a process that runs one, loom-run);
  /// false: kept up for the next job, finalized at exit
  /// (LaunchOptions::finalizeMpi; the Python package).
  bool finalizeMpi = true;
  /// Called on the failing rank, at once, with "rank R: <what>" (loom-run
  /// prints it); the message is also part of the returned Error.
  std::function<void(const std::string &)> onRankError;
};

/// What a rank returns from `run`.
struct RankOutputs {
  int64_t rank = 0;
  std::vector<Array> outputs; ///< manifest order
  /// The entry's state inputs after the run (manifest order of the state
  /// inputs; views of the executor's buffers), empty without state (or a
  /// CUDA bundle's without RunOptions::returnState).
  std::vector<Array> state;
  std::vector<double> iterationMs;
};

/// The order in which a pipeline stage runs its microbatches (docs/RUNTIME.md
/// "Pipelines"). GPipe: every forward, then (training) every backward in
/// reverse. 1F1B (PipeDream-Flush): stage k runs min(p-k-1, m) warm-up
/// forwards, then alternates one forward and one backward, then drains the
/// remaining backwards; it keeps at most p-k microbatches' activations
/// instead of m. Forward-only (inference) both give forwards 0..m-1.
enum class PipelineSchedule { GPipe, OneFOneB };

/// One step of a schedule: `stage` runs microbatch `microbatch` forward or
/// backward.
struct PipelineStep {
  int64_t stage = 0, microbatch = 0;
  bool backward = false;
  bool operator==(const PipelineStep &o) const {
    return stage == o.stage && microbatch == o.microbatch &&
           backward == o.backward;
  }
};

/// Per stage (0..stages-1) its steps in order. `withBackward` false: the
/// forward steps only, what the executor runs today. Training would still
/// need: backward entry points per stage (the compiler emits forward stage
/// functions only), the activation stash of each forward kept until its
/// backward (bounded by p-k under 1F1B), gradient sends from stage k+1 to k
/// (the boundary in reverse, same double buffers), and the weight update
/// after the last backward (with a dp all-reduce of the gradients).
std::vector<std::vector<PipelineStep>> pipelineSchedule(PipelineSchedule kind,
                                                        int64_t stages,
                                                        int64_t microbatches,
                                                        bool withBackward);

struct RunOptions {
  /// The entry point; empty: the first.
  std::string entry;
  int iterations = 1;
  /// A barrier before and after each iteration, so that iterationMs is the
  /// time of the slowest rank (benchmarks).
  bool barrierPerIteration = false;
  /// Outputs of every local rank; false: rank 0's only.
  bool allRanks = false;
  /// Context length of the state buffers (0: the initial state's, else the
  /// model's capped by memory). Fixed at the first run with state;
  /// resetState() frees the buffers.
  int64_t ctx = 0;
  /// Return the state after the run in RankOutputs::state. On the CPU the
  /// arrays are views of the executor's buffers (free); a CUDA bundle's
  /// state lives on the device and is copied back once after the run only
  /// when this is set (false: RankOutputs::state is empty).
  bool returnState = true;
  /// Each rank gets its own copy of every input (default). False: when the
  /// bundle's code never writes its inputs (Manifest::inputsReadOnly,
  /// every bundle loomc writes), each input is passed as is to every rank
  /// (zero-copy, never modified); a bundle without that guarantee still
  /// gets copies.
  bool copyInputs = true;
  /// Microbatches (docs/RUNTIME.md "Pipelines"): every non-state input's
  /// dimension 0 is m times the compiled one; the entry runs on each of the
  /// m row blocks in turn (a pipelined entry: GPipe order, stage k of
  /// microbatch i overlapping stage k+1 of microbatch i-1) and each output
  /// is the m results concatenated on dimension 0. An input or output
  /// without dimension 0, or state, is refused by name.
  int microbatches = 1;
  /// The order of the microbatches on each stage (forward only: the same
  /// order for both; see pipelineSchedule).
  PipelineSchedule schedule = PipelineSchedule::GPipe;
  /// Called once everything is checked and mapped, just before the ranks
  /// start (loom-run creates its output directory there).
  std::function<Status()> beforeLaunch;
  /// Called on every rank whose outputs are returned, inside the job once
  /// every rank's entry has returned (e.g. to write them). A failure on any
  /// rank fails the job; `commit` is then called on every rank with the
  /// outcome (all or nothing across ranks and processes).
  std::function<Status(const RankOutputs &)> stage;
  std::function<Status(int64_t rank, bool ok)> commit;
};

/// What `prepare` mapped for an entry.
struct PreparedEntry {
  int64_t weightBytes = 0;
  size_t weightSlices = 0;
  double mapMs = 0;
};

struct RunResult {
  /// The returned ranks (rank 0, or every local rank), in rank order.
  std::vector<RankOutputs> ranks;
  /// Per iteration, the slowest local rank's time.
  std::vector<double> iterationMs;
  double jobMs = 0;       ///< launch, every iteration, outputs
  int64_t ctx = 0;        ///< context length of the state (0: no state)
  PreparedEntry prepared; ///< the entry's weights
  /// The job started and failed (the error is not about the inputs):
  /// every rank's and the runtime's messages, the root cause first.
  bool jobFailed = false;
  std::vector<std::string> messages;
};

class Executor {
public:
  /// Opens `bundleDir`: manifest, backend and ranks, library checks,
  /// dlopen. The library stays loaded until the process exits (code of it
  /// may still be referenced by a trace or an atexit handler).
  static Expected<std::unique_ptr<Executor>> open(const std::string &bundleDir,
                                                  const OpenOptions &options);
  ~Executor();

  const std::string &bundleDir() const;
  const Manifest &manifest() const;
  /// The entry `name` (empty: the first); an Error listing the entries.
  Expected<const Entry *> entry(const std::string &name) const;
  bool usesMpi() const;
  /// Global ranks this process runs.
  const std::vector<int64_t> &localRanks() const;
  const OpenOptions &options() const;

  /// Maps, checks and prefaults the weight slices of `entry` for every
  /// local rank (once; run() does it when needed).
  Expected<PreparedEntry> prepare(const std::string &entry);

  /// Runs an entry once per iteration on every local rank.
  Status run(const std::vector<Input> &inputs, const RunOptions &options,
             RunResult &result);

  /// Generates text with the bundle's `decode` entry (Generate.h). The KV
  /// cache of a generation is allocated per rank for the call.
  Status generate(const GenerateOptions &options,
                  const GenerateCallbacks &callbacks, GenerateResult &result);

  /// Frees the state buffers of `entry` (all: empty); the next run starts
  /// from zeros (and chooses the context again).
  void resetState(const std::string &entry = "");

  struct Impl;

private:
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> P;
};

/// "threads" / "mpi".
const char *backendName(bool mpi);
/// Milliseconds of the runtime's clock.
double nowMs();
/// "1.5 MiB".
std::string humanBytes(double bytes);
/// "[2, ?, 4]" (-1: "?").
std::string shapeString(const std::vector<int64_t> &shape);

/// CUDA graphs of this process so far (OpenOptions::cudaGraphs): graph
/// launches, instantiations and in-place updates; zeros without the CUDA
/// runtime in the process.
void cudaGraphStats(int64_t &launches, int64_t &instantiations,
                    int64_t &updates);

} // namespace loom::run

#endif // LOOM_RUNTIME_EXECUTOR_H
