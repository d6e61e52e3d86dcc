//===- LoomModule.cpp - loom._loom: the compiler and runtime for Python ---===//
//
// The nanobind extension under python/loom (docs/PYTHON.md): the compile
// driver of driver in process (the same code as loomc), and the
// runtime's executor (include/loom/runtime/Executor.h, loom-run's engine)
// for bundles. Errors are values on the C++ side and exceptions here:
// CompileError carries the driver's and MLIR's diagnostics with their
// locations, BundleError a bundle that cannot be opened, RunError a job
// that failed; ValueError a bad input to `run`.
//
// The GIL is released around every compile, run and generation. Inputs
// are borrowed from the caller's arrays (no copy here), outputs are the
// executor's buffers wrapped without a copy. The bundle's library resolves
// the runtime's C ABI (loom_rt_*) from this extension, which links the
// executor whole and makes its symbols global at import (see
// makeSymbolsGlobal).
//
//===----------------------------------------------------------------------===//

#include "driver/Driver.h"
#include "driver/PlanHtml.h"
#include "loom/runtime/Executor.h"
#include "python/src/ShardingRules.h"

#include "llvm/Support/raw_ostream.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <condition_variable>
#include <deque>
#include <dlfcn.h>
#include <mutex>
#include <thread>

namespace nb = nanobind;
using namespace nb::literals;
namespace run = loom::run;

namespace {

/// Base of the package's errors (loom.LoomError).
struct LoomError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct CompileError : LoomError {
  using LoomError::LoomError;
};
struct BundleError : LoomError {
  using LoomError::LoomError;
};
struct RunError : LoomError {
  using LoomError::LoomError;
};

/// The bundle's library is dlopen'ed by the executor and resolves the
/// runtime's symbols (loom_rt_*, memrefCopy) from the process. Python loads
/// extensions with RTLD_LOCAL, so this library promotes itself to the
/// global scope once (RTLD_NOLOAD: the already loaded copy).
void makeSymbolsGlobal() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&makeSymbolsGlobal), &info) ||
      !info.dli_fname)
    throw std::runtime_error("loom: cannot find the extension's own path");
  if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
    throw std::runtime_error(std::string("loom: cannot export the runtime's "
                                         "symbols: ") +
                             dlerror());
}

// --- Compile ----------------------------------------------------------------

/// Runs the driver; returns (IR text when the compile stops before the
/// bundle, the messages of a successful compile: warnings, notes).
std::pair<std::string, std::string>
compileModel(const loom::driver::CompileOptions &given,
             std::vector<std::pair<std::string, nb::object>> shardingRules) {
  loom::driver::CompileOptions o = given;
  std::string ir, messages;
  o.irText = &ir;
  o.toolName = "loom";
  std::vector<loom::python::Rule> rules;
  for (auto &[name, call] : shardingRules)
    rules.push_back({name, call});
  if (!rules.empty())
    o.beforeShard = [&](mlir::Operation *module, llvm::raw_ostream &diag) {
      return loom::python::applyShardingRules(module, diag, rules, o.mesh);
    };
  loom::driver::Outcome outcome;
  {
    nb::gil_scoped_release release;
    llvm::raw_string_ostream diag(messages);
    outcome = loom::driver::compile(o, diag);
  }
  if (!outcome.ok()) {
    while (!messages.empty() && messages.back() == '\n')
      messages.pop_back();
    throw CompileError(messages.empty() ? "compile failed" : messages);
  }
  return {std::move(ir), std::move(messages)};
}

/// loomc --emit=plan-html of a plan JSON (renderPlanHtml, the same code),
/// with the run of the Chrome trace at `tracePath` beside the prediction
/// (--trace-overlay) when it is given.
std::string planHtml(const std::string &planJson,
                     std::optional<std::string> tracePath) {
  llvm::Expected<llvm::json::Value> plan = llvm::json::parse(planJson);
  if (!plan)
    throw nb::value_error(
        ("not a plan JSON: " + llvm::toString(plan.takeError())).c_str());
  std::optional<llvm::json::Value> trace;
  if (tracePath) {
    llvm::json::Value value = nullptr;
    std::string error;
    if (!loom::driver::readTraceFiles(*tracePath, value, error))
      throw nb::value_error(("trace: " + error).c_str());
    trace = std::move(value);
  }
  nb::gil_scoped_release release;
  return loom::driver::renderPlanHtml(*plan, trace);
}

