//===- loom-run.cpp - the Loom launcher -----------------------------------===//
//
// Runs a bundle written by `loomc -o out/` on N ranks: in-process threads
// (the default) or MPI processes (under mpirun the rank comes from MPI).
// Links the runtime only; never LLVM or MLIR. See docs/LOOM-RUN.md and
// docs/BUNDLE.md (the format and the calling convention).
//
// Phases: read + validate manifest.json; dlopen the library and dlsym every
// entry; read the inputs (.npy) of every local rank; map and prefault every
// local rank's weight slices; then start the ranks. Everything that can be
// checked is checked before any rank starts computing.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "GenerateCli.h"

#include "loom/runtime/Executor.h"
#include "loom/runtime/Manifest.h"
#include "loom/runtime/Npy.h"
#include "loom/runtime/NpyName.h"
#include "loom/runtime/Runtime.h"
#include "loom/runtime/State.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <malloc.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#ifdef LOOM_RUN_HAVE_CUDA
#include "DeviceComm.h"
#endif

using namespace loom::run;
namespace fs = std::filesystem;

namespace {

constexpr const char *kUsage = R"(loom-run: run a Loom bundle on N ranks

USAGE: loom-run <bundle-dir> [options]

OPTIONS:
  --ranks N               number of ranks (default: the bundle's mesh size;
                          must equal it)
  --backend threads|mpi|cuda
                          communicator (default threads; under mpirun: mpi);
                          cuda: a CUDA bundle's ranks on GPUs, NCCL with one
                          GPU per process under mpirun, else every rank a
                          thread sharing one GPU (the single-device
                          communicator)
  --cuda-graphs           a CUDA bundle's entry calls after the first of
                          each rank captured into a CUDA graph and replayed
                          (updated in place from call to call); prints the
                          graph counts at the end
  --devices LIST          the GPUs of --backend cuda (e.g. 0,1: under
                          mpirun, local rank i runs on the i-th; default:
                          the local rank's number; without mpirun one
                          device, default 0)
  --entry NAME            entry point to run (default: the first one)
  --input NAME=FILE.npy   an input of the entry point (repeatable; without
                          NAME= inputs are taken in order). '{rank}' in FILE
                          is replaced by each rank's number
  --output DIR            where outputs are written as .npy (default .);
                          with it, an entry's state (KV caches) is also
                          written there as <name>.npy after the run
  --ctx N                 context length of the KV cache of an entry with
                          state (default: the model's, capped by memory);
                          --input cache_key_0=FILE.npy gives an initial
                          state, else it starts zero-filled
  --all-ranks             every rank writes <output>.rank<R>.npy (default:
                          rank 0 writes <output>.npy)
  --bench                 print per-phase times (manifest+dlopen, inputs,
                          weights, run per iteration: min/median/max)
  --iterations N          run the entry N times (default 1)
  --microbatches M        split the batch (dimension 0) of the inputs the
                          manifest marks "batch_dim" (none marked: of every
                          input) into M microbatches, give the other inputs
                          whole to each, run them in turn (a pipelined
                          bundle: GPipe order, the stages overlapping) and
                          concatenate the outputs on the batch (default 1)
  --trace FILE.json       write a Chrome trace of every rank's ops
                          (under MPI: FILE.json.<rank>)
  --threads N             threads per rank for the generated loops, the
                          quantized kernels and OpenBLAS (default: the
                          cores available divided by the ranks on this
                          host; more than the cores: clamped, with a note;
                          thread ranks x N threads in all)
  --timeout SECONDS       collective timeout before the job is stopped
                          (default $LOOM_COLLECTIVE_TIMEOUT_S, else 60;
                          inf or >= 1e9: none)
  --check-collectives     under MPI, check that every rank makes the same
                          collective call (LOOM_CHECK_COLLECTIVES=1; one
                          small extra exchange per call; always on for
                          threads)
  --device N              the CUDA device a CUDA bundle (loomc
                          --target=cuda) runs on (default 0; refused for
                          a CPU bundle)
  --progress              show a progress bar while weights map (default:
                          only when stderr is a terminal)
  --help                  this text
)";

// The flags of text generation are parsed and run by GenerateCli.cpp.
using loom::run::GenerateFlags;

struct Options {
  std::string bundle;
  int ranks = 0;
  std::string backend = "threads";
  bool backendGiven = false;
  std::string entry;
  std::vector<std::string> inputs;
  std::string outputDir = ".";
  bool outputGiven = false;
  long long ctx = 0; // --ctx; 0: default
  bool allRanks = false;
  bool bench = false;
  int iterations = 1;
  int microbatches = 1;
  std::string trace;
  double timeout = 0; // <= 0: the runtime's default
  int threads = 0;    // --threads; 0: the runtime's default
  bool progress = false;
  int device = -1;          // --device; -1: not given
  bool cudaGraphs = false;  // --cuda-graphs
  std::vector<int> devices; // --devices
  CudaBackendChoice cuda;   // what --backend cuda runs
  GenerateFlags gen;
};

int fail(const std::string &msg) {
  std::fprintf(stderr, "loom-run: %s\n", msg.c_str());
  return 1;
}

bool parseInt(const char *s, long long lo, long long hi, long long &out) {
  char *end = nullptr;
  errno = 0;
  out = std::strtoll(s, &end, 10);
  return end != s && *end == 0 && errno == 0 && out >= lo && out <= hi;
}

[[maybe_unused]] std::string replaceAll(std::string s, const std::string &from,
                                        const std::string &to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos;
       pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

/// Parses the command line into `opts`; -1 to go on, else the exit status.
int parseArgs(int argc, char **argv, Options &opts) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *name) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "loom-run: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    long long n = 0;
#ifndef LOOM_RUN_NO_RUNTIME
    if (int g = loom::run::parseGenerateFlag(argc, argv, i, opts.gen)) {
      if (g < 0)
        return 2;
      continue;
    }
#endif
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
#ifndef LOOM_RUN_NO_RUNTIME
      std::fputs(loom::run::kGenerateUsage, stdout);
#endif
      return 0;
    } else if (arg == "--ranks") {
      const char *v = value("--ranks");
      if (!parseInt(v, 1, 1 << 20, n))
        return fail("--ranks must be at least 1 (got '" + std::string(v) +
                    "')");
      opts.ranks = int(n);
    } else if (arg == "--backend") {
      opts.backend = value("--backend");
      opts.backendGiven = true;
      if (opts.backend != "threads" && opts.backend != "mpi" &&
          opts.backend != "cuda")
        return fail("unknown --backend '" + opts.backend +
                    "'; expected threads, mpi or cuda");
    } else if (arg == "--entry") {
      opts.entry = value("--entry");
    } else if (arg == "--input") {
      opts.inputs.push_back(value("--input"));
    } else if (arg == "--output") {
      opts.outputDir = value("--output");
      opts.outputGiven = true;
    } else if (arg == "--ctx") {
      const char *v = value("--ctx");
      if (!parseInt(v, 1, int64_t(1) << 40, n))
        return fail("--ctx must be a positive number of positions (got '" +
                    std::string(v) + "')");
      opts.ctx = n;
    } else if (arg == "--all-ranks") {
      opts.allRanks = true;
    } else if (arg == "--bench") {
      opts.bench = true;
    } else if (arg == "--iterations") {
      const char *v = value("--iterations");
      if (!parseInt(v, 1, 1 << 30, n))
        return fail("--iterations must be at least 1 (got '" + std::string(v) +
                    "')");
      opts.iterations = int(n);
    } else if (arg == "--microbatches") {
      const char *v = value("--microbatches");
      if (!parseInt(v, 1, 1 << 20, n))
        return fail("--microbatches must be at least 1 (got '" +
                    std::string(v) + "')");
      opts.microbatches = int(n);
    } else if (arg == "--trace") {
      opts.trace = value("--trace");
    } else if (arg == "--timeout") {
      const char *v = value("--timeout");
      char *end = nullptr;
      opts.timeout = std::strtod(v, &end);
      if (end == v || *end || !(opts.timeout > 0))
        return fail("--timeout wants a positive number of seconds, or inf "
                    "(got '" +
                    std::string(v) + "')");
      // 1e9 s (31 years) and more, inf included: no timeout (the runtime
      // saturates the deadline instead of overflowing it).
    } else if (arg == "--threads") {
      const char *v = value("--threads");
      if (!parseInt(v, 1, 1 << 20, n))
        return fail("--threads must be at least 1 thread per rank (got '" +
                    std::string(v) +
                    "'); omit it for the default (the cores divided by the "
                    "ranks on this host)");
      opts.threads = int(n);
#ifndef LOOM_RUN_NO_RUNTIME
      if (int cores = loom::rt::availableCores(); opts.threads > cores) {
        std::fprintf(stderr,
                     "loom-run: note: --threads %d is more than the %d "
                     "core(s) this process may use; using %d\n",
                     opts.threads, cores, cores);
        opts.threads = cores;
      }
#endif
    } else if (arg == "--cuda-graphs") {
      opts.cudaGraphs = true;
    } else if (arg == "--device") {
      const char *v = value("--device");
      if (!parseInt(v, 0, 1023, n))
        return fail("--device takes a CUDA device number (0, 1, ...), got '" +
                    std::string(v) + "'");
      opts.device = int(n);
    } else if (arg == "--devices") {
      const char *v = value("--devices");
#ifdef LOOM_RUN_HAVE_CUDA
      std::string err;
      if (!parseDevices(v, opts.devices, &err))
        return fail(err);
#else
      opts.devices.push_back(std::atoi(v)); // refused below
#endif
    } else if (arg == "--progress") {
      opts.progress = true;
    } else if (arg == "--check-collectives") {
      setenv("LOOM_CHECK_COLLECTIVES", "1", 1);
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "loom-run: unknown option '%s'\n%s", arg.c_str(),
                   kUsage);
      return 2;
    } else if (opts.bundle.empty()) {
      opts.bundle = arg;
    } else {
      return fail("more than one bundle given ('" + opts.bundle + "' and '" +
                  arg + "')");
    }
  }
  if (opts.bundle.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
#ifdef LOOM_RUN_HAVE_CUDA
  auto envInt = [](const char *name, int dflt) {
    const char *v = std::getenv(name);
    return v && *v ? std::atoi(v) : dflt;
  };
  int local = envInt("OMPI_COMM_WORLD_LOCAL_RANK", 0);
  std::string err;
  if (!chooseCudaBackend(opts.backend == "cuda", opts.devices, opts.device,
                         loom::rt::launchedByMpirun(), local,
                         envInt("OMPI_COMM_WORLD_LOCAL_SIZE", local + 1),
                         opts.cuda, &err))
    return fail(err);
#else
  if (opts.backend == "cuda" || !opts.devices.empty())
    return fail("--backend cuda and --devices: this loom-run was built "
                "without the CUDA runtime (build with nvcc on PATH or "
                "-DLOOM_ENABLE_CUDA=ON)");
#endif
  return -1;
}

