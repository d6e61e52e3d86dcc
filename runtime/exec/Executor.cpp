//===- Executor.cpp - open a bundle, run its entries on N ranks -----------===//
//
// The rank body that loom-run had: per-rank inputs, the weights bound to the
// rank's context, the arguments packed per docs/BUNDLE.md, the entry called
// once per iteration, the outputs turned into arrays that own their memory,
// and the all-or-nothing agreement of the ranks on the caller's staging of
// them. The main thread checks everything it can before any rank starts.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Executor.h"

#include "Loader.h"
#include "loom/runtime/State.h"
#include "loom/runtime/Strided.h"
#include "loom/runtime/abi.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>

namespace loom::run {

int64_t ArrayRef::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t Array::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

const char *backendName(bool mpi) { return mpi ? "mpi" : "threads"; }

void RankErrors::report(int64_t rank, const std::string &msg) {
  std::string line = "rank " + std::to_string(rank) + ": " + msg;
  if (open->onRankError)
    open->onRankError(line);
  std::lock_guard<std::mutex> lock(mu);
  messages.push_back(line);
}

loom::rt::LaunchOptions launchOptions(const OpenOptions &o) {
  loom::rt::LaunchOptions launch;
  launch.timeoutSeconds = o.timeoutSeconds;
  launch.threadsPerRank = o.threadsPerRank;
  launch.tracePath = o.tracePath;
  launch.quiet = o.quiet;
  launch.onFailure = loom::rt::OnFailure::Return;
  return launch;
}

namespace {

/// A buffer shared by the arrays that view it.
std::shared_ptr<void> share(Buffer b) {
  return std::shared_ptr<void>(b.release(), FreeDeleter());
}

} // namespace

Executor::Executor(std::unique_ptr<Impl> impl) : P(std::move(impl)) {}
Executor::~Executor() = default;
const std::string &Executor::bundleDir() const { return P->bundle; }
const Manifest &Executor::manifest() const { return P->m; }
bool Executor::usesMpi() const { return P->useMpi; }
const std::vector<int64_t> &Executor::localRanks() const {
  return P->localRanks;
}
const OpenOptions &Executor::options() const { return P->opts; }

Expected<std::unique_ptr<Executor>> Executor::open(const std::string &bundleDir,
                                                   const OpenOptions &options) {
  auto impl = std::make_unique<Impl>();
  impl->bundle = bundleDir;
  impl->opts = options;
  std::string err;
  if (!loadManifest(bundleDir, impl->m, &err))
    return Error{err};
  bool given = options.backend != Backend::Auto;
  std::string backend = options.backend == Backend::Mpi ? "mpi" : "threads";
  if (!selectRanks(bundleDir, impl->m, backend, given, options.ranks,
                   impl->useMpi, impl->mpiRank, impl->localRanks, &err))
    return Error{err};
  if (!loadLibrary(bundleDir, impl->m, impl->fns, &err))
    return Error{err};
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

Expected<const Entry *> Executor::entry(const std::string &name) const {
  if (name.empty())
    return &P->m.entries.front();
  if (const Entry *e = P->m.findEntry(name))
    return e;
  std::string names;
  for (const Entry &e : P->m.entries)
    names += (names.empty() ? "" : ", ") + e.name;
  return Error{"no entry '" + name + "' in the bundle (entries: " + names +
               ")"};
}

Expected<PreparedEntry> Executor::prepare(const std::string &name) {
  auto e = entry(name);
  if (!e)
    return e.takeError();
  PreparedEntry out;
  double t0 = nowMs();
  auto it = P->mapped.find((*e)->name);
  if (it == P->mapped.end()) {
    MappedWeights w;
    std::string err;
    if (!mapWeights(P->bundle, P->m, **e, P->localRanks, P->opts.progress, w,
                    &err))
      return Error{err};
    it = P->mapped.emplace((*e)->name, std::move(w)).first;
  }
  out.weightBytes = it->second.bytes;
  out.weightSlices = it->second.slices;
  out.mapMs = nowMs() - t0;
  return out;
}

void Executor::resetState(const std::string &entry) {
  if (entry.empty())
    P->state.clear();
  else
    P->state.erase(entry);
}

namespace {

/// The job shared by every rank body of one run.
struct Job {
  const Entry *entry = nullptr;
  EntryFn fn = nullptr;
  const RunOptions *opts = nullptr;
  const OpenOptions *open = nullptr;
  /// Local rank -> one value per input (manifest order; state: the
  /// executor's buffer).
  std::map<int64_t, std::vector<ArrayRef>> inputs;
  std::map<int64_t, std::vector<bool>> borrowed; ///< passed without a copy
  const std::map<int64_t, std::vector<PlannedWeight>> *weights = nullptr;
  const EntryState *state = nullptr;
  std::map<int64_t, RankOutputs> results; ///< every local rank, preallocated
  int64_t resultWords = 0;
  RankErrors errors;
};

/// Turns the rank's outputs into arrays. A contiguous output the callee
/// allocated is kept as is (its `allocated` pointer is added to `taken`);
/// a strided one, or one that aliases an input or a weight, is copied.
Status collectOutputs(const Entry &e, const std::vector<int64_t> &words,
                      const std::set<const void *> &notOwned,
                      std::set<const void *> &taken, std::vector<Array> &out) {
  std::vector<OutputView> views = outputViews(e, words);
  std::map<const void *, std::shared_ptr<void>> owners;
  for (size_t k = 0; k < e.outputs.size(); ++k) {
    const OutputSpec &spec = e.outputs[k];
    const OutputView &o = views[k];
    int64_t es = dtypeSize(spec.dtype);
    Array a;
    a.dtype = spec.dtype;
    a.shape.assign(o.sizes, o.sizes + spec.rank);
    int64_t n = 1;
    for (int64_t d : a.shape) {
      if (d < 0 || (d > 0 && n > (int64_t(1) << 46) / d))
        return Error{"output '" + spec.name + "' has an invalid shape " +
                     shapeString(a.shape)};
      n *= d;
    }
    if (n > 0 && !o.aligned)
      return Error{"output '" + spec.name + "' has a null data pointer"};
    char *src = o.aligned ? o.aligned + o.offset * es : nullptr;
    std::vector<int64_t> rowMajor(size_t(spec.rank));
    rowMajorStrides(spec.rank, a.shape.data(), rowMajor.data());
    bool contiguous = true;
    for (int64_t d = 0; d < spec.rank; ++d)
      if (a.shape[size_t(d)] != 1 && o.strides[d] != rowMajor[size_t(d)])
        contiguous = false;
    const void *alloc = o.allocated;
    bool calleeOwned =
        alloc && alloc != reinterpret_cast<void *>(uintptr_t(0xdeadbeef)) &&
        !notOwned.count(alloc);
    if ((contiguous || n == 0) && calleeOwned) {
      std::shared_ptr<void> &owner = owners[alloc];
      if (!owner)
        owner = std::shared_ptr<void>(const_cast<void *>(alloc), FreeDeleter());
      taken.insert(alloc);
      a.data = src;
      a.owner = owner;
      out.push_back(std::move(a));
      continue;
    }
    Buffer b = allocBuffer(n * es);
    if (!b)
      return Error{"out of memory copying output '" + spec.name + "'"};
    if (n > 0)
      copyStrided(es, spec.rank, a.shape.data(), src, o.strides, b.get(),
                  rowMajor.data());
    a.data = b.get();
    a.owner = share(std::move(b));
    out.push_back(std::move(a));
  }
  return success();
}

/// The body every rank runs: registers the weights, packs the arguments per
/// BUNDLE.md, calls the entry (`iterations` times), returns the outputs.
int rankBody(Job &job, loom_rt_ctx *ctx) {
  int64_t rank = loom_rt_rank(ctx);
  auto inIt = job.inputs.find(rank);
  if (inIt == job.inputs.end()) {
    job.errors.report(rank, "nothing was prepared for this rank");
    return 1;
  }
  RankOutputs &result = job.results.at(rank);
  const Entry &e = *job.entry;
  const RunOptions &opts = *job.opts;
  std::set<const void *> notOwned;

  // Inputs: by default each rank gets its own copy (the callee may write
  // its arguments, and the ranks of a threads job must not share writable
  // memory); state is the executor's buffer of this rank.
  std::vector<Buffer> inputBufs;
  std::vector<std::vector<int64_t>> descs;
  for (size_t k = 0; k < e.inputs.size(); ++k) {
    const ArrayRef &a = inIt->second[k];
    const void *data = a.data;
    if (e.inputs[k].state.empty() && !job.borrowed.at(rank)[k]) {
      Buffer b = allocBuffer(a.numBytes());
      if (!b) {
        job.errors.report(rank, "out of memory for inputs");
        return 1;
      }
      if (a.numBytes() > 0)
        std::memcpy(b.get(), a.data, size_t(a.numBytes()));
      data = b.get();
      inputBufs.push_back(std::move(b));
    }
    std::vector<int64_t> strides(a.shape.size());
    rowMajorStrides(int64_t(a.shape.size()), a.shape.data(), strides.data());
    descs.push_back(makeDescriptor(data, a.shape, strides));
    notOwned.insert(data);
  }
  // Weights: already mapped and checked by the main thread (the mapping is
  // shared); register them as weights 0..n-1 of this rank.
  BoundWeights bound;
  std::string err;
  if (!bindWeights(ctx, e, job.weights->at(rank), bound, &err)) {
    job.errors.report(rank, err);
    return 1;
  }
  for (auto &d : bound.descs)
    descs.push_back(std::move(d));
  notOwned.insert(bound.notOwned.begin(), bound.notOwned.end());

  std::vector<int64_t> words(size_t(std::max<int64_t>(job.resultWords, 1)));
  std::vector<void *> args{words.data(), ctx};
  for (auto &d : descs)
    args.push_back(d.data());
  for (int it = 0; it < opts.iterations; ++it) {
    if (opts.barrierPerIteration)
      loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    std::fill(words.begin(), words.end(), 0);
    double t0 = nowMs();
    job.fn(args.data());
    if (opts.barrierPerIteration)
      loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    result.iterationMs.push_back(nowMs() - t0);
    if (it + 1 < opts.iterations)
      freeOutputs(e, words, notOwned);
  }
  // Every rank's entry has returned before anything is staged.
  loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
  int status = 0;
  std::set<const void *> taken;
  if (rank == 0 || opts.allRanks) {
    Status st = collectOutputs(e, words, notOwned, taken, result.outputs);
    if (st && job.state)
      result.state = job.state->perRank.at(rank);
    if (st && opts.stage)
      st = opts.stage(result);
    if (!st) {
      job.errors.report(rank, st.error().message);
      status = 1;
    }
  }
  notOwned.insert(taken.begin(), taken.end());
  freeOutputs(e, words, notOwned);
  // All or nothing: every rank learns whether any rank failed to stage its
  // outputs; `commit` is told on every rank.
  int32_t anyFailed = status;
  loom_rt_all_reduce(ctx, LOOM_RT_I32, LOOM_RT_MAX, &anyFailed, &anyFailed, 1,
                     LOOM_RT_ALL_AXES);
  if (opts.commit) {
    Status st = opts.commit(rank, !anyFailed);
    if (!st) {
      job.errors.report(rank, st.error().message);
      return 1;
    }
  }
  return status;
}

} // namespace

Status Executor::run(const std::vector<Input> &inputs, const RunOptions &opts,
                     RunResult &result) {
  result = RunResult();
  auto entryOr = entry(opts.entry);
  if (!entryOr)
    return entryOr.takeError();
  const Entry &e = **entryOr;
  if (opts.iterations < 1)
    return Error{"iterations must be at least 1"};

  // --- Inputs: one value per (local rank, input)
  // ------------------------------
  Job job;
  job.entry = &e;
  job.fn = P->fns.at(e.name);
  job.opts = &opts;
  job.open = &P->opts;
  job.errors.open = &P->opts;
  std::set<int64_t> local(P->localRanks.begin(), P->localRanks.end());
  std::vector<const Input *> shared(e.inputs.size(), nullptr);
  std::map<std::pair<int64_t, size_t>, const Input *> own;
  for (const Input &in : inputs) {
    size_t k = 0;
    while (k < e.inputs.size() && e.inputs[k].name != in.name)
      ++k;
    if (k == e.inputs.size()) {
      std::string names;
      for (const TensorSpec &t : e.inputs)
        names += (names.empty() ? "" : ", ") + t.name;
      return Error{"entry '" + e.name + "' has no input '" + in.name +
                   "' (inputs: " + (names.empty() ? "none" : names) + ")"};
    }
    if (in.rank >= 0 && !local.count(in.rank))
      return Error{"input '" + in.name + "' is given for rank " +
                   std::to_string(in.rank) +
                   ", which this process does not run"};
    const Input *&slot = in.rank < 0 ? shared[k] : own[{in.rank, k}];
    if (slot)
      return Error{"input '" + in.name + "' given twice"};
    slot = &in;
  }
  bool oneRank = P->localRanks.size() == 1;
  for (int64_t r : P->localRanks) {
    std::vector<ArrayRef> &vals = job.inputs[r];
    std::vector<bool> &borrowed = job.borrowed[r];
    job.results[r].rank = r;
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      const TensorSpec &spec = e.inputs[k];
      auto it = own.find({r, k});
      const Input *in = it != own.end() ? it->second : shared[k];
      borrowed.push_back(in && !opts.copyInputs &&
                         (oneRank || it != own.end()));
      if (!in) {
        if (spec.state.empty())
          return Error{"missing input '" + spec.name + "' (" +
                       dtypeName(spec.dtype) + " " + shapeString(spec.shape) +
                       ") of entry '" + e.name + "'"};
        vals.push_back({spec.dtype, {}, nullptr});
        continue;
      }
      const ArrayRef &a = in->array;
      std::string where =
          in->where.empty() ? "input '" + spec.name + "'" : in->where;
      if (a.dtype != spec.dtype)
        return Error{where + ": dtype is " + dtypeName(a.dtype) +
                     " but entry '" + e.name + "' expects " +
                     dtypeName(spec.dtype)};
      bool ok = a.shape.size() == spec.shape.size();
      for (size_t d = 0; ok && d < spec.shape.size(); ++d)
        ok = spec.shape[d] < 0 || spec.shape[d] == a.shape[d];
      if (!ok)
        return Error{where + ": shape " + shapeString(a.shape) +
                     " does not match " + shapeString(spec.shape) +
                     " expected by entry '" + e.name + "' (? = any)"};
      int64_t bytes = 0;
      std::string err;
      if (!npyByteCount(a.shape, dtypeSize(a.dtype), bytes, &err))
        return Error{where + ": " + err};
      if (bytes > 0 && !a.data)
        return Error{where + ": null data"};
      vals.push_back(a);
    }
  }

  // --- State: the executor's buffers, made at the first run -----------------
  if (hasState(e)) {
    auto stIt = P->state.find(e.name);
    if (stIt != P->state.end() && opts.ctx > 0 && opts.ctx != stIt->second.ctx)
      return Error{"the state of entry '" + e.name + "' has a context of " +
                   std::to_string(stIt->second.ctx) +
                   " positions; reset it to choose another"};
    int64_t front = P->localRanks.front();
    if (stIt == P->state.end()) {
      std::vector<std::vector<int64_t>> given;
      for (size_t k = 0; k < e.inputs.size(); ++k)
        if (!e.inputs[k].state.empty())
          given.push_back(job.inputs[front][k].data ? job.inputs[front][k].shape
                                                    : std::vector<int64_t>());
      EntryState s;
      std::string err;
      // The initial state is read into memory once besides every rank's
      // buffers: localRanks + 1 copies.
      if (!chooseContextForShapes(P->m, e, opts.ctx, given,
                                  int64_t(P->localRanks.size()) + 1,
                                  availableMemory(), s.ctx, &err))
        return Error{err};
      for (int64_t r : P->localRanks)
        for (const TensorSpec &spec : e.inputs) {
          if (spec.state.empty())
            continue;
          Array a;
          a.dtype = spec.dtype;
          a.shape = spec.shape;
          a.shape[size_t(spec.ctxDim)] = s.ctx;
          Buffer b = allocBuffer(a.numBytes(), /*zero=*/true);
          if (!b)
            return Error{"out of memory for the KV cache '" + spec.name + "'"};
          a.data = b.get();
          a.owner = share(std::move(b));
          s.perRank[r].push_back(std::move(a));
        }
      stIt = P->state.emplace(e.name, std::move(s)).first;
    }
    // Given initial state replaces the buffer's contents.
    for (int64_t r : P->localRanks) {
      size_t j = 0;
      for (size_t k = 0; k < e.inputs.size(); ++k) {
        if (e.inputs[k].state.empty())
          continue;
        Array &buf = stIt->second.perRank[r][j++];
        ArrayRef &v = job.inputs[r][k];
        if (v.data) {
          if (v.shape != buf.shape)
            return Error{"state input '" + e.inputs[k].name + "' has shape " +
                         shapeString(v.shape) + ", but the state has " +
                         shapeString(buf.shape)};
          std::memcpy(buf.data, v.data, size_t(buf.numBytes()));
        }
        v = buf.ref();
      }
    }
    for (int64_t r : P->localRanks)
      for (size_t k = 0; k < e.inputs.size(); ++k)
        if (e.inputs[k].name == "positions") {
          const ArrayRef &p = job.inputs[r][k];
          std::string err;
          if (!checkPositions(e, p.shape, dtypeSize(p.dtype),
                              static_cast<const int64_t *>(p.data),
                              stIt->second.ctx, &err))
            return Error{err};
        }
    job.state = &stIt->second;
    result.ctx = stIt->second.ctx;
  }

  // --- Weights, then the job
  // ----------------------------------------------------
  auto prepared = prepare(e.name);
  if (!prepared)
    return prepared.takeError();
  job.weights = &P->mapped.at(e.name).perRank;
  for (const OutputSpec &o : e.outputs)
    job.resultWords += 3 + 2 * o.rank;

  result.prepared = *prepared;
  if (opts.beforeLaunch)
    if (Status s = opts.beforeLaunch(); !s)
      return s;
  loom::rt::LaunchOptions launch = launchOptions(P->opts);
  auto body = [&job](loom_rt_ctx *ctx) { return rankBody(job, ctx); };
  std::vector<int64_t> mesh = P->m.meshShape;
  if (mesh.empty())
    mesh.push_back(1);
  double t0 = nowMs();
  loom::rt::LaunchResult launched;
  int rc = P->useMpi ? loom::rt::runMpi(mesh, body, launch)
                     : loom::rt::runThreads(int(P->m.numRanks), mesh, body,
                                            launch, &launched);
  result.jobMs = nowMs() - t0;
  if (rc != 0) {
    std::vector<std::string> why = job.errors.messages;
    why.insert(why.end(), launched.messages.begin(), launched.messages.end());
    result.jobFailed = true;
    result.messages = why;
    return Error{"the job failed (" + std::string(backendName(P->useMpi)) +
                 " backend, " + std::to_string(P->m.numRanks) + " ranks)" +
                 (why.empty() ? "" : ": " + why.front())};
  }
  result.iterationMs.assign(size_t(opts.iterations), 0.0);
  for (auto &[r, res] : job.results) {
    for (size_t i = 0; i < res.iterationMs.size(); ++i)
      result.iterationMs[i] =
          std::max(result.iterationMs[i], res.iterationMs[i]);
    if (r == 0 || opts.allRanks)
      result.ranks.push_back(std::move(res));
  }
  return success();
}

} // namespace loom::run