// --- Arrays
// -------------------------------------------------------------------

using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

/// The bundle dtype of a numpy array's dtype; false when it has none.
bool toDType(nb::dlpack::dtype t, run::DType &out) {
  using C = nb::dlpack::dtype_code;
  struct Row {
    C code;
    uint8_t bits;
    run::DType dtype;
  };
  static constexpr Row kRows[] = {
      {C::Float, 32, run::DType::F32},   {C::Float, 16, run::DType::F16},
      {C::Bfloat, 16, run::DType::BF16}, {C::Float, 64, run::DType::F64},
      {C::Int, 8, run::DType::I8},       {C::Int, 32, run::DType::I32},
      {C::Int, 64, run::DType::I64},     {C::UInt, 8, run::DType::U8},
      {C::Bool, 8, run::DType::I1}};
  if (t.lanes != 1)
    return false;
  for (const Row &r : kRows)
    if (uint8_t(r.code) == t.code && r.bits == t.bits) {
      out = r.dtype;
      return true;
    }
  return false;
}

nb::dlpack::dtype fromDType(run::DType t) {
  using C = nb::dlpack::dtype_code;
  auto make = [](C code, uint8_t bits) {
    return nb::dlpack::dtype{uint8_t(code), bits, 1};
  };
  switch (t) {
  case run::DType::F32:
    return make(C::Float, 32);
  case run::DType::F16:
    return make(C::Float, 16);
  case run::DType::BF16:
    return make(C::Bfloat, 16);
  case run::DType::F64:
    return make(C::Float, 64);
  case run::DType::I8:
    return make(C::Int, 8);
  case run::DType::I32:
    return make(C::Int, 32);
  case run::DType::I64:
    return make(C::Int, 64);
  case run::DType::U8:
    return make(C::UInt, 8);
  case run::DType::I1:
    return make(C::Bool, 8);
  }
  return make(C::Float, 32);
}

/// A numpy array over an executor output, sharing its owner (no copy).
nb::object wrapOutput(const run::Array &a) {
  std::vector<size_t> shape(a.shape.begin(), a.shape.end());
  auto *owner = new std::shared_ptr<void>(a.owner);
  nb::capsule keep(owner, [](void *p) noexcept {
    delete static_cast<std::shared_ptr<void> *>(p);
  });
  return nb::ndarray<nb::numpy>(a.data, shape.size(), shape.data(), keep,
                                nullptr, fromDType(a.dtype))
      .cast();
}

std::string describe(const run::TensorSpec &t) {
  return std::string(run::dtypeName(t.dtype)) + " " + run::shapeString(t.shape);
}

// --- Bundle
// -------------------------------------------------------------------

/// What a Bundle and its running generations share: one job at a time.
struct Session {
  std::unique_ptr<run::Executor> executor;
  std::mutex busy;
};

/// A text generation running on a worker thread; Python iterates over the
/// pieces as they come (the GIL released while it waits).
class Generation {
public:
  Generation(std::shared_ptr<Session> session, run::GenerateOptions options,
             bool withText)
      : session(std::move(session)), withText(withText) {
    worker =
        std::thread([this, options = std::move(options)] { work(options); });
  }
  ~Generation() {
    nb::gil_scoped_release release;
    if (worker.joinable())
      worker.join();
  }

  /// The next piece (text) or token id (a bundle without a tokenizer).
  nb::object next() {
    Item item;
    {
      nb::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(mutex);
      ready.wait(lock, [&] { return !items.empty() || done; });
      if (!items.empty()) {
        item = std::move(items.front());
        items.pop_front();
      } else {
        item.end = true;
      }
    }
    if (!item.end)
      return withText ? nb::object(nb::str(item.text.data(), item.text.size()))
                      : nb::object(nb::int_(item.token));
    if (!error.empty())
      throw RunError(error);
    throw nb::stop_iteration();
  }