#ifndef LOOM_RUN_NO_RUNTIME
/// Which file feeds each input of `e`: NAME=FILE binds by name, a bare FILE
/// takes the next unbound input; every input but state needs one.
Status bindInputFiles(const Entry &e, const std::vector<std::string> &args,
                      std::vector<std::string> &spec) {
  spec.assign(e.inputs.size(), "");
  std::vector<std::string> positional;
  for (const std::string &a : args) {
    // NAME=FILE with the longest input name the argument starts with: a
    // name may hold '=', '/' or '.' (ONNX's `gpu_0/data_0`).
    size_t k = e.inputs.size(), eq = std::string::npos;
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      const std::string &n = e.inputs[i].name;
      if (a.size() > n.size() && a.compare(0, n.size(), n) == 0 &&
          a[n.size()] == '=' && (eq == std::string::npos || n.size() > eq))
        k = i, eq = n.size();
    }
    if (k == e.inputs.size()) {
      eq = a.find('=');
      std::string name = eq == std::string::npos ? "" : a.substr(0, eq);
      if (name.empty() || name.find_first_of("/.") != std::string::npos) {
        positional.push_back(a);
        continue;
      }
      std::string names;
      for (const TensorSpec &t : e.inputs)
        names += (names.empty() ? "" : ", ") + t.name;
      return Error{"--input " + a + ": entry '" + e.name + "' has no input '" +
                   name + "' (inputs: " + (names.empty() ? "none" : names) +
                   ")"};
    }
    const std::string &name = e.inputs[k].name;
    if (!spec[k].empty())
      return Error{"input '" + name + "' given twice"};
    spec[k] = a.substr(eq + 1);
  }
  size_t next = 0;
  for (const std::string &p : positional) {
    while (next < spec.size() && !spec[next].empty())
      ++next;
    if (next == spec.size())
      return Error{"--input " + p + ": entry '" + e.name + "' takes " +
                   std::to_string(e.inputs.size()) +
                   " input(s); this one is extra"};
    spec[next++] = p;
  }
  for (size_t k = 0; k < spec.size(); ++k)
    if (spec[k].empty() && e.inputs[k].state.empty())
      return Error{"missing input '" + e.inputs[k].name + "' (" +
                   dtypeName(e.inputs[k].dtype) + " " +
                   shapeString(e.inputs[k].shape) + ") of entry '" + e.name +
                   "'; pass --input " + e.inputs[k].name + "=FILE.npy"};
  return success();
}

