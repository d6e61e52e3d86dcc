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

#include "../Comm.h"
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
  launch.finalizeMpi = o.finalizeMpi;
  launch.wrapComm = o.deviceComm;
  return launch;
}

namespace {

/// A buffer shared by the arrays that view it.
std::shared_ptr<void> share(Buffer b) {
  return std::shared_ptr<void>(b.release(), FreeDeleter());
}

} // namespace

Executor::Executor(std::unique_ptr<Impl> impl) : P(std::move(impl)) {}
Executor::~Executor() {
  // A CUDA bundle's weights stay on the device between runs, keyed by their
  // host address: gone with the mappings.
  if (P && P->m.target.isCuda())
    releaseCudaResident();
}
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
  if (!checkTarget(bundleDir, impl->m, options, &err, &impl->deviceMemory))
    return Error{err};
  bool given = options.backend != Backend::Auto;
  std::string backend = options.backend == Backend::Mpi ? "mpi" : "threads";
  if (!selectRanks(bundleDir, impl->m, backend, given, options.ranks,
                   impl->useMpi, impl->mpiRank, impl->localRanks, &err))
    return Error{err};
  if (!checkCudaMemory(bundleDir, impl->m, impl->localRanks, impl->deviceMemory,
                       &err))
    return Error{err};
  if (!loadLibrary(bundleDir, impl->m, impl->fns, &err))
    return Error{err};
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

Expected<const Entry *> Executor::entry(const std::string &name) const {
  const PipelineInfo &pl = P->m.pipeline;
  if (name.empty()) {
    // A pipelined bundle runs its pipelined entry (forward first).
    if (const PipelineEntry *pe = pl.find("forward"))
      return &pe->entry;
    if (!pl.entries.empty())
      return &pl.entries.front().entry;
    return &P->m.entries.front();
  }
  if (const PipelineEntry *pe = pl.find(name))
    return &pe->entry;
  if (const Entry *e = P->m.findEntry(name))
    return e;
  std::string names;
  for (const PipelineEntry &e : pl.entries)
    names += (names.empty() ? "" : ", ") + e.entry.name + " (pipelined)";
  for (const Entry &e : P->m.entries)
    names += (names.empty() ? "" : ", ") + e.name;
  return Error{"no entry '" + name + "' in the bundle (entries: " + names +
               ")"};
}

namespace {

/// The entry each local rank runs for `name`: the entry itself, or, for a
/// pipelined entry, the stage of the rank's pipeline coordinate.
std::map<int64_t, const Entry *>
rankEntries(const Manifest &m, const std::string &name,
            const std::vector<int64_t> &ranks) {
  std::map<int64_t, const Entry *> out;
  const PipelineEntry *pe = m.pipeline.find(name);
  for (int64_t r : ranks)
    out[r] =
        pe ? m.findEntry(pe->stages[size_t(m.stageOf(r))]) : m.findEntry(name);
  return out;
}

} // namespace

Expected<PreparedEntry> Executor::prepare(const std::string &name) {
  auto e = entry(name);
  if (!e)
    return e.takeError();
  PreparedEntry out;
  double t0 = nowMs();
  // Each rank maps the weights of the entry it runs (its stage's).
  std::map<const Entry *, std::vector<int64_t>> byEntry;
  for (auto [r, re] : rankEntries(P->m, (*e)->name, P->localRanks))
    byEntry[re].push_back(r);
  for (auto &[re, ranks] : byEntry) {
    auto it = P->mapped.find(re->name);
    if (it == P->mapped.end()) {
      MappedWeights w;
      std::string err;
      if (!mapWeights(P->bundle, P->m, *re, ranks, P->opts.progress, w, &err))
        return Error{err};
      // A CUDA bundle's weights go to the device once, here.
      if (P->m.target.isCuda() && !uploadCudaWeights(w, &err))
        return Error{err};
      it = P->mapped.emplace(re->name, std::move(w)).first;
    }
    out.weightBytes += it->second.bytes;
    out.weightSlices += it->second.slices;
  }
  out.mapMs = nowMs() - t0;
  return out;
}

void Executor::resetState(const std::string &entry) {
  // A CUDA bundle's caches are device copies keyed by the host buffers:
  // released with them, so that a new buffer at the same address starts
  // from zeros, not from the old cache.
  auto erase = [&](auto it) {
    if (it == P->state.end())
      return;
    if (P->m.target.isCuda())
      for (auto &[rank, arrays] : it->second.perRank)
        for (const Array &a : arrays)
          cudaStateRelease(a.data);
    P->state.erase(it);
  };
  if (entry.empty()) {
    while (!P->state.empty())
      erase(P->state.begin());
    return;
  }
  erase(P->state.find(entry));
  if (const PipelineEntry *pe = P->m.pipeline.find(entry))
    for (const std::string &s : pe->stages)
      erase(P->state.find(s));
}

