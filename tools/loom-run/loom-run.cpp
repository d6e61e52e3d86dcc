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

#include "Generate.h"
#include "Loader.h"
#include "Manifest.h"
#include "Npy.h"
#include "State.h"
#include "Strided.h"

#include "loom/runtime/Runtime.h"
#include "loom/runtime/abi.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <malloc.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

using namespace loom::run;
namespace fs = std::filesystem;

namespace {

constexpr const char *kUsage = R"(loom-run: run a Loom bundle on N ranks

USAGE: loom-run <bundle-dir> [options]

OPTIONS:
  --ranks N               number of ranks (default: the bundle's mesh size;
                          must equal it)
  --backend threads|mpi   communicator (default threads; under mpirun: mpi)
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
  --progress              show a progress bar while weights map (default:
                          only when stderr is a terminal)
  --help                  this text
)";

// The flags of text generation are parsed and run by Generate.cpp.
using loom::run::GenerateOptions;

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
  std::string trace;
  double timeout = 0; // <= 0: the runtime's default
  int threads = 0;     // --threads; 0: the runtime's default
  bool progress = false;
  GenerateOptions gen;
};

int fail(const std::string &msg) {
  std::fprintf(stderr, "loom-run: %s\n", msg.c_str());
  return 1;
}

#ifndef LOOM_RUN_NO_RUNTIME
int runBundle(const Options &opts);
#endif

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

#ifndef LOOM_RUN_NO_RUNTIME
/// What a rank needs, prepared by the main thread.
struct RankPlan {
  std::vector<const NpyArray *> inputs; ///< manifest order
  std::vector<PlannedWeight> weights;   ///< manifest order
};

/// Per-rank results of the run (filled by the rank's body).
struct RankResult {
  std::vector<double> iterationMs;
};

/// The job, shared by every rank body.
struct Job {
  const Manifest *manifest = nullptr;
  const Entry *entry = nullptr;
  EntryFn fn = nullptr;
  const Options *opts = nullptr;
  std::map<int64_t, RankPlan> plans;     ///< local ranks only
  std::map<int64_t, RankResult> results; ///< same keys, preallocated
  int64_t resultWords = 0;
};

/// An output written to a temporary name, renamed over `path` at commit.
struct PendingOutput {
  std::string tmp, path;
};

/// Removes the temporaries of outputs that will not be committed.
void discardOutputs(std::vector<PendingOutput> &pending) {
  for (const PendingOutput &p : pending)
    ::unlink(p.tmp.c_str());
  pending.clear();
}

/// Writes every output of a rank as .npy to temporary names (appended to
/// `pending`); commitOutputs renames them once every rank has written all
/// of its outputs, so a failure leaves none of them (all or nothing).
bool writeOutputs(const Job &job, int64_t rank,
                  const std::vector<int64_t> &words,
                  std::vector<PendingOutput> &pending, std::string *error) {
  const Entry &e = *job.entry;
  std::vector<OutputView> views = outputViews(e, words);
  for (size_t k = 0; k < e.outputs.size(); ++k) {
    const OutputSpec &spec = e.outputs[k];
    const OutputView &o = views[k];
    int64_t es = dtypeSize(spec.dtype);
    std::vector<int64_t> shape(o.sizes, o.sizes + spec.rank);
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0 || (d > 0 && n > (int64_t(1) << 46) / d)) {
        *error = "output '" + spec.name + "' has an invalid shape " +
                 shapeString(shape);
        return false;
      }
      n *= d;
    }
    if (n > 0 && !o.aligned) {
      *error = "output '" + spec.name + "' has a null data pointer";
      return false;
    }
    const char *src = o.aligned ? o.aligned + o.offset * es : nullptr;
    Buffer tmp;
    std::vector<int64_t> rowMajor(size_t(spec.rank));
    rowMajorStrides(spec.rank, shape.data(), rowMajor.data());
    bool contiguous = true;
    for (int64_t d = 0; d < spec.rank; ++d)
      if (shape[d] != 1 && o.strides[d] != rowMajor[d])
        contiguous = false;
    if (!contiguous && n > 0) {
      tmp = allocBuffer(n * es);
      if (!tmp) {
        *error = "out of memory copying output '" + spec.name + "'";
        return false;
      }
      copyStrided(es, spec.rank, shape.data(), src, o.strides, tmp.get(),
                  rowMajor.data());
      src = tmp.get();
    }
    std::string file = job.opts->allRanks
                           ? spec.name + ".rank" + std::to_string(rank) + ".npy"
                           : spec.name + ".npy";
    std::string path = (fs::path(job.opts->outputDir) / file).string();
    // Refused before anything is written: a rename over a directory fails
    // only at commit, when the other outputs may already be in place.
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      *error = "output '" + spec.name + "': '" + path +
               "' is a directory; remove it or choose another --output";
      return false;
    }
    static const char zero = 0;
    std::string tmpPath;
    if (!writeNpyTemp(path, npyDescr(spec.dtype), shape, src ? src : &zero,
                      n * es, &tmpPath, error))
      return false;
    pending.push_back({tmpPath, path});
  }
  return true;
}