/// Reads the .npy files of every local rank's inputs ('{rank}' expanded;
/// each file once) and checks their dtypes; the executor checks shapes.
Status readInputs(const Executor &ex, const Entry &e,
                  const std::vector<std::string> &spec,
                  std::map<std::string, NpyArray> &loaded,
                  std::vector<Input> &inputs) {
  for (int64_t r : ex.localRanks())
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      if (spec[k].empty())
        continue; // state, zero-filled by the executor
      const TensorSpec &t = e.inputs[k];
      std::string path = replaceAll(spec[k], "{rank}", std::to_string(r));
      std::string where =
          "input '" + t.name + "'" +
          (path != spec[k] ? " of rank " + std::to_string(r) : "") + " ('" +
          path + "')";
      auto it = loaded.find(path);
      if (it == loaded.end()) {
        NpyArray a;
        std::string err;
        if (!readNpy(path, a, &err))
          return Error{where + ": " + err};
        it = loaded.emplace(path, std::move(a)).first;
      }
      const NpyArray &a = it->second;
      if (!npyAccepts(t.dtype, a.descr))
        return Error{where + ": dtype is '" + a.descr + "' but entry '" +
                     e.name + "' expects " + dtypeName(t.dtype) + " ('" +
                     npyDescr(t.dtype) + "')"};
      inputs.push_back({t.name, {t.dtype, a.shape, a.data.get()}, r, where});
    }
  return success();
}