std::vector<std::vector<PipelineStep>> pipelineSchedule(PipelineSchedule kind,
                                                        int64_t stages,
                                                        int64_t microbatches,
                                                        bool withBackward) {
  std::vector<std::vector<PipelineStep>> out(
      size_t(std::max<int64_t>(stages, 0)));
  int64_t m = microbatches;
  for (int64_t k = 0; k < stages; ++k) {
    auto &steps = out[size_t(k)];
    auto fwd = [&](int64_t i) { steps.push_back({k, i, false}); };
    auto bwd = [&](int64_t i) {
      if (withBackward)
        steps.push_back({k, i, true});
    };
    if (kind == PipelineSchedule::GPipe || !withBackward) {
      for (int64_t i = 0; i < m; ++i)
        fwd(i);
      for (int64_t i = m; i-- > 0;)
        bwd(i);
      continue;
    }
    // 1F1B: warm-up forwards, one forward one backward, drain.
    int64_t warm = std::min(stages - k - 1, m);
    for (int64_t i = 0; i < warm; ++i)
      fwd(i);
    for (int64_t i = 0; i < m - warm; ++i) {
      fwd(warm + i);
      bwd(i);
    }
    for (int64_t i = m - warm; i < m; ++i)
      bwd(i);
  }
  return out;
}