  /// After the end: what was generated (ids, stop reason, ...).
  const run::GenerateResult &result() {
    {
      nb::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(mutex);
      ready.wait(lock, [&] { return done; });
    }
    if (!error.empty())
      throw RunError(error);
    return res;
  }

private:
  struct Item {
    std::string text;
    int32_t token = 0;
    bool end = false;
  };

  void work(const run::GenerateOptions &options) {
    run::GenerateCallbacks callbacks;
    callbacks.onText = [&](size_t, std::string_view piece, bool) {
      if (withText && !piece.empty())
        push({std::string(piece), 0, false});
    };
    callbacks.onToken = [&](size_t, int32_t token, size_t) {
      if (!withText)
        push({{}, token, false});
    };
    std::string err;
    {
      std::lock_guard<std::mutex> job(session->busy);
      run::Status st = session->executor->generate(options, callbacks, res);
      if (!st)
        err = st.error().message;
      if (res.jobFailed)
        for (const std::string &m : res.messages)
          err += (err.empty() ? "" : "\n") + m;
    }
    std::lock_guard<std::mutex> lock(mutex);
    error = std::move(err);
    done = true;
    ready.notify_all();
  }
  void push(Item item) {
    std::lock_guard<std::mutex> lock(mutex);
    items.push_back(std::move(item));
    ready.notify_all();
  }

  std::shared_ptr<Session> session;
  bool withText;
  std::thread worker;
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Item> items;
  bool done = false;
  std::string error;
  run::GenerateResult res;
};

class Bundle {
public:
  static Bundle load(const std::string &path, int ranks, int threads,
                     double timeout, const std::string &backend) {
    run::OpenOptions o;
    if (backend == "auto")
      o.backend = run::Backend::Auto;
    else if (backend == "threads")
      o.backend = run::Backend::Threads;
    else if (backend == "mpi")
      o.backend = run::Backend::Mpi;
    else
      throw nb::value_error(("backend '" + backend +
                             "': expected 'auto' (MPI under mpirun, else "
                             "threads), 'threads' or 'mpi'")
                                .c_str());
    // Python runs many jobs in one process: MPI stays up between them.
    o.finalizeMpi = false;
    o.ranks = ranks;
    o.threadsPerRank = threads;
    o.timeoutSeconds = timeout;
    o.quiet = true;
    run::Expected<std::unique_ptr<run::Executor>> ex = [&] {
      nb::gil_scoped_release release;
      return run::Executor::open(path, o);
    }();
    if (!ex)
      throw BundleError(ex.error().message);
    Bundle b;
    b.session = std::make_shared<Session>();
    b.session->executor = ex.take();
    return b;
  }

  const run::Manifest &manifest() const {
    return session->executor->manifest();
  }

  const run::Entry &entry(const std::string &name) const {
    auto e = session->executor->entry(name);
    if (!e)
      throw nb::value_error(e.error().message.c_str());
    return **e;
  }