/// Writes each rank's outputs as .npy under temporary names (stage) and
/// renames them into place only when every rank staged all of its outputs
/// (commit): all or nothing. The state goes next to them with --output.
class OutputWriter {
public:
  OutputWriter(const Options &o, const Entry &e) : O(o), E(e) {}

  Status stage(const RankOutputs &r) {
    std::vector<Pending> mine;
    Status st = stageAll(r, mine);
    std::lock_guard<std::mutex> lock(Mu);
    Pend[r.rank] = std::move(mine);
    return st;
  }

  Status commit(int64_t rank, bool ok) {
    std::vector<Pending> mine;
    {
      std::lock_guard<std::mutex> lock(Mu);
      mine = std::move(Pend[rank]);
    }
    for (size_t i = 0; i < mine.size(); ++i)
      if (!ok || std::rename(mine[i].tmp.c_str(), mine[i].path.c_str())) {
        std::string why = ok ? "cannot rename '" + mine[i].tmp + "' to '" +
                                   mine[i].path + "': " + std::strerror(errno)
                             : "";
        for (size_t j = i; j < mine.size(); ++j)
          ::unlink(mine[j].tmp.c_str());
        return why.empty() ? success() : Status(Error{why});
      }
    if (!mine.empty())
      Wrote = true;
    return success();
  }

  /// Whether this process wrote outputs (then it names the files of the
  /// outputs whose name is not a file name, NpyName.h).
  bool wrote() const { return Wrote; }
  void printMappedNames() const {
    for (const OutputSpec &o : E.outputs)
      if (loom::npyFileStem(o.name) != o.name)
        std::fprintf(
            stderr,
            "loom-run: note: output '%s' is written to "
            "'%s'\n",
            o.name.c_str(),
            (fs::path(O.outputDir) / (loom::npyFileStem(o.name) +
                                      (O.allRanks ? ".rank<R>.npy" : ".npy")))
                .string()
                .c_str());
  }

private:
  struct Pending {
    std::string tmp, path;
  };

  std::string file(const std::string &name, int64_t rank) const {
    std::string stem = loom::npyFileStem(name);
    std::string f = O.allRanks ? stem + ".rank" + std::to_string(rank) + ".npy"
                               : stem + ".npy";
    return (fs::path(O.outputDir) / f).string();
  }