namespace {

/// Tags of the pipeline's boundary messages: result j of a stage travels
/// with tag kBoundaryTag + 2 j (its shape first, with tag + 1, when the
/// receiving input has a dynamic dimension).
constexpr int64_t kBoundaryTag = 1024;

bool isStatic(const std::vector<int64_t> &shape) {
  return std::all_of(shape.begin(), shape.end(),
                     [](int64_t d) { return d >= 0; });
}

/// What one local rank runs: its entry (the stage of its pipeline
/// coordinate), its inputs (one per entry input; boundaries and state
/// filled in the body) and where its boundaries come from and go to.
struct RankPlan {
  const Entry *entry = nullptr;
  EntryFn fn = nullptr;
  int64_t stage = 0;
  int64_t prev = -1, next = -1; ///< peer ranks (-1: none)
  const Entry *nextEntry = nullptr;
  bool returns = false; ///< its outputs are returned
  std::vector<ArrayRef> inputs;
  std::vector<bool> borrowed;
  const std::vector<PlannedWeight> *weights = nullptr;
  const EntryState *state = nullptr;
  int64_t resultWords = 0;
};

/// The job shared by every rank body of one run.
struct Job {
  std::string name; ///< the entry as asked (a pipelined entry's name)
  int64_t stages = 1;
  int64_t microbatches = 1;
  /// The entry says which inputs and outputs carry the batch (batch_dim):
  /// microbatches split those inputs only; else every non-state input.
  bool byBatchDim = false;
  const RunOptions *opts = nullptr;
  const OpenOptions *open = nullptr;
  std::map<int64_t, RankPlan> plans;
  std::vector<std::vector<PipelineStep>> schedule; ///< forward steps
  std::map<int64_t, RankOutputs> results; ///< every local rank, preallocated
  RankErrors errors;
  /// A CUDA bundle: the state lives on the device (read back into the
  /// host buffers only when RunOptions::returnState).
  bool cuda = false;
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

/// Whether microbatches split input `spec` (docs/RUNTIME.md "Pipelines"):
/// the inputs with a batch_dim when the entry has any, else every
/// non-state input.
bool splitsInput(bool byBatchDim, const TensorSpec &spec) {
  return byBatchDim ? spec.batchDim >= 0 : spec.state.empty();
}

/// Array `a` viewed as microbatch `mb` of `m` (dim 0 split evenly).
ArrayRef microbatch(const ArrayRef &a, int64_t mb, int64_t m) {
  if (m == 1)
    return a;
  ArrayRef s = a;
  s.shape[0] /= m;
  s.data = static_cast<const char *>(a.data) + mb * s.numBytes();
  return s;
}

/// The outputs of `m` microbatches concatenated on dim 0.
Status concatMicrobatches(const Entry &e,
                          std::vector<std::vector<Array>> &parts,
                          std::vector<Array> &out) {
  if (parts.size() == 1) {
    out = std::move(parts[0]);
    return success();
  }
  for (size_t k = 0; k < e.outputs.size(); ++k) {
    Array a;
    a.dtype = e.outputs[k].dtype;
    a.shape = parts[0][k].shape;
    int64_t rows = 0;
    for (auto &p : parts) {
      std::vector<int64_t> s = p[k].shape;
      s[0] = a.shape[0];
      if (s != a.shape)
        return Error{"output '" + e.outputs[k].name +
                     "': microbatches returned different shapes " +
                     shapeString(a.shape) + " and " + shapeString(p[k].shape)};
      rows += p[k].shape[0];
    }
    a.shape[0] = rows;
    Buffer b = allocBuffer(a.numBytes());
    if (!b && a.numBytes() > 0)
      return Error{"out of memory concatenating output '" + e.outputs[k].name +
                   "'"};
    char *dst = static_cast<char *>(b.get());
    for (auto &p : parts) {
      if (p[k].numBytes() > 0)
        std::memcpy(dst, p[k].data, size_t(p[k].numBytes()));
      dst += p[k].numBytes();
    }
    a.data = b.get();
    a.owner = share(std::move(b));
    out.push_back(std::move(a));
  }
  return success();
}

std::string mbArgs(const std::string &entry, int64_t stage, int64_t mb) {
  return "{\"entry\":\"" + entry + "\",\"stage\":" + std::to_string(stage) +
         ",\"microbatch\":" + std::to_string(mb) + "}";
}

/// The boundary messages of one stage: per microbatch slot (double
/// buffers) a receive buffer per boundary input and a send buffer per
/// result, with their requests in flight.
struct Boundaries {
  struct Slot {
    std::vector<Buffer> recv;                ///< by boundary index
    std::vector<std::vector<int64_t>> shape; ///< received shape
    std::vector<loom::rt::P2PRequest> recvReq;
    std::vector<Buffer> send; ///< by result
    std::vector<int64_t> sendBytes;
    std::vector<std::vector<int64_t>> sendShape; ///< headers in flight
    std::vector<loom::rt::P2PRequest> sendReq, headerReq;
    std::vector<int64_t> sendMb;
  } slot[2];
};

/// The body every rank runs: registers the weights, then per iteration and
/// microbatch (GPipe order: every forward in turn) receives the boundary
/// inputs of its stage from the previous stage, packs the arguments per
/// BUNDLE.md, calls its entry, and sends the results to the next stage
/// (non-blocking, double buffers) or keeps them (the last stage).
int rankBody(Job &job, loom_rt_ctx *ctx) {
  int64_t rank = loom_rt_rank(ctx);
  auto planIt = job.plans.find(rank);
  if (planIt == job.plans.end()) {
    job.errors.report(rank, "nothing was prepared for this rank");
    return 1;
  }
  RankPlan &plan = planIt->second;
  RankOutputs &result = job.results.at(rank);
  const Entry &e = *plan.entry;
  const RunOptions &opts = *job.opts;
  const int64_t m = job.microbatches;
  std::set<const void *> notOwned;
  bool traced = loom::rt::tracing(ctx);

  // Inputs: by default each rank gets its own copy (the callee may write
  // its arguments, and the ranks of a threads job must not share writable
  // memory); state is the executor's buffer of this rank.
  std::vector<Buffer> inputBufs;
  std::vector<ArrayRef> values(e.inputs.size());
  for (size_t k = 0; k < e.inputs.size(); ++k) {
    if (plan.prev >= 0 && e.inputs[k].boundary >= 0)
      continue;
    const ArrayRef &a = plan.inputs[k];
    values[k] = a;
    // An input every microbatch gets whole is only read here: it is copied
    // afresh for each call below (the callee may write its arguments).
    bool whole = m > 1 && e.inputs[k].state.empty() &&
                 !splitsInput(job.byBatchDim, e.inputs[k]);
    if (e.inputs[k].state.empty() && !plan.borrowed[k] && !whole) {
      Buffer b = allocBuffer(a.numBytes());
      if (!b && a.numBytes() > 0) {
        job.errors.report(rank, "out of memory for inputs");
        return 1;
      }
      if (a.numBytes() > 0)
        std::memcpy(b.get(), a.data, size_t(a.numBytes()));
      values[k].data = b.get();
      inputBufs.push_back(std::move(b));
    }
  }
  // Weights: already mapped and checked by the main thread (the mapping is
  // shared); register them as weights 0..n-1 of this rank.
  BoundWeights bound;
  std::string err;
  if (!bindWeights(ctx, e, *plan.weights, bound, &err)) {
    job.errors.report(rank, err);
    return 1;
  }
  notOwned.insert(bound.notOwned.begin(), bound.notOwned.end());

  // Boundaries: where each boundary input comes from (a stage entry run
  // alone, prev < 0, takes them as ordinary inputs).
  std::vector<size_t> boundaryInput; // boundary index -> input index
  for (size_t k = 0; k < e.inputs.size(); ++k)
    if (plan.prev >= 0 && e.inputs[k].boundary >= 0) {
      size_t j = size_t(e.inputs[k].boundary);
      if (boundaryInput.size() <= j)
        boundaryInput.resize(j + 1);
      boundaryInput[j] = k;
    }
  Boundaries bd;
  for (auto &s : bd.slot) {
    s.recv.resize(boundaryInput.size());
    s.shape.resize(boundaryInput.size());
    s.recvReq.resize(boundaryInput.size());
    s.send.resize(plan.next >= 0 ? e.outputs.size() : 0);
    s.sendBytes.assign(s.send.size(), 0);
    s.sendShape.resize(s.send.size());
    s.sendReq.resize(s.send.size());
    s.headerReq.resize(s.send.size());
    s.sendMb.assign(s.send.size(), -1);
  }
  // Posts the receives of microbatch `mb` whose size is known (static
  // shapes); a dynamic one is received whole at its turn.
  // A boundary transfer's trace event (category "p2p", docs/RUNTIME.md).
  auto traceP2p = [&](const char *what, const char *dir, int64_t mb,
                      int64_t peer, int64_t t0, int64_t bytes) {
    loom::rt::traceSpan(ctx,
                        std::string(what) + " " + job.name + " mb " +
                            std::to_string(mb) + " " + dir + " rank " +
                            std::to_string(peer),
                        "p2p", t0, loom_rt_now_ns(),
                        "{\"entry\":\"" + job.name +
                            "\",\"stage\":" + std::to_string(plan.stage) +
                            ",\"microbatch\":" + std::to_string(mb) +
                            ",\"peer\":" + std::to_string(peer) +
                            ",\"bytes\":" + std::to_string(bytes) + "}");
  };
  auto postRecv = [&](int64_t mb) {
    Boundaries::Slot &s = bd.slot[mb & 1];
    for (size_t j = 0; j < boundaryInput.size(); ++j) {
      const TensorSpec &spec = e.inputs[boundaryInput[j]];
      if (!isStatic(spec.shape))
        continue;
      int64_t n = 1;
      for (int64_t d : spec.shape)
        n *= d;
      if (!s.recv[j]) {
        s.recv[j] =
            allocBuffer(std::max<int64_t>(n * dtypeSize(spec.dtype), 1));
        if (!s.recv[j])
          loom::rt::failRank(ctx, "out of memory for the boundary input '" +
                                      spec.name + "'");
      }
      s.shape[j] = spec.shape;
      loom::rt::irecv(ctx, rtDtype(spec.dtype), s.recv[j].get(), n, plan.prev,
                      kBoundaryTag + 2 * int64_t(j), s.recvReq[j]);
    }
  };
  auto finishRecv = [&](int64_t mb) {
    Boundaries::Slot &s = bd.slot[mb & 1];
    int64_t t0 = loom_rt_now_ns(), bytes = 0;
    for (size_t j = 0; j < boundaryInput.size(); ++j) {
      const TensorSpec &spec = e.inputs[boundaryInput[j]];
      if (isStatic(spec.shape)) {
        loom::rt::wait(ctx, s.recvReq[j]);
      } else {
        s.recv[j] = recvBoundary(ctx, spec, plan.prev,
                                 kBoundaryTag + 2 * int64_t(j), s.shape[j]);
      }
      bytes += ArrayRef{spec.dtype, s.shape[j], nullptr}.numBytes();
    }
    if (traced && !boundaryInput.empty())
      traceP2p("recv", "from", mb, plan.prev, t0, bytes);
  };
  auto waitSends = [&](Boundaries::Slot &s) {
    for (size_t j = 0; j < s.sendReq.size(); ++j) {
      loom::rt::wait(ctx, s.headerReq[j]);
      loom::rt::wait(ctx, s.sendReq[j]);
    }
  };
  // Copies the results of microbatch `mb` into the slot's send buffers
  // (contiguous) and starts sending them to the next stage.
  auto sendResults = [&](int64_t mb, const std::vector<int64_t> &words) {
    Boundaries::Slot &s = bd.slot[mb & 1];
    waitSends(s); // microbatch mb - 2 has left this slot
    std::vector<OutputView> views = outputViews(e, words);
    int64_t t0 = loom_rt_now_ns(), bytes = 0;
    for (size_t j = 0; j < e.outputs.size(); ++j) {
      const OutputSpec &o = e.outputs[j];
      std::vector<int64_t> shape;
      int64_t n =
          packOutput(ctx, o, views[j], s.send[j], s.sendBytes[j], shape);
      // The peer's input of this boundary; a dynamic one gets the shape.
      int64_t tag = kBoundaryTag + 2 * int64_t(j);
      for (const TensorSpec &in : plan.nextEntry->inputs)
        if (in.boundary == int64_t(j) && !isStatic(in.shape)) {
          s.sendShape[j] = shape;
          loom::rt::isend(ctx, LOOM_RT_I64, s.sendShape[j].data(),
                          int64_t(shape.size()), plan.next, tag + 1,
                          s.headerReq[j]);
        }
      loom::rt::isend(ctx, rtDtype(o.dtype), s.send[j].get(), n, plan.next, tag,
                      s.sendReq[j]);
      bytes += n * dtypeSize(o.dtype);
    }
    if (traced)
      traceP2p("send", "to", mb, plan.next, t0, bytes);
  };

  std::vector<Buffer> wholeBufs(e.inputs.size()); // per call, see above
  for (size_t k = 0; k < e.inputs.size(); ++k)
    if (m > 1 && values[k].data && e.inputs[k].state.empty() &&
        !splitsInput(job.byBatchDim, e.inputs[k]) &&
        !(plan.prev >= 0 && e.inputs[k].boundary >= 0)) {
      wholeBufs[k] = allocBuffer(std::max<int64_t>(values[k].numBytes(), 1));
      if (!wholeBufs[k]) {
        job.errors.report(rank, "out of memory for inputs");
        return 1;
      }
    }

  std::vector<int64_t> words(size_t(std::max<int64_t>(plan.resultWords, 1)));
  std::vector<std::vector<Array>> kept; // the last iteration's microbatches
  std::string callName =
      job.name + " stage " + std::to_string(plan.stage) + " mb ";
  for (int it = 0; it < opts.iterations; ++it) {
    bool last = it + 1 == opts.iterations;
    if (opts.barrierPerIteration)
      loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    double t0 = nowMs();
    // The stage's forward steps in schedule order (microbatches 0..m-1:
    // the boundaries arrive in that order; receives of the next one are
    // posted before this one computes).
    const std::vector<PipelineStep> &steps = job.schedule[size_t(plan.stage)];
    if (plan.prev >= 0 && !steps.empty())
      postRecv(steps.front().microbatch);
    for (size_t si = 0; si < steps.size(); ++si) {
      int64_t mb = steps[si].microbatch;
      if (plan.prev >= 0) {
        finishRecv(mb);
        if (si + 1 < steps.size())
          postRecv(steps[si + 1].microbatch);
      }
      // Arguments: results, context, inputs (this microbatch's rows), then
      // the weights.
      std::set<const void *> callNotOwned = notOwned;
      std::vector<std::vector<int64_t>> descs;
      for (size_t k = 0; k < e.inputs.size(); ++k) {
        const TensorSpec &spec = e.inputs[k];
        ArrayRef a;
        if (plan.prev >= 0 && spec.boundary >= 0) {
          Boundaries::Slot &s = bd.slot[mb & 1];
          a = {spec.dtype, s.shape[size_t(spec.boundary)],
               s.recv[size_t(spec.boundary)].get()};
        } else if (wholeBufs[k]) {
          a = values[k];
          if (a.numBytes() > 0)
            std::memcpy(wholeBufs[k].get(), a.data, size_t(a.numBytes()));
          a.data = wholeBufs[k].get();
        } else {
          a = splitsInput(job.byBatchDim, spec) ? microbatch(values[k], mb, m)
                                                : values[k];
        }
        std::vector<int64_t> strides(a.shape.size());
        rowMajorStrides(int64_t(a.shape.size()), a.shape.data(),
                        strides.data());
        descs.push_back(makeDescriptor(a.data, a.shape, strides));
        callNotOwned.insert(a.data);
      }
      for (auto &d : bound.descs)
        descs.push_back(d);
      std::vector<void *> args{words.data(), ctx};
      for (auto &d : descs)
        args.push_back(d.data());
      std::fill(words.begin(), words.end(), 0);
      int64_t c0 = loom_rt_now_ns();
      bool graph = job.cuda && job.open && job.open->cudaGraphs;
      if (graph)
        cudaGraphBegin(reinterpret_cast<const void *>(plan.fn), ctx);
      plan.fn(args.data());
      if (graph)
        cudaGraphEnd();
      if (traced)
        loom::rt::traceSpan(ctx, callName + std::to_string(mb), "pipeline", c0,
                            loom_rt_now_ns(), mbArgs(job.name, plan.stage, mb));
      if (plan.next >= 0) {
        sendResults(mb, words);
      } else if (last && plan.returns) {
        std::set<const void *> taken;
        kept.emplace_back();
        Status st = collectOutputs(e, words, callNotOwned, taken, kept.back());
        if (!st) {
          job.errors.report(rank, st.error().message);
          loom::rt::failRank(ctx, st.error().message);
        }
        callNotOwned.insert(taken.begin(), taken.end());
      }
      freeOutputs(e, words, callNotOwned);
    }
    for (auto &s : bd.slot)
      waitSends(s);
    if (opts.barrierPerIteration)
      loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
    result.iterationMs.push_back(nowMs() - t0);
  }
  // Every rank's entry has returned before anything is staged.
  loom_rt_barrier(ctx, LOOM_RT_ALL_AXES);
  int status = 0;
  if (plan.returns) {
    Status st = concatMicrobatches(e, kept, result.outputs);
    if (st && plan.state && (!job.cuda || opts.returnState)) {
      result.state = plan.state->perRank.at(rank);
      // On a CUDA device the host buffers are only keys: the caches are
      // copied back once, after the run, because they were asked for.
      std::string err;
      for (size_t i = 0; st && job.cuda && i < result.state.size(); ++i)
        if (!cudaStateRead(result.state[i].data, result.state[i].numBytes(),
                           &err))
          st = Error{err};
    }
    if (st && opts.stage)
      st = opts.stage(result);
    if (!st) {
      job.errors.report(rank, st.error().message);
      status = 1;
    }
  }
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

/// Checks `a` (given for `spec` of entry `entry`, as microbatches of `m`)
/// and returns the error naming `where`, or success.
Status checkInput(const TensorSpec &spec, const ArrayRef &a,
                  const std::string &entry, const std::string &where,
                  int64_t m) {
  if (a.dtype != spec.dtype)
    return Error{where + ": dtype is " + dtypeName(a.dtype) + " but entry '" +
                 entry + "' expects " + dtypeName(spec.dtype)};
  std::vector<int64_t> shape = a.shape;
  if (m > 1) {
    if (shape.empty())
      return Error{where + ": a scalar has no batch dimension to split into " +
                   std::to_string(m) +
                   " microbatches (--microbatches needs "
                   "dimension 0 on every input)"};
    if (spec.shape[0] < 0 && shape[0] % m != 0)
      return Error{where + ": the batch (dimension 0) is " +
                   std::to_string(shape[0]) + ", which " + std::to_string(m) +
                   " microbatches cannot split evenly (give a multiple of " +
                   std::to_string(m) + " rows)"};
    if (spec.shape[0] >= 0 && shape[0] != m * spec.shape[0])
      return Error{where + ": dimension 0 is " + std::to_string(shape[0]) +
                   ", but " + std::to_string(m) + " microbatches need " +
                   std::to_string(m) + " x " + std::to_string(spec.shape[0]) +
                   " = " + std::to_string(m * spec.shape[0]) +
                   " (the compiled dimension 0 times m)"};
    shape[0] /= m;
  }
  bool ok = shape.size() == spec.shape.size();
  for (size_t d = 0; ok && d < spec.shape.size(); ++d)
    ok = spec.shape[d] < 0 || spec.shape[d] == shape[d];
  if (!ok)
    return Error{where + ": shape " + shapeString(shape) +
                 (m > 1 ? " per microbatch" : "") + " does not match " +
                 shapeString(spec.shape) + " expected by entry '" + entry +
                 "' (? = any)"};
  int64_t bytes = 0;
  std::string err;
  if (!npyByteCount(a.shape, dtypeSize(a.dtype), bytes, &err))
    return Error{where + ": " + err};
  if (bytes > 0 && !a.data)
    return Error{where + ": null data"};
  return success();
}

/// A CUDA bundle's entry with run-time sizes was planned (its device
/// memory) for dynamic dimensions up to a bound: a larger input is refused
/// before anything runs.
Status checkBound(const Manifest &m, const TensorSpec &spec, const ArrayRef &a,
                  const std::string &entry, const std::string &where) {
  auto it = m.target.maxDim.find(entry);
  if (!m.target.isCuda() || it == m.target.maxDim.end() || it->second <= 0)
    return success();
  for (size_t d = 0; d < spec.shape.size() && d < a.shape.size(); ++d) {
    // Empty: the device program would launch empty grids, and an index
    // counted from the end (a decode step's last position) would read
    // before its input before the check after the step could report it.
    if (spec.shape[d] < 0 && a.shape[d] == 0)
      return Error{where + ": dimension " + std::to_string(d) +
                   " is 0; a CUDA entry's run-time dimensions must be at "
                   "least 1 (give at least one row)"};
    if (spec.shape[d] < 0 && a.shape[d] > it->second)
      return Error{where + ": dimension " + std::to_string(d) + " is " +
                   std::to_string(a.shape[d]) + ", over the bound " +
                   std::to_string(it->second) + " that entry '" + entry +
                   "' was compiled for (its device memory plan); recompile "
                   "with loomc --gpu-max-tokens " +
                   std::to_string(a.shape[d]) + " or more"};
  }
  return success();
}

} // namespace

/// The state buffers of entry `e` for `ranks` (made at the first run; given
/// initial state copied in), bound into the ranks' plans.
static Status bindState(Executor::Impl &P, const Entry &e,
                        const std::vector<int64_t> &ranks, Job &job,
                        const RunOptions &opts, RunResult &result) {
  auto stIt = P.state.find(e.name);
  if (stIt != P.state.end() && opts.ctx > 0 && opts.ctx != stIt->second.ctx)
    return Error{"the state of entry '" + e.name + "' has a context of " +
                 std::to_string(stIt->second.ctx) +
                 " positions; reset it to choose another"};
  int64_t front = ranks.front();
  if (stIt == P.state.end()) {
    std::vector<std::vector<int64_t>> given;
    for (size_t k = 0; k < e.inputs.size(); ++k)
      if (!e.inputs[k].state.empty()) {
        const ArrayRef &v = job.plans[front].inputs[k];
        given.push_back(v.data ? v.shape : std::vector<int64_t>());
      }
    EntryState s;
    std::string err;
    bool cuda = P.m.target.isCuda();
    // The initial state is read into memory once besides every rank's
    // buffers: localRanks + 1 copies. A CUDA bundle's caches are on the
    // device: what its memory holds beside the local ranks' plans (peak
    // bytes, weights included), one copy per rank (the host buffers are
    // only keys; the ranks of this process share the device).
    int64_t available = availableMemory(), copies = 1 + P.localRanks.size();
    if (cuda) {
      available = P.deviceMemory - cudaDeviceBytes(P.m, e.name, P.localRanks);
      copies = int64_t(P.localRanks.size());
      // The plan's bytes per position are the manifest's (one source).
      auto plan = P.m.target.stateBytesPerPosition.find(e.name);
      if (plan != P.m.target.stateBytesPerPosition.end() &&
          plan->second != stateBytesPerPosition(e))
        return Error{"entry '" + e.name + "': the memory plan counts " +
                     std::to_string(plan->second) +
                     " KV cache bytes per position but its state inputs "
                     "have " +
                     std::to_string(stateBytesPerPosition(e)) +
                     " (a damaged manifest; recompile the bundle)"};
    }
    if (!chooseContextForShapes(P.m, e, opts.ctx, given, copies,
                                std::max<int64_t>(available, 0), s.ctx, &err))
      return Error{cuda && err.find("memory") != std::string::npos
                       ? err + " (on the CUDA device)"
                       : err};
    for (int64_t r : ranks)
      for (const TensorSpec &spec : e.inputs) {
        if (spec.state.empty())
          continue;
        Array a;
        a.dtype = spec.dtype;
        a.shape = spec.shape;
        a.shape[size_t(spec.ctxDim)] = s.ctx;
        // A CUDA bundle's host buffer is never touched (the device copy
        // is zero-filled on the device): its pages stay unmapped.
        Buffer b = allocBuffer(a.numBytes(), /*zero=*/!cuda);
        if (!b)
          return Error{"out of memory for the KV cache '" + spec.name + "'"};
        a.data = b.get();
        if (cuda && !cudaStateRegister(a.data, a.numBytes(), &err))
          return Error{err};
        a.owner = share(std::move(b));
        s.perRank[r].push_back(std::move(a));
      }
    stIt = P.state.emplace(e.name, std::move(s)).first;
  }
  // Given initial state replaces the buffer's contents.
  for (int64_t r : ranks) {
    size_t j = 0;
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      if (e.inputs[k].state.empty())
        continue;
      Array &buf = stIt->second.perRank[r][j++];
      ArrayRef &v = job.plans[r].inputs[k];
      if (v.data) {
        if (v.shape != buf.shape)
          return Error{"state input '" + e.inputs[k].name + "' has shape " +
                       shapeString(v.shape) + ", but the state has " +
                       shapeString(buf.shape)};
        std::memcpy(buf.data, v.data, size_t(buf.numBytes()));
        std::string err;
        if (P.m.target.isCuda() &&
            !cudaStateWrite(buf.data, buf.numBytes(), &err))
          return Error{err};
      }
      v = buf.ref();
    }
  }
  for (int64_t r : ranks)
    for (size_t k = 0; k < e.inputs.size(); ++k)
      if (e.inputs[k].name == "positions") {
        const ArrayRef &p = job.plans[r].inputs[k];
        std::string err;
        if (!checkPositions(e, p.shape, dtypeSize(p.dtype),
                            static_cast<const int64_t *>(p.data),
                            stIt->second.ctx, &err))
          return Error{err};
      }
  for (int64_t r : ranks)
    job.plans[r].state = &stIt->second;
  result.ctx = stIt->second.ctx;
  return success();
}

Status Executor::run(const std::vector<Input> &inputs, const RunOptions &opts,
                     RunResult &result) {
  result = RunResult();
  auto entryOr = entry(opts.entry);
  if (!entryOr)
    return entryOr.takeError();
  const Entry &e = **entryOr; // a pipelined entry: as its callers see it
  if (opts.iterations < 1)
    return Error{"iterations must be at least 1"};
  if (opts.microbatches < 1)
    return Error{"microbatches must be at least 1 (got " +
                 std::to_string(opts.microbatches) + ")"};
  const Manifest &m = P->m;
  const PipelineEntry *pipe = m.pipeline.find(e.name);
  int64_t mb = opts.microbatches;

  Job job;
  job.name = e.name;
  job.cuda = P->m.target.isCuda();
  job.stages = pipe ? m.pipeline.stages : 1;
  job.microbatches = mb;
  job.schedule = pipelineSchedule(opts.schedule, job.stages, mb,
                                  /*withBackward=*/false);
  job.opts = &opts;
  job.open = &P->opts;
  job.errors.open = &P->opts;
  std::map<int64_t, const Entry *> entries =
      rankEntries(m, e.name, P->localRanks);

  // Microbatches split the batch of the inputs with a batch_dim and
  // concatenate the outputs on theirs; an entry without any batch_dim:
  // dim 0 of every input and output. State (a KV cache) would be shared by
  // the microbatches.
  for (const TensorSpec &t : e.inputs)
    job.byBatchDim |= t.batchDim >= 0;
  for (const OutputSpec &o : e.outputs)
    job.byBatchDim |= o.batchDim >= 0;
  if (mb > 1) {
    std::string what = "--microbatches " + std::to_string(mb) + ": ";
    bool anySplit = false;
    for (const TensorSpec &t : e.inputs) {
      if (!t.state.empty())
        return Error{what + "entry '" + e.name + "' has the state input '" +
                     t.name +
                     "' (a KV cache); its microbatches would share "
                     "one cache (not supported: run them one by one)"};
      if (job.byBatchDim) {
        // Dimension 0 only today (a view; another needs a strided copy).
        if (t.batchDim > 0)
          return Error{what + "input '" + t.name + "' of entry '" + e.name +
                       "' has its batch in dimension " +
                       std::to_string(t.batchDim) +
                       "; microbatches split dimension 0 only"};
        anySplit |= t.batchDim == 0;
        continue;
      }
      if (t.shape.empty())
        return Error{"--microbatches " + std::to_string(mb) + ": input '" +
                     t.name + "' of entry '" + e.name +
                     "' is a scalar, with no batch dimension 0 to split"};
      // A dynamic dimension 0 (e.g. positions [?]) is not known to be the
      // batch: splitting it could pair rows that do not belong together.
      if (t.shape[0] < 0)
        return Error{"--microbatches " + std::to_string(mb) + ": input '" +
                     t.name + "' of entry '" + e.name +
                     "' has a dynamic "
                     "dimension 0 (" +
                     shapeString(t.shape) +
                     "), not a compiled batch size to split; microbatches "
                     "need every input's dimension 0 to be the batch"};
    }
    if (job.byBatchDim && !anySplit)
      return Error{what + "entry '" + e.name +
                   "' has no input with a "
                   "batch_dim to split into microbatches"};
    for (const OutputSpec &o : e.outputs) {
      if (job.byBatchDim && o.batchDim < 0)
        return Error{what + "output '" + o.name + "' of entry '" + e.name +
                     "' has no batch_dim, so its " + std::to_string(mb) +
                     " microbatches' values cannot be concatenated (run "
                     "without --microbatches)"};
      if (job.byBatchDim && o.batchDim > 0)
        return Error{what + "output '" + o.name + "' of entry '" + e.name +
                     "' has its batch in dimension " +
                     std::to_string(o.batchDim) +
                     "; microbatches concatenate dimension 0 only"};
      if (o.rank == 0)
        return Error{"--microbatches " + std::to_string(mb) + ": output '" +
                     o.name + "' of entry '" + e.name +
                     "' is a scalar, with no batch dimension 0 to "
                     "concatenate"};
    }
  }

  // --- Inputs: one value per (local rank, input) ---------------------------
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
  int64_t lastStage = job.stages - 1;
  // The stage a rank runs (an ordinary entry of a pipelined bundle, e.g. a
  // stage entry run alone: every rank, as stage 0).
  auto stageOf = [&](int64_t r) { return pipe ? m.stageOf(r) : 0; };
  int64_t firstReturning = -1;
  for (int64_t r = 0; r < m.numRanks; ++r)
    if (stageOf(r) == lastStage) {
      firstReturning = r;
      break;
    }
  for (int64_t r : P->localRanks) {
    RankPlan &plan = job.plans[r];
    plan.entry = entries.at(r);
    plan.fn = P->fns.at(plan.entry->name);
    plan.stage = stageOf(r);
    if (pipe && plan.stage > 0)
      plan.prev = m.peerAtStage(r, plan.stage - 1);
    if (pipe && plan.stage < lastStage) {
      plan.next = m.peerAtStage(r, plan.stage + 1);
      plan.nextEntry = m.findEntry(pipe->stages[size_t(plan.stage + 1)]);
    }
    plan.returns =
        plan.stage == lastStage && (r == firstReturning || opts.allRanks);
    for (const OutputSpec &o : plan.entry->outputs)
      plan.resultWords += 3 + 2 * o.rank;
    job.results[r].rank = r;
    const Entry &re = *plan.entry;
    for (size_t k = 0; k < re.inputs.size(); ++k) {
      const TensorSpec &spec = re.inputs[k];
      if (plan.prev >= 0 && spec.boundary >= 0) {
        plan.inputs.push_back({spec.dtype, {}, nullptr});
        plan.borrowed.push_back(false);
        continue;
      }
      size_t ek = 0; // the input of the entry as asked
      while (e.inputs[ek].name != spec.name)
        ++ek;
      auto it = own.find({r, ek});
      const Input *in = it != own.end() ? it->second : shared[ek];
      // Only a bundle whose code never writes its inputs (manifest
      // inputs_read_only) may read the caller's memory directly.
      plan.borrowed.push_back(in && !opts.copyInputs && m.inputsReadOnly);
      if (!in) {
        if (spec.state.empty())
          return Error{"missing input '" + spec.name + "' (" +
                       dtypeName(spec.dtype) + " " + shapeString(spec.shape) +
                       ") of entry '" + e.name + "'"};
        plan.inputs.push_back({spec.dtype, {}, nullptr});
        continue;
      }
      std::string where =
          in->where.empty() ? "input '" + spec.name + "'" : in->where;
      if (Status s = checkInput(spec, in->array, re.name, where,
                                splitsInput(job.byBatchDim, spec) ? mb : 1);
          !s)
        return s;
      if (Status s = checkBound(m, spec, in->array, re.name, where); !s)
        return s;
      plan.inputs.push_back(in->array);
    }
  }
  // An input no local rank's stage uses is still checked (a typo would
  // otherwise pass silently on ranks of other stages).
  for (size_t k = 0; k < e.inputs.size(); ++k)
    if (shared[k])
      if (Status s = checkInput(
              e.inputs[k], shared[k]->array, e.name,
              shared[k]->where.empty() ? "input '" + e.inputs[k].name + "'"
                                       : shared[k]->where,
              splitsInput(job.byBatchDim, e.inputs[k]) ? mb : 1);
          !s)
        return s;

  // --- State: the executor's buffers, made at the first run -----------------
  std::map<const Entry *, std::vector<int64_t>> byEntry;
  for (auto [r, re] : entries)
    byEntry[re].push_back(r);
  for (auto &[re, ranks] : byEntry)
    if (hasState(*re))
      if (Status s = bindState(*P, *re, ranks, job, opts, result); !s)
        return s;

  // --- Weights, then the job -------------------------------------------------
  auto prepared = prepare(e.name);
  if (!prepared)
    return prepared.takeError();
  for (auto &[r, plan] : job.plans) {
    plan.weights = &P->mapped.at(plan.entry->name).perRank.at(r);
    // A stage entry run alone on a rank of another stage has no weights
    // there (the manifest lists each stage's weights on its ranks only).
    if (plan.weights->size() != plan.entry->weights.size())
      return Error{"entry '" + plan.entry->name + "' has no weights on rank " +
                   std::to_string(r) +
                   " (a stage of a pipelined entry runs "
                   "on the ranks of its stage: run the pipelined entry)"};
  }

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
    if (job.plans.at(r).returns)
      result.ranks.push_back(std::move(res));
  }
  return success();
}

} // namespace loom::run