  nb::dict run(const std::string &entryName, nb::dict inputs, bool copyInputs,
               int64_t ctx, std::vector<int64_t> *lastAddresses,
               int microbatches = 1) {
    const run::Entry &e = entry(entryName);
    std::vector<InArray> arrays;
    std::vector<run::Input> ins;
    arrays.reserve(inputs.size());
    for (auto [key, value] : inputs) {
      std::string name = nb::cast<std::string>(key);
      const run::TensorSpec *spec = nullptr;
      for (const run::TensorSpec &t : e.inputs)
        if (t.name == name)
          spec = &t;
      InArray a;
      if (!nb::try_cast(value, a, /*convert=*/false))
        throw nb::value_error(
            ("input '" + name +
             "': expected a C-contiguous CPU array (numpy.ndarray)" +
             (spec ? " of " + describe(*spec) : std::string()))
                .c_str());
      run::Input in;
      in.name = name;
      if (!toDType(a.dtype(), in.array.dtype))
        throw nb::value_error(
            ("input '" + name + "': unsupported dtype" +
             (spec ? "; expected " + describe(*spec) : std::string()))
                .c_str());
      // The executor says "dtype is f64 but ... expects f32"; here the
      // expected shape comes with it (what to pass instead).
      if (spec && in.array.dtype != spec->dtype)
        throw nb::value_error(
            ("input '" + name + "': dtype " + run::dtypeName(in.array.dtype) +
             ", but entry '" + e.name + "' expects " + describe(*spec))
                .c_str());
      for (size_t d = 0; d < a.ndim(); ++d)
        in.array.shape.push_back(int64_t(a.shape(d)));
      in.array.data = a.data();
      arrays.push_back(a);
      ins.push_back(std::move(in));
    }
    if (lastAddresses) {
      lastAddresses->clear();
      for (const run::Input &in : ins)
        lastAddresses->push_back(int64_t(uintptr_t(in.array.data)));
    }
    run::RunOptions ro;
    ro.entry = e.name;
    ro.copyInputs = copyInputs;
    ro.ctx = ctx;
    ro.microbatches = microbatches;
    run::RunResult result;
    run::Status st = run::success();
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> job(session->busy);
      st = session->executor->run(ins, ro, result);
    }
    if (!st) {
      // Before the job starts, the executor checks the inputs against the
      // entry (names, dtypes, shapes): the caller's mistake.
      if (!result.jobFailed)
        throw nb::value_error(st.error().message.c_str());
      std::string text = st.error().message;
      for (const std::string &m : result.messages)
        if (text.find(m) == std::string::npos)
          text += "\n" + m;
      throw RunError(text);
    }
    nb::dict out;
    // Under MPI only the process of the returning rank gets outputs.
    if (result.ranks.empty())
      return out;
    const run::RankOutputs &r0 = result.ranks.front();
    for (size_t k = 0; k < r0.outputs.size() && k < e.outputs.size(); ++k)
      out[nb::str(e.outputs[k].name.c_str())] = wrapOutput(r0.outputs[k]);
    return out;
  }

  std::shared_ptr<Generation>
  generate(nb::object prompt, int64_t maxTokens, float temperature,
           int64_t topK, float topP, float minP, float repeatPenalty,
           std::optional<uint64_t> seed, bool chat,
           std::optional<std::string> system, std::vector<std::string> stop,
           int64_t ctx, bool ignoreEog) {
    run::GenerateOptions o;
    if (nb::isinstance<nb::str>(prompt))
      o.prompts.push_back(nb::cast<std::string>(prompt));
    else
      o.promptIds.push_back(nb::cast<std::vector<int32_t>>(prompt));
    bool withText = !manifest().tokenizer.file.empty();
    if (!withText && o.promptIds.empty())
      throw nb::value_error("this bundle has no tokenizer: give the prompt "
                            "as a list of token ids");
    o.chat = chat;
    if (system) {
      o.system = *system;
      o.systemGiven = true;
    }
    o.maxTokens = maxTokens;
    o.ctx = ctx;
    o.sampling.temperature = temperature;
    o.sampling.topK = topK;
    o.sampling.topP = topP;
    o.sampling.minP = minP;
    o.sampling.repeatPenalty = repeatPenalty;
    o.seedGiven = seed.has_value();
    o.sampling.seed = seed.value_or(0);
    o.stops = std::move(stop);
    o.ignoreEog = ignoreEog;
    std::string bad = run::validateSamplingParams(o.sampling);
    if (!bad.empty())
      throw nb::value_error(bad.c_str());
    return std::make_shared<Generation>(session, std::move(o), withText);
  }

  void resetState() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> job(session->busy);
    session->executor->resetState();
  }

  std::shared_ptr<Session> session;
  std::vector<int64_t> lastInputAddresses;
};

nb::list specs(const std::vector<run::TensorSpec> &ts) {
  nb::list l;
  for (const run::TensorSpec &t : ts)
    l.append(nb::make_tuple(t.name, run::dtypeName(t.dtype), t.shape));
  return l;
}

} // namespace