  Status stageAll(const RankOutputs &r, std::vector<Pending> &mine) {
    for (size_t k = 0; k < E.outputs.size(); ++k) {
      const Array &a = r.outputs[k];
      std::string path = file(E.outputs[k].name, r.rank), tmp, err;
      // Refused before anything is written: a rename over a directory fails
      // only at commit, when the other outputs may already be in place.
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        return Error{"output '" + E.outputs[k].name + "': '" + path +
                     "' is a directory; remove it or choose another --output"};
      static const char zero = 0;
      if (!writeNpyTemp(path, npyDescr(a.dtype), a.shape,
                        a.data ? a.data : &zero, a.numBytes(), &tmp, &err)) {
        for (const Pending &p : mine)
          ::unlink(p.tmp.c_str());
        mine.clear();
        return Error{err};
      }
      mine.push_back({tmp, path});
    }
    if (!O.outputGiven)
      return success();
    size_t j = 0;
    for (const TensorSpec &t : E.inputs) {
      if (t.state.empty())
        continue;
      const Array &a = r.state[j++];
      std::string err,
          path = (fs::path(O.outputDir) / stateFileName(t, r.rank, O.allRanks))
                     .string();
      if (!writeNpy(path, npyDescr(t.dtype), a.shape, a.data, a.numBytes(),
                    &err))
        return Error{err};
    }
    return success();
  }

  const Options &O;
  const Entry &E;
  std::mutex Mu;
  std::atomic<bool> Wrote{false};
  std::map<int64_t, std::vector<Pending>> Pend;
};

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// --bench: per-phase times (ms); iteration time = the slowest rank's.
void printBench(const Options &opts, const Executor &ex, const Entry &e,
                const PreparedEntry &w, const RunResult &res,
                const double (&t)[4]) {
  const std::vector<double> &it = res.iterationMs;
  std::printf("loom-run bench: model %s, entry %s, %lld rank(s), %s, "
              "%d iteration(s)\n",
              ex.manifest().model.c_str(), e.name.c_str(),
              (long long)ex.manifest().numRanks, backendName(ex.usesMpi()),
              opts.iterations);
  std::printf("  GEMM: %s\n", loom::rt::gemmBackend().c_str());
  std::printf("  %-22s %12s\n", "phase", "ms");
  std::printf("  %-22s %12.3f\n", "manifest+dlopen", t[1] - t[0]);
  std::printf("  %-22s %12.3f\n", "inputs", t[2] - t[1]);
  std::printf("  %-22s %12.3f   (%zu slices, %s)\n", "weights (map)", w.mapMs,
              w.weightSlices, humanBytes(double(w.weightBytes)).c_str());
  std::printf("  %-22s %12.3f\n", "run: min",
              *std::min_element(it.begin(), it.end()));
  std::printf("  %-22s %12.3f\n", "run: median", median(it));
  std::printf("  %-22s %12.3f\n", "run: max",
              *std::max_element(it.begin(), it.end()));
  std::printf("  %-22s %12.3f   (launch, all iterations, outputs)\n", "job",
              res.jobMs);
  std::printf("  %-22s %12.3f\n", "total", t[3] - t[0]);
  std::fflush(stdout);
}

OpenOptions openOptions(const Options &o) {
  OpenOptions x;
  x.backend = !o.backendGiven      ? Backend::Auto
              : o.backend == "mpi" ? Backend::Mpi
                                   : Backend::Threads;
  x.ranks = o.ranks;
  x.timeoutSeconds = o.timeout;
  x.threadsPerRank = o.threads;
  x.tracePath = o.trace;
  x.progress = o.progress || isatty(2);
  x.cudaDevice = o.device;
  x.cudaGraphs = o.cudaGraphs;
#ifdef LOOM_RUN_HAVE_CUDA
  // --backend cuda: the device communicator around the backend's (threads
  // ranks sharing one GPU, or NCCL over MPI), on the chosen device.
  if (o.cuda.kind != CudaBackendChoice::None) {
    bool nccl = o.cuda.kind == CudaBackendChoice::Nccl;
    x.backend = nccl ? Backend::Mpi : Backend::Threads;
    x.cudaDevice = o.cuda.device;
    x.deviceComm = nccl ? loom::rt::ncclComms(o.cuda.devices)
                        : loom::rt::singleDeviceComms(o.cuda.device);
  }
#endif
  x.onRankError = [](const std::string &m) {
    std::fprintf(stderr, "loom-run: %s\n", m.c_str());
  };
  return x;
}