/// Renames every pending output into place.
bool commitOutputs(std::vector<PendingOutput> &pending, std::string *error) {
  for (size_t i = 0; i < pending.size(); ++i)
    if (std::rename(pending[i].tmp.c_str(), pending[i].path.c_str()) != 0) {
      *error = "cannot rename '" + pending[i].tmp + "' to '" +
               pending[i].path + "': " + std::strerror(errno);
      for (size_t j = i; j < pending.size(); ++j)
        ::unlink(pending[j].tmp.c_str());
      pending.clear();
      return false;
    }
  pending.clear();
  return true;
}

/// The body every rank runs: registers the weights, packs the arguments per
/// BUNDLE.md, calls the entry (`--iterations` times), writes and frees the
/// outputs.
int rankBody(Job &job, loom_rt_ctx *ctx) {
  int64_t rank = loom_rt_rank(ctx);
  auto planIt = job.plans.find(rank);
  if (planIt == job.plans.end()) {
    std::fprintf(stderr, "loom-run: rank %lld: nothing was prepared for this "
                         "rank\n", (long long)rank);
    return 1;
  }
  const RankPlan &plan = planIt->second;
  RankResult &result = job.results.at(rank);
  const Entry &e = *job.entry;
  std::set<const void *> notOwned;

  // Inputs: each rank gets its own copy (the callee may not write them, but
  // the ranks of a threads job must not share writable memory).
  std::vector<Buffer> inputBufs;
  std::vector<std::vector<int64_t>> descs;
  for (const NpyArray *a : plan.inputs) {
    Buffer b = allocBuffer(a->numBytes());
    if (!b) {
      std::fprintf(stderr, "loom-run: rank %lld: out of memory for inputs\n",
                   (long long)rank);
      return 1;
    }
    std::memcpy(b.get(), a->data.get(), size_t(a->numBytes()));
    std::vector<int64_t> strides(a->shape.size());
    rowMajorStrides(int64_t(a->shape.size()), a->shape.data(), strides.data());
    descs.push_back(makeDescriptor(b.get(), a->shape, strides));
    notOwned.insert(b.get());
    inputBufs.push_back(std::move(b));
  }
  // Weights: already mapped and checked by the main thread (the mapping is
  // shared); register them as weights 0..n-1 of this rank.
  BoundWeights bound;
  std::string err;
  if (!bindWeights(ctx, e, plan.weights, bound, &err)) {
    std::fprintf(stderr, "loom-run: rank %lld: %s\n", (long long)rank,
                 err.c_str());
    return 1;
  }
  for (auto &d : bound.descs)
    descs.push_back(std::move(d));
  notOwned.insert(bound.notOwned.begin(), bound.notOwned.end());

  std::vector<int64_t> results(size_t(std::max<int64_t>(job.resultWords, 1)));
  std::vector<void *> args;
  args.push_back(results.data());
  args.push_back(ctx);
  for (auto &d : descs)
    args.push_back(d.data());

  const Options &opts = *job.opts;
  for (int it = 0; it < opts.iterations; ++it) {
    if (opts.bench)
      loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    std::fill(results.begin(), results.end(), 0);
    double t0 = nowMs();
    job.fn(args.data());
    if (opts.bench)
      loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    result.iterationMs.push_back(nowMs() - t0);
    if (it + 1 < opts.iterations)
      freeOutputs(e, results, notOwned);
  }
  // Every rank's entry has returned before anything is written.
  loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
  int status = 0;
  std::vector<PendingOutput> pending;
  if (rank == 0 || opts.allRanks) {
    std::string err;
    if (!writeOutputs(job, rank, results, pending, &err)) {
      std::fprintf(stderr, "loom-run: rank %lld: %s\n", (long long)rank,
                   err.c_str());
      discardOutputs(pending);
      status = 1;
    }
  }
  // The state (written in place by the entry) goes next to the outputs.
  if (opts.outputGiven && (rank == 0 || opts.allRanks))
    for (size_t k = 0; k < e.inputs.size() && !status; ++k) {
      const TensorSpec &t = e.inputs[k];
      if (t.state.empty())
        continue;
      std::string err;
      std::string path = (fs::path(opts.outputDir) /
                          stateFileName(t, rank, opts.allRanks)).string();
      if (!writeNpy(path, npyDescr(t.dtype), plan.inputs[k]->shape,
                    inputBufs[k].get(), plan.inputs[k]->numBytes(), &err)) {
        std::fprintf(stderr, "loom-run: rank %lld: %s\n", (long long)rank,
                     err.c_str());
        status = 1;
      }
    }
  freeOutputs(e, results, notOwned);
  // All or nothing: every rank learns whether any rank failed to write its
  // outputs; only if none did are the temporaries renamed into place.
  int32_t anyFailed = status;
  loom_rt_all_reduce(ctx, LOOM_RT_I32, LOOM_RT_MAX, &anyFailed, &anyFailed, 1,
                     LOOM_RT_ALL_AXES);
  if (anyFailed) {
    discardOutputs(pending);
    return status;
  }
  err.clear();
  if (!commitOutputs(pending, &err)) {
    std::fprintf(stderr, "loom-run: rank %lld: %s\n", (long long)rank,
                 err.c_str());
    return 1;
  }
  return 0;
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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

  Options opts;
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
      if (opts.backend != "threads" && opts.backend != "mpi")
        return fail("unknown --backend '" + opts.backend +
                    "'; expected threads or mpi");
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
    } else if (arg == "--bench") {
      opts.bench = true;
    } else if (arg == "--iterations") {
      const char *v = value("--iterations");
      if (!parseInt(v, 1, 1 << 30, n))
        return fail("--iterations must be at least 1 (got '" +
                    std::string(v) + "')");
      opts.iterations = int(n);
    } else if (arg == "--trace") {
      opts.trace = value("--trace");
    } else if (arg == "--timeout") {
      const char *v = value("--timeout");
      char *end = nullptr;
      opts.timeout = std::strtod(v, &end);
      if (end == v || *end || !(opts.timeout > 0))
        return fail("--timeout wants a positive number of seconds, or inf "
                    "(got '" + std::string(v) + "')");
      // 1e9 s (31 years) and more, inf included: no timeout (the runtime
      // saturates the deadline instead of overflowing it).
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

  fs::path manifestPath = fs::path(opts.bundle) / "manifest.json";
  std::error_code ec; // no exceptions: the error_code overloads throughout
  if (!fs::exists(manifestPath, ec))
    return fail(opts.bundle + ": no manifest.json; is this a bundle written "
                              "by `loomc -o " + opts.bundle + "`?");
#ifdef LOOM_RUN_NO_RUNTIME
  return fail("this loom-run was built without the runtime "
              "(-DLOOM_BUILD_RUNTIME=OFF) and cannot run bundles; reconfigure "
              "with -DLOOM_BUILD_RUNTIME=ON");
#else
  if (opts.gen.anyFlag && !opts.gen.requested())
    return fail("generation flags (--temp, --max-tokens, ...) need a prompt: "
                "--prompt, --prompt-ids, --prompts-file or --interactive");
  if (opts.gen.requested()) {
    GenerateOptions g = opts.gen;
    g.bundle = opts.bundle;
    g.ranks = opts.ranks;
    g.backend = opts.backend;
    g.backendGiven = opts.backendGiven;
    g.timeout = opts.timeout;
    g.trace = opts.trace;
    g.progress = opts.progress || isatty(2);
    g.bench = opts.bench;
    g.ctx = opts.ctx;
    g.threads = opts.threads;
    return loom::run::runGenerate(g);
  }
  return runBundle(opts);
#endif
}