NB_MODULE(_loom, m) {
  m.doc() = "Loom's compiler driver and runtime executor (use the `loom` "
            "package, docs/PYTHON.md).";
  makeSymbolsGlobal();

  auto loomError = nb::exception<LoomError>(m, "LoomError", PyExc_RuntimeError);
  nb::exception<CompileError>(m, "CompileError", loomError);
  nb::exception<BundleError>(m, "BundleError", loomError);
  nb::exception<RunError>(m, "RunError", loomError);

  using loom::driver::CompileOptions;
  nb::class_<CompileOptions>(
      m, "CompileOptions",
      "loomc's flags (loomc --help): one field per flag, snake_case.")
      .def(nb::init<>())
      .def_rw("input", &CompileOptions::input, "The model path.")
      .def_rw("output", &CompileOptions::output,
              "-o: a bundle directory, a plan or IR file.")
      .def_rw("compile_to", &CompileOptions::compileTo)
      .def_rw("compile_from", &CompileOptions::compileFrom)
      .def_rw("mesh", &CompileOptions::mesh)
      .def_rw("quant", &CompileOptions::quant)
      .def_rw("quant_skip", &CompileOptions::quantSkip)
      .def_rw("quant_rules", &CompileOptions::quantRules)
      .def_rw("quant_act", &CompileOptions::quantAct)
      .def_rw("quant_file", &CompileOptions::quantFile)
      .def_rw("quant_report", &CompileOptions::quantReport)
      .def_rw("quant_interleave", &CompileOptions::quantInterleave)
      .def_rw("plugins", &CompileOptions::plugins)
      .def_rw("shard_passes", &CompileOptions::shardPasses)
      .def_rw("device", &CompileOptions::device)
      .def_rw("memory_limit", &CompileOptions::memoryLimit)
      .def_rw("stages", &CompileOptions::stages,
              "--stages: layer ranges per pipeline stage (\"0-9,10-19\"; "
              "empty: balanced).")
      .def_rw("microbatches", &CompileOptions::microbatches,
              "--microbatches: the microbatches the pipeline plan assumes "
              "(0: not given: 1, or with --devices the layout search's).")
      .def_rw("target", &CompileOptions::target)
      .def_rw("emit", &CompileOptions::emit)
      .def_rw("verbose", &CompileOptions::verbose)
      .def_rw("opt_level", &CompileOptions::optLevel)
      .def_rw("jobs", &CompileOptions::jobs)
      .def_rw("large_function", &CompileOptions::largeFunction)
      .def_rw("large_function_opt", &CompileOptions::largeFunctionOpt)
      .def_rw("context_limit", &CompileOptions::contextLimit)
      .def_rw("weight_dtype", &CompileOptions::weightDtype)
      .def_rw("portable", &CompileOptions::portable)
      .def_rw("qmatmul", &CompileOptions::qmatmul)
      .def_rw("cpu", &CompileOptions::cpu)
      .def_rw("no_outline_layers", &CompileOptions::noOutlineLayers)
      .def_rw("no_gemm", &CompileOptions::noGemm)
      .def_rw("gpu_max_tokens", &CompileOptions::gpuMaxTokens,
              "target='cuda': the bound of every run-time input size (the "
              "device memory plan; default: the model's context_length)")
      .def_rw("gpu_dtype", &CompileOptions::gpuDtype,
              "target='cuda': activations on the device, 'f32' (default), "
              "'f16' or 'bf16' (loomc --gpu-dtype)")
      .def_rw("qmm_tile", &CompileOptions::qmmTile)
      .def_rw("qmm_prefetch", &CompileOptions::qmmPrefetch)
      .def_rw("plan_summary", &CompileOptions::planSummary,
              "Print the plan's summary with emit='plan'.");

  m.def("compile_model", &compileModel, "options"_a,
        "sharding_rules"_a = std::vector<std::pair<std::string, nb::object>>(),
        "Runs the compile driver (loomc's code) in this process. Returns "
        "(the IR text when it stops before the bundle, the messages of a "
        "successful compile); raises CompileError with the diagnostics. "
        "sharding_rules: (name, function) pairs called with each op before "
        "the planner (loom.compile's sharding_rules adapts them).");

  m.def("plan_html", &planHtml, "plan_json"_a, "trace"_a = nb::none(),
        "The plan drawn as one self-contained HTML page: what `loomc "
        "PLAN.json --emit=plan-html [--trace-overlay TRACE]` writes "
        "(docs/PLAN-HTML.md). Raises ValueError for a text that is not "
        "JSON or a trace that cannot be read.");

  nb::class_<Generation>(m, "Generation",
                         "The pieces of a running generation: text (or "
                         "token ids for a bundle without a tokenizer).")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", &Generation::next)
      .def_prop_ro(
          "tokens",
          [](Generation &g) {
            const auto &r = g.result();
            return r.sequences.empty() ? std::vector<int32_t>()
                                       : r.sequences[0].ids;
          },
          "The generated token ids (waits for the end).")
      .def_prop_ro(
          "text",
          [](Generation &g) {
            const auto &r = g.result();
            return r.sequences.empty()
                       ? std::string()
                       : run::printableText(r.sequences[0].text);
          },
          "The whole generated text as loom-run prints it (valid UTF-8; "
          "waits for the end).")
      .def_prop_ro(
          "stop",
          [](Generation &g) {
            const auto &r = g.result();
            return r.sequences.empty() ? std::string() : r.sequences[0].stop;
          },
          "Why it stopped: eog, max-tokens, stop-string or context.");

  nb::class_<Bundle>(m, "Executor",
                     "An opened bundle (the runtime's executor).")
      .def_static("load", &Bundle::load, "path"_a, "ranks"_a = 0,
                  "threads"_a = 0, "timeout"_a = 0.0, "backend"_a = "auto",
                  "Opens a bundle: checks the manifest, the library and the "
                  "CPU, dlopens it; chooses the backend (auto: MPI under "
                  "mpirun, else threads). Raises BundleError.")
      .def_prop_ro("backend",
                   [](Bundle &b) {
                     return std::string(
                         run::backendName(b.session->executor->usesMpi()));
                   })
      .def_prop_ro(
          "local_ranks",
          [](Bundle &b) { return b.session->executor->localRanks(); },
          "The ranks this process runs (every rank on threads, "
          "this process's one under MPI).")
      .def_prop_ro("path",
                   [](Bundle &b) { return b.session->executor->bundleDir(); })
      .def_prop_ro("model", [](Bundle &b) { return b.manifest().model; })
      .def_prop_ro("mesh", [](Bundle &b) { return b.manifest().meshString(); })
      .def_prop_ro("num_ranks", [](Bundle &b) { return b.manifest().numRanks; })
      .def_prop_ro("entries",
                   [](Bundle &b) {
                     std::vector<std::string> names;
                     for (const run::Entry &e : b.manifest().entries)
                       names.push_back(e.name);
                     return names;
                   })
      .def(
          "inputs",
          [](Bundle &b, const std::string &entry) {
            return specs(b.entry(entry).inputs);
          },
          "entry"_a = "",
          "(name, dtype, shape) of each input of an entry (-1: any size).")
      .def(
          "outputs",
          [](Bundle &b, const std::string &entry) {
            nb::list l;
            for (const run::OutputSpec &o : b.entry(entry).outputs)
              l.append(nb::make_tuple(o.name, run::dtypeName(o.dtype), o.rank));
            return l;
          },
          "entry"_a = "", "(name, dtype, rank) of each output of an entry.")
      .def(
          "run",
          [](Bundle &b, const std::string &entry, nb::dict inputs,
             bool copyInputs, int64_t ctx, int microbatches) {
            return b.run(entry, inputs, copyInputs, ctx, &b.lastInputAddresses,
                         microbatches);
          },
          "entry"_a, "inputs"_a, "copy_inputs"_a = false, "ctx"_a = 0,
          "microbatches"_a = 1,
          "Runs an entry on every rank (threads); returns rank 0's outputs. "
          "Raises ValueError for inputs that do not match the entry, "
          "RunError when the job fails.")
      .def_prop_ro(
          "last_input_addresses",
          [](Bundle &b) { return b.lastInputAddresses; },
          "The data addresses handed to the executor by the last run.")
      .def("generate", &Bundle::generate, "prompt"_a, "max_tokens"_a = 256,
           "temperature"_a = 0.0f, "top_k"_a = 0, "top_p"_a = 1.0f,
           "min_p"_a = 0.0f, "repeat_penalty"_a = 1.0f, "seed"_a = nb::none(),
           "chat"_a = false, "system"_a = nb::none(),
           "stop"_a = std::vector<std::string>(), "ctx"_a = 0,
           "ignore_eos"_a = false,
           "Starts a generation with the bundle's decode entry; iterate "
           "over the result for the pieces.")
      .def("reset_state", &Bundle::resetState,
           "Frees the state (KV caches) kept between runs.");
}