/// One entry on every rank: inputs from .npy files, outputs to .npy files.
int runBundle(const Options &opts) {
  double t[4] = {nowMs(), 0, 0, 0};
  auto ex = Executor::open(opts.bundle, openOptions(opts));
  if (!ex)
    return fail(ex.error().message);
  auto entry = (*ex)->entry(opts.entry);
  if (!entry)
    return fail(entry.error().message);
  const Entry &e = **entry;
  t[1] = nowMs();
  std::vector<std::string> files;
  std::map<std::string, NpyArray> loaded;
  std::vector<Input> inputs;
  Status st = bindInputFiles(e, opts.inputs, files);
  if (st)
    st = readInputs(**ex, e, files, loaded, inputs);
  if (!st)
    return fail(st.error().message);
  t[2] = nowMs();
  OutputWriter out(opts, e);
  RunOptions run;
  run.entry = e.name;
  run.iterations = opts.iterations;
  run.microbatches = opts.microbatches;
  run.barrierPerIteration = opts.bench;
  run.allRanks = opts.allRanks;
  run.ctx = opts.ctx;
  // The state is written only with --output (a CUDA bundle's is copied
  // back from the device only then).
  run.returnState = opts.outputGiven;
  run.beforeLaunch = [&]() -> Status {
    std::error_code ec;
    fs::create_directories(opts.outputDir, ec);
    if (ec || !fs::is_directory(opts.outputDir, ec))
      return Error{"--output " + opts.outputDir +
                   ": cannot create the "
                   "directory: " +
                   (ec ? ec.message() : "not a directory")};
    return success();
  };
  run.stage = [&](const RankOutputs &r) { return out.stage(r); };
  run.commit = [&](int64_t r, bool ok) { return out.commit(r, ok); };
  RunResult res;
  if (Status s = (*ex)->run(inputs, run, res); !s)
    return fail(
        !res.jobFailed
            ? s.error().message
            : "the job failed (" + std::string(backendName((*ex)->usesMpi())) +
                  " backend, " + std::to_string((*ex)->manifest().numRanks) +
                  " ranks)");
  t[3] = nowMs();
  if (out.wrote())
    out.printMappedNames();
  if (opts.bench && (!(*ex)->usesMpi() || (*ex)->localRanks().front() == 0))
    printBench(opts, **ex, e, res.prepared, res, t);
  return 0;
}
#endif // LOOM_RUN_NO_RUNTIME

} // namespace

int main(int argc, char **argv) {
  // Generated code allocates and frees its intermediate tensors on every
  // run; keep freed memory in the heap instead of returning it to the
  // kernel (glibc would mmap/munmap large blocks each time: page faults and
  // zeroing dominated small models).
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // The runtime's own, smaller setting for processes that embed it
  // (keepFreedBuffers: 32 / 64 MiB) must not lower loom-run's.
  setenv("LOOM_MALLOC_KEEP", "0", /*overwrite=*/1);
  // A file-size limit (RLIMIT_FSIZE) is an error like a full disk: the
  // output's write fails with EFBIG and names the file, nothing is renamed
  // into place, instead of the process dying of SIGXFSZ.
  signal(SIGXFSZ, SIG_IGN);

  Options opts;
  if (int rc = parseArgs(argc, argv, opts); rc >= 0)
    return rc;

  fs::path manifestPath = fs::path(opts.bundle) / "manifest.json";
  std::error_code ec; // no exceptions: the error_code overloads throughout
  if (!fs::exists(manifestPath, ec))
    return fail(opts.bundle +
                ": no manifest.json; is this a bundle written "
                "by `loomc -o " +
                opts.bundle + "`?");
#ifdef LOOM_RUN_NO_RUNTIME
  return fail("this loom-run was built without the runtime "
              "(-DLOOM_BUILD_RUNTIME=OFF) and cannot run bundles; reconfigure "
              "with -DLOOM_BUILD_RUNTIME=ON");
#else
  if (opts.gen.anyFlag && !opts.gen.requested())
    return fail("generation flags (--temp, --max-tokens, ...) need a prompt: "
                "--prompt, --prompt-ids, --prompts-file or --interactive");
  int rc;
  if (opts.gen.requested()) {
    GenerateFlags g = opts.gen;
    g.request.ctx = opts.ctx;
    rc = runGenerate(opts.bundle, g, openOptions(opts), opts.bench);
  } else {
    rc = runBundle(opts);
  }
  if (opts.cudaGraphs) {
    int64_t launches = 0, made = 0, updated = 0;
    loom::run::cudaGraphStats(launches, made, updated);
    std::fprintf(stderr,
                 "loom-run: CUDA graphs: %lld launched (%lld instantiated, "
                 "%lld updated in place)\n",
                 (long long)launches, (long long)made, (long long)updated);
  }
  return rc;
#endif
}