#ifndef LOOM_RUN_NO_RUNTIME
namespace {
int runBundle(const Options &opts) {
  // --- Manifest ---------------------------------------------------------------
  double tStart = nowMs();
  Manifest m;
  std::string err;
  if (!loadManifest(opts.bundle, m, &err))
    return fail(err);

  const Entry *entry = &m.entries.front();
  if (!opts.entry.empty()) {
    entry = m.findEntry(opts.entry);
    if (!entry) {
      std::string names;
      for (const Entry &e : m.entries)
        names += (names.empty() ? "" : ", ") + e.name;
      return fail("no entry '" + opts.entry + "' in the bundle (entries: " +
                  names + ")");
    }
  }

  // --- Backend and ranks --------------------------------------------------------
  bool useMpi = false;
  int64_t mpiRank = 0;
  std::vector<int64_t> localRanks;
  if (!selectRanks(opts.bundle, m, opts.backend, opts.backendGiven,
                   opts.ranks, useMpi, mpiRank, localRanks, &err))
    return fail(err);
  bool printer = !useMpi || mpiRank == 0;

  // --- Library ------------------------------------------------------------------
  std::map<std::string, EntryFn> fns;
  if (!loadLibrary(opts.bundle, m, fns, &err))
    return fail(err);
  EntryFn fn = fns.at(entry->name);
  double tLoaded = nowMs();

  // --- Inputs -------------------------------------------------------------------
  // NAME=FILE binds by name; a bare FILE takes the next unbound input.
  std::vector<std::string> inputSpec(entry->inputs.size());
  {
    std::vector<std::string> positional;
    for (const std::string &a : opts.inputs) {
      size_t eq = a.find('=');
      std::string name = eq == std::string::npos ? "" : a.substr(0, eq);
      bool named = !name.empty() &&
                   name.find_first_of("/.") == std::string::npos;
      if (!named) {
        positional.push_back(a);
        continue;
      }
      size_t k = 0;
      while (k < entry->inputs.size() && entry->inputs[k].name != name)
        ++k;
      if (k == entry->inputs.size()) {
        std::string names;
        for (const TensorSpec &t : entry->inputs)
          names += (names.empty() ? "" : ", ") + t.name;
        return fail("--input " + a + ": entry '" + entry->name +
                    "' has no input '" + name + "' (inputs: " +
                    (names.empty() ? "none" : names) + ")");
      }
      if (!inputSpec[k].empty())
        return fail("input '" + name + "' given twice");
      inputSpec[k] = a.substr(eq + 1);
    }
    size_t next = 0;
    for (const std::string &p : positional) {
      while (next < inputSpec.size() && !inputSpec[next].empty())
        ++next;
      if (next == inputSpec.size())
        return fail("--input " + p + ": entry '" + entry->name + "' takes " +
                    std::to_string(entry->inputs.size()) +
                    " input(s); this one is extra");
      inputSpec[next++] = p;
    }
    for (size_t k = 0; k < inputSpec.size(); ++k)
      if (inputSpec[k].empty() && entry->inputs[k].state.empty())
        return fail("missing input '" + entry->inputs[k].name + "' (" +
                    dtypeName(entry->inputs[k].dtype) + " " +
                    shapeString(entry->inputs[k].shape) + ") of entry '" +
                    entry->name + "'; pass --input " + entry->inputs[k].name +
                    "=FILE.npy");
  }
  Job job;
  job.manifest = &m;
  job.entry = entry;
  job.fn = fn;
  job.opts = &opts;
  for (const OutputSpec &o : entry->outputs)
    job.resultWords += 3 + 2 * o.rank;
  std::map<std::string, std::unique_ptr<NpyArray>> loaded; // by path
  for (int64_t r : localRanks) {
    RankPlan &plan = job.plans[r];
    job.results[r];
    for (size_t k = 0; k < entry->inputs.size(); ++k) {
      const TensorSpec &spec = entry->inputs[k];
      if (inputSpec[k].empty()) { // state made below, zero-filled
        plan.inputs.push_back(nullptr);
        continue;
      }
      std::string path = replaceAll(inputSpec[k], "{rank}", std::to_string(r));
      std::string where = "input '" + spec.name + "'" +
                          (path != inputSpec[k]
                               ? " of rank " + std::to_string(r) : "") +
                          " ('" + path + "')";
      auto it = loaded.find(path);
      if (it == loaded.end()) {
        auto a = std::make_unique<NpyArray>();
        if (!readNpy(path, *a, &err))
          return fail(where + ": " + err);
        it = loaded.emplace(path, std::move(a)).first;
      }
      // Checked for every (input, rank): one file may feed several inputs.
      const NpyArray &a = *it->second;
      if (!npyAccepts(spec.dtype, a.descr))
        return fail(where + ": dtype is '" + a.descr + "' but entry '" +
                    entry->name + "' expects " + dtypeName(spec.dtype) +
                    " ('" + npyDescr(spec.dtype) + "')");
      bool ok = a.shape.size() == spec.shape.size();
      for (size_t d = 0; ok && d < spec.shape.size(); ++d)
        ok = spec.shape[d] < 0 || spec.shape[d] == a.shape[d];
      if (!ok)
        return fail(where + ": shape " + shapeString(a.shape) +
                    " does not match " + shapeString(spec.shape) +
                    " expected by entry '" + entry->name + "' (? = any)");
      plan.inputs.push_back(it->second.get());
    }
  }
  if (hasState(*entry)) {
    // The KV caches: one context length for every rank and state input.
    std::vector<const NpyArray *> given;
    for (size_t k = 0; k < entry->inputs.size(); ++k)
      if (!entry->inputs[k].state.empty())
        given.push_back(job.plans[localRanks.front()].inputs[k]);
    int64_t ctx = 0;
    if (!chooseContext(m, *entry, opts.ctx, given,
                       int64_t(localRanks.size()) + 1, availableMemory(), ctx,
                       &err))
      return fail(err);
    for (size_t k = 0; k < entry->inputs.size(); ++k) {
      const TensorSpec &spec = entry->inputs[k];
      if (!inputSpec[k].empty() || spec.state.empty())
        continue;
      auto a = zeroState(spec, ctx);
      if (!a)
        return fail("out of memory for the KV cache '" + spec.name + "'");
      for (int64_t r : localRanks)
        job.plans[r].inputs[k] = a.get();
      loaded.emplace("<state " + spec.name + ">", std::move(a));
    }
    for (int64_t r : localRanks) {
      const NpyArray *pos = nullptr;
      for (size_t k = 0; k < entry->inputs.size(); ++k)
        if (entry->inputs[k].name == "positions")
          pos = job.plans[r].inputs[k];
      if (!checkPositions(*entry, pos, ctx, &err))
        return fail(err);
    }
  }
  double tInputs = nowMs();

  // --- Weights: map, check and prefault every local slice before running ------
  MappedWeights mapped;
  if (!mapWeights(opts.bundle, m, *entry, localRanks,
                  opts.progress || isatty(2), mapped, &err))
    return fail(err);
  for (auto &[r, ws] : mapped.perRank)
    job.plans[r].weights = std::move(ws);
  int64_t weightBytes = mapped.bytes;
  size_t numSlices = mapped.slices;
  double tWeights = nowMs();

  std::error_code ec;
  fs::create_directories(opts.outputDir, ec);
  if (ec || !fs::is_directory(opts.outputDir, ec))
    return fail("--output " + opts.outputDir + ": cannot create the "
                "directory: " + (ec ? ec.message() : "not a directory"));

  // --- Run ----------------------------------------------------------------------
  loom::rt::LaunchOptions launch;
  launch.timeoutSeconds = opts.timeout;
  launch.tracePath = opts.trace;
  launch.onFailure = loom::rt::OnFailure::Return;
  launch.threadsPerRank = opts.threads;
  auto body = [&job](loom_rt_ctx *ctx) { return rankBody(job, ctx); };
  std::vector<int64_t> mesh = m.meshShape;
  if (mesh.empty())
    mesh.push_back(1);
  double tRun0 = nowMs();
  int rc;
  if (useMpi)
    rc = loom::rt::runMpi(mesh, body, launch);
  else
    rc = loom::rt::runThreads(int(m.numRanks), mesh, body, launch);
  double tRun1 = nowMs();
  if (rc != 0)
    return fail("the job failed (" + std::string(useMpi ? "mpi" : "threads") +
                " backend, " + std::to_string(m.numRanks) + " ranks)");

  if (opts.bench && printer) {
    // Iteration time = the slowest rank's (barrier to barrier).
    std::vector<double> iters(size_t(opts.iterations), 0.0);
    for (auto &[r, res] : job.results)
      for (size_t i = 0; i < res.iterationMs.size() && i < iters.size(); ++i)
        iters[i] = std::max(iters[i], res.iterationMs[i]);
    double mn = *std::min_element(iters.begin(), iters.end());
    double mx = *std::max_element(iters.begin(), iters.end());
    std::printf("loom-run bench: model %s, entry %s, %lld rank(s), %s, "
                "%d iteration(s), %s thread(s) per rank\n",
                m.model.c_str(), entry->name.c_str(), (long long)m.numRanks,
                useMpi ? "mpi" : "threads", opts.iterations,
                loom::run::threadsString(opts.threads, useMpi, m.numRanks)
                    .c_str());
    std::printf("  %-22s %12s\n", "phase", "ms");
    std::printf("  %-22s %12.3f\n", "manifest+dlopen", tLoaded - tStart);
    std::printf("  %-22s %12.3f\n", "inputs", tInputs - tLoaded);
    std::printf("  %-22s %12.3f   (%zu slices, %s)\n", "weights (map)",
                tWeights - tInputs, numSlices,
                humanBytes(double(weightBytes)).c_str());
    std::printf("  %-22s %12.3f\n", "run: min", mn);
    std::printf("  %-22s %12.3f\n", "run: median", median(iters));
    std::printf("  %-22s %12.3f\n", "run: max", mx);
    std::printf("  %-22s %12.3f   (launch, all iterations, outputs)\n",
                "job", tRun1 - tRun0);
    std::printf("  %-22s %12.3f\n", "total", tRun1 - tStart);
    std::fflush(stdout);
  }
  // The library stays loaded until exit: a trace or atexit handler of the
  // generated code may still refer to it.
  return 0;
}
} // namespace
#endif // LOOM_RUN_NO_RUNTIME
