//===- Transformer.cpp - Analytical GPT training-step model ---------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Elementwise traffic per layer and sequence (forward, 2-byte values), the
// part of a step that the FLOP count leaves out:
//   replicated over tp (Megatron without sequence parallelism runs them on
//   every tp rank): two layernorms (read + write), two dropouts and two
//   residual adds, bias adds: ~16 s h values;
//   split over tp: bias + GeLU on the 4h MLP activations (read + write:
//   8 s h) and the fused scale-mask-softmax-dropout on the a s^2 attention
//   scores (read scores, write probabilities, write dropped: 3 a s^2).
//   The backward pass moves twice as much, the recomputed forward as much
//   again: x4 with recomputation, x3 without. The logit layer's softmax and
//   cross entropy read and write s V / t fp32 values about 3 times.
//   A llama-style shape: the MLP term is 3 f (SwiGLU: gate and up read, the
//   product written) instead of 2 x 4h; fused attention drops the 3 a s^2.
//
// Pipeline: layers are balanced over the p stages (balanceStages), the
// first stage also holds the embedding, the last the logit layer; the step
// is (m + (p-1)/v) x the slowest stage's per-microbatch time (compute, tp
// all-reduces and the boundary send/recv), then the exposed dp all-reduce.
//
//===----------------------------------------------------------------------===//

#include "loom/Cost/Transformer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace loom::cost {

static std::string str(int64_t v) { return std::to_string(v); }

GptConfig llamaShape(int64_t hidden, int64_t heads, int64_t kvHeads,
                     int64_t layers, int64_t ffn, int64_t vocab, int64_t seqLen,
                     int64_t globalBatch) {
  GptConfig c{hidden, heads, layers, seqLen, vocab, globalBatch};
  c.kvHeads = kvHeads;
  c.ffn = ffn;
  c.gatedMlp = true;
  c.biases = false;
  c.learnedPositions = false;
  c.tiedEmbedding = false;
  return c;
}

namespace {
/// Per-layer quantities of a shape.
struct LayerShape {
  double h, a, s, V, f, kvDim, mlpMats;
  explicit LayerShape(const GptConfig &c)
      : h(double(c.hidden)), a(double(c.heads)), s(double(c.seqLen)),
        V(double(c.vocab)), f(double(c.ffnSize())),
        kvDim(double(c.hidden) * double(c.kvHeadCount()) / double(c.heads)),
        mlpMats(c.gatedMlp ? 3 : 2) {}
  /// Matmul parameters of one layer (Q, K, V, O, MLP).
  double matmulParams() const {
    return h * (h + 2 * kvDim) + h * h + mlpMats * h * f;
  }
  /// Forward matmul FLOPs of one layer for one sequence.
  double forwardFlops() const { return 2 * s * matmulParams() + 4 * s * s * h; }
};

double layerParams(const GptConfig &c) {
  LayerShape L(c);
  double extra = c.biases ? (L.h + 2 * L.kvDim) + L.h + L.f + L.h + 4 * L.h
                          : 2 * L.h; // biases + 2 layernorms / 2 RMSNorms
  return L.matmulParams() + extra;
}
double embeddingParams(const GptConfig &c) {
  return double(c.vocab) * double(c.hidden) +
         (c.learnedPositions ? double(c.seqLen) * double(c.hidden) : 0);
}
/// The LM head's own parameters (a tied head has none of its own) plus the
/// final norm (not in the paper's GPT count).
double headParams(const GptConfig &c) {
  return (c.tiedEmbedding ? 0 : double(c.vocab) * double(c.hidden)) +
         (c.biases ? 0 : double(c.hidden));
}
} // namespace

double gptParameters(const GptConfig &c) {
  return double(c.layers) * layerParams(c) + embeddingParams(c) + headParams(c);
}

double megatronFlopsPerIteration(const GptConfig &c) {
  double B = double(c.globalBatch), s = double(c.seqLen), l = double(c.layers),
         h = double(c.hidden), V = double(c.vocab);
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

double forwardFlopsPerSequence(const GptConfig &c) {
  LayerShape L(c);
  return double(c.layers) * L.forwardFlops() + 2 * L.s * L.h * L.V;
}

double modelFlopsPerIteration(const GptConfig &c) {
  return 3 * double(c.globalBatch) * forwardFlopsPerSequence(c);
}

MeshSpec megatronMesh(const DeviceSpec &device, const ParallelConfig &par,
                      const LinkSpec &intraNode, const LinkSpec &interNode,
                      int64_t devicesPerNode) {
  MeshSpec mesh;
  mesh.device = device;
  mesh.devicesPerNode = devicesPerNode;
  mesh.axes = {MeshAxis{"dp", par.dp, {}}, MeshAxis{"pp", par.pp, {}},
               MeshAxis{"tp", par.tp, {}}};
  int64_t inner = 1;
  for (size_t i = mesh.axes.size(); i-- > 0;) {
    inner *= mesh.axes[i].size;
    mesh.axes[i].link = inner <= devicesPerNode ? intraNode : interNode;
  }
  return mesh;
}

Result<std::vector<int64_t>> balanceStages(int64_t layers, int64_t pp,
                                           double perLayer, double first,
                                           double last) {
  if (pp < 1 || layers < 1)
    return Error{"stages: layers and pp must be >= 1"};
  if (pp > layers)
    return Error{"stages: pp=" + str(pp) +
                 " is more stages than layers=" + str(layers)};
  auto extra = [&](int64_t k) {
    return (k == 0 ? first : 0) + (k == pp - 1 ? last : 0);
  };
  if (!(perLayer > 0)) {
    std::vector<int64_t> even(pp, layers / pp);
    for (int64_t k = 0; k < layers % pp; ++k)
      ++even[pp - 1 - k];
    return even;
  }
  auto cap = [&](int64_t k, double T) -> int64_t {
    double room = T - extra(k);
    if (room < 0)
      return 0;
    return std::min<int64_t>(layers,
                             int64_t(std::floor(room / perLayer + 1e-9)));
  };
  auto total = [&](double T) {
    int64_t n = 0;
    for (int64_t k = 0; k < pp; ++k)
      n += cap(k, T);
    return n;
  };
  // Every threshold a stage's capacity changes at; the smallest one whose
  // capacities hold all layers is the best slowest-stage time.
  std::vector<double> cand;
  for (double e : {extra(0), extra(pp - 1), 0.0})
    for (int64_t j = 0; j <= layers; ++j)
      cand.push_back(e + double(j) * perLayer);
  std::sort(cand.begin(), cand.end());
  size_t lo = 0, hi = cand.size() - 1;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (total(cand[mid]) >= layers)
      hi = mid;
    else
      lo = mid + 1;
  }
  double T = cand[lo];
  std::vector<int64_t> n(pp);
  int64_t sum = 0;
  for (int64_t k = 0; k < pp; ++k)
    sum += n[k] = cap(k, T);
  // Fewer than p stages tie at T: take one layer off each, from the first
  // stage on (it keeps the most microbatches' activations in flight).
  for (int64_t k = 0; sum > layers; k = (k + 1) % pp)
    if (n[k] > 0) {
      --n[k];
      --sum;
    }
  return n;
}

Result<TrainingEstimate> estimateTraining(const GptConfig &c,
                                          const ParallelConfig &par,
                                          const MeshSpec &mesh,
                                          const TrainingOptions &o) {
  if (c.hidden <= 0 || c.heads <= 0 || c.layers <= 0 || c.seqLen <= 0 ||
      c.vocab <= 0 || c.globalBatch <= 0)
    return Error{"model: hidden, heads, layers, seq_len, vocab and "
                 "global_batch must all be positive"};
  if (c.hidden % c.heads != 0 || c.kvHeadCount() < 1 ||
      c.heads % c.kvHeadCount() != 0)
    return Error{"model: heads=" + str(c.heads) +
                 " must divide hidden=" + str(c.hidden) +
                 " and be a multiple of kv_heads=" + str(c.kvHeadCount())};
  if (par.tp < 1 || par.pp < 1 || par.dp < 1 || par.microBatch < 1 ||
      par.virtualStages < 1)
    return Error{"layout: tp, pp, dp, micro_batch and virtual_stages must be "
                 ">= 1"};
  if (c.heads % par.tp != 0)
    return Error{"layout: tp=" + str(par.tp) +
                 " does not divide heads=" + str(c.heads)};
  if (c.hidden % par.tp != 0)
    return Error{"layout: tp=" + str(par.tp) +
                 " does not divide hidden=" + str(c.hidden)};
  if (c.ffnSize() % par.tp != 0)
    return Error{"layout: tp=" + str(par.tp) +
                 " does not divide ffn=" + str(c.ffnSize())};
  if (c.kvHeadCount() % par.tp != 0 && par.tp % c.kvHeadCount() != 0)
    return Error{"layout: tp=" + str(par.tp) + " and kv_heads=" +
                 str(c.kvHeadCount()) + ": neither divides the other"};
  if (par.pp > c.layers)
    return Error{"layout: pp=" + str(par.pp) +
                 " is more stages than layers=" + str(c.layers)};
  if (c.globalBatch % (par.dp * par.microBatch) != 0)
    return Error{"layout: dp x micro_batch = " + str(par.dp * par.microBatch) +
                 " does not divide global_batch=" + str(c.globalBatch)};
  int64_t m = c.globalBatch / (par.dp * par.microBatch);
  int64_t v = par.virtualStages;
  if (v > 1 && (par.pp == 1 || m % par.pp != 0 || c.layers < par.pp * v ||
                (c.layers % par.pp == 0 && c.layers % (par.pp * v) != 0)))
    return Error{"layout: interleaving v=" + str(v) + " needs pp > 1, pp=" +
                 str(par.pp) + " dividing the microbatches m=" + str(m) +
                 ", at least v layers per stage and, with equal stages, v "
                 "dividing each stage's layers (layers=" +
                 str(c.layers) + ")"};
  if (mesh.axisSize("tp") != par.tp || mesh.axisSize("dp") != par.dp ||
      mesh.axisSize("pp") != par.pp)
    return Error{"layout: the mesh's tp/pp/dp axes do not match the layout"};

  const DeviceSpec &dev = mesh.device;
  const Efficiency &e = o.eff;
  LayerShape L(c);
  double h = L.h, a = L.a, s = L.s, V = L.V, t = double(par.tp),
         p = double(par.pp), b = double(par.microBatch);
  bool train = !o.inference;
  bool recompute = train && o.recompute;
  double passes = !train ? 1 : recompute ? 4 : 3; // fwd (+ recompute) + 2x bwd
  double logitPasses = train ? 3 : 1;

  TrainingEstimate r;
  r.recompute = recompute;
  r.microBatches = m;
  double B = double(c.globalBatch);
  r.flopsPerIteration = B * (passes * double(c.layers) * L.forwardFlops() +
                             logitPasses * 2 * s * h * V);
  r.modelFlopsPerIteration = (train ? 3 : 1) * B * forwardFlopsPerSequence(c);

  // --- Per microbatch, per device: one layer, the embedding, the head. ---
  double peak = dev.peakFlops(ElemType::BF16) * e.gemm;
  double bw = dev.memBandwidth * e.memory;
  double layerMatmul = passes * b * L.forwardFlops() / t / peak;
  double splitBytes = L.mlpMats == 3 ? 3 * L.f : 2 * L.f;
  double scores = o.fusedAttention ? 0 : 3 * a * s * s;
  double sp = o.sequenceParallel ? t : 1; // replicated work split over t
  double layerElem =
      passes * 2 * b * (16 * s * h / sp + (splitBytes * s + scores) / t) / bw;
  double arBytes = 2 * b * s * h;
  double oneAr = collectiveTimeOnAxes(Collective::AllReduce, arBytes, mesh,
                                      {"tp"}, o.algorithm, e);
  double arPerLayer = !train ? 2 : recompute ? 6 : 4;
  double layerTp = arPerLayer * oneAr;
  double perLayer = layerMatmul + layerElem + layerTp;
  double embedTp = (train ? 2 : 1) * oneAr; // vocab-parallel embedding
  double headMatmul = logitPasses * b * 2 * s * h * V / t / peak;
  double headElem = logitPasses * 4 * b * s * V / t / bw;

  // Equal stages when p divides the layers (Megatron's rule); otherwise
  // balanced, and then interleaving cuts each stage into v chunks of
  // nearly equal size (the Llama 3 schedule: 126 layers on 16 stages).
  std::vector<int64_t> layersOf;
  if (c.layers % par.pp == 0) {
    layersOf.assign(par.pp, c.layers / par.pp);
  } else {
    auto bal = balanceStages(c.layers, par.pp, perLayer, embedTp,
                             headMatmul + headElem);
    if (!bal)
      return bal.error();
    layersOf = *bal;
  }
  for (int64_t n : layersOf)
    if (n < v)
      return Error{"layout: interleaving v=" + str(v) +
                   " needs at least v layers on every stage"};

  // Pipeline boundaries: b s h 16-bit values forward and their gradients
  // backward, v times per microbatch with interleaving.
  if (par.pp > 1) {
    r.p2pBytes = arBytes;
    if (o.scatterGather && par.tp > 1) {
      r.p2pBytes = arBytes / t;
      r.p2pTime = collectiveTimeOnAxes(Collective::SendRecv, r.p2pBytes, mesh,
                                       {"pp"}, o.algorithm, e) +
                  collectiveTimeOnAxes(Collective::AllGather, arBytes, mesh,
                                       {"tp"}, o.algorithm, e);
    } else {
      r.p2pTime = collectiveTimeOnAxes(Collective::SendRecv, arBytes, mesh,
                                       {"pp"}, o.algorithm, e);
    }
  }
  double ppPerMicro = par.pp > 1 ? (train ? 2 : 1) * double(v) * r.p2pTime : 0;

  // --- Stages: time and memory. ---
  double limit = o.memoryLimit > 0 ? o.memoryLimit : dev.memCapacity;
  r.memoryLimit = limit;
  double layerP = layerParams(c);
  TrainingMemoryOptions mo;
  mo.zeroStage = par.zeroStage;
  mo.gradBytes = std::max(2.0, o.gradBytes);
  // One layer's activations (Korthikanti et al. 2022, tp without sequence
  // parallelism): s b h (10 + 24/t) + 5 a s^2 b / t bytes for GPT; Q, K, V,
  // O input 4 + 4 h_kv/h, MLP 4 f/h (GeLU) or 8 f/h (SwiGLU), split over t.
  double kvr = L.kvDim / h;
  double mlpAct = (L.mlpMats == 3 ? 8 : 4) * L.f / h;
  double layerAct = s * b * h * (10 / sp + (4 + 4 * kvr + mlpAct) / t) +
                    (o.fusedAttention ? 0 : 5 * a * s * s * b / t);
  int64_t first = 0;
  r.stages.resize(par.pp);
  double maxParams = 0, slowestMatmul = 0, slowestElem = 0, slowestTp = 0;
  for (int64_t k = 0; k < par.pp; ++k) {
    StageEstimate &st = r.stages[k];
    int64_t n = layersOf[k];
    if (n > 0) {
      st.firstLayer = first;
      st.lastLayer = first + n - 1;
    }
    first += n;
    st.hasEmbedding = k == 0;
    st.hasHead = k == par.pp - 1;
    double nl = double(n);
    double mm = nl * layerMatmul + (st.hasHead ? headMatmul : 0);
    double el = nl * layerElem + (st.hasHead ? headElem : 0);
    double tp = nl * layerTp + (st.hasEmbedding ? embedTp : 0);
    st.time = mm + el + tp;
    if (st.time >= r.stageTime) {
      r.stageTime = st.time;
      slowestMatmul = mm;
      slowestElem = el;
      slowestTp = tp;
    }
    // Parameters: its layers, the embedding on the first stage, the head on
    // the last (Megatron keeps a copy of a tied embedding there, p > 1).
    double params = nl * layerP + (st.hasEmbedding ? embeddingParams(c) : 0);
    if (st.hasHead)
      params += headParams(c) +
                (c.tiedEmbedding && par.pp > 1 ? double(c.vocab) * h : 0);
    st.params = params;
    maxParams = std::max(maxParams, params / t);
    // Microbatches in flight on stage k: 1F1B keeps p - k (Megatron's
    // interleaving a factor 1 + (p-1)/(p v) more), never more than m.
    double inFlight = std::min<double>(double(par.pp - k), double(m));
    if (v > 1)
      inFlight = std::min<double>(inFlight * (1 + (p - 1) / (p * double(v))),
                                  double(m));
    if (train) {
      st.memory = trainingStateMemory(params / t, par.dp, mo);
      double acts = recompute ? inFlight * nl * 2 * s * b * h / sp + layerAct
                              : inFlight * nl * layerAct;
      if (st.hasHead)
        acts += 2 * 4 * s * b * V / t; // fp32 logits and their gradient
      st.memory.activations = acts;
    } else {
      st.memory.weights = params / t * o.weightBytes;
      st.memory.kvCache =
          kvCacheBytes(n, c.kvHeadCount(), c.headDim(),
                       c.globalBatch / par.dp * c.seqLen, o.kvBytes, par.tp);
      st.memory.activations = std::min<double>(p, double(m)) * layerAct / 2 +
                              (st.hasHead ? 4 * s * b * V / t : 0);
    }
    if (st.memory.total() > r.memory.total())
      r.memory = st.memory;
  }
  r.fitsInMemory = r.memory.total() <= limit;

  double perMicro = r.stageTime + ppPerMicro;
  double md = double(m);
  r.matmulTime = slowestMatmul * md;
  r.elementwiseTime = slowestElem * md;
  r.computeTime = r.matmulTime + r.elementwiseTime;
  r.tpCommTime = slowestTp * md;
  r.ppCommTime = ppPerMicro * md;
  r.bubbleFraction = pipelineBubble(par.pp, m, v);
  r.bubbleTime = (p - 1) / double(v) * perMicro;

  // Data parallel: the gradients of the largest stage's device after the
  // backward pass (ZeRO-1/2: reduce-scatter + all-gather, the same bytes),
  // and a tied embedding's gradient between the first and the last stage.
  if (train) {
    double dpFull =
        collectiveTimeOnAxes(Collective::AllReduce, maxParams * o.gradBytes,
                             mesh, {"dp"}, o.algorithm, e);
    if (c.tiedEmbedding && par.pp > 1)
      dpFull += collectiveTime(Collective::AllReduce,
                               double(c.vocab) * h / t * o.gradBytes, 2,
                               mesh.axis("pp")->link, o.algorithm, e);
    r.dpCommTime = dpFull * (1 - std::clamp(o.dpOverlap, 0.0, 1.0));
  }

  r.stepTime = perMicro * (md + (p - 1) / double(v)) + r.dpCommTime;
  double N = double(par.numDevices());
  r.tflopsPerDevice = r.flopsPerIteration / (r.stepTime * N) / 1e12;
  r.mfu = r.modelFlopsPerIteration /
          (r.stepTime * N * dev.peakFlops(ElemType::BF16));
  return r;
}

LayoutRequest layoutRequest(const GptConfig &shape, int64_t numDevices,
                            const DeviceSpec &device, int64_t devicesPerNode) {
  LayoutRequest req;
  req.shape = shape;
  req.numDevices = numDevices;
  req.device = device;
  req.intraNode = defaultIntraNodeLink(device);
  req.interNode = defaultInterNodeLink(device);
  req.devicesPerNode = devicesPerNode;
  return req;
}

namespace {
/// `fixed` if the user fixed it, else the candidates.
std::vector<int64_t> choices(int64_t fixed, std::vector<int64_t> all) {
  if (fixed > 0)
    return {fixed};
  return all;
}
std::vector<int64_t> range(int64_t lo, int64_t hi) {
  std::vector<int64_t> r;
  for (int64_t i = lo; i <= hi; ++i)
    r.push_back(i);
  return r;
}
} // namespace

Result<SearchResult> chooseLayout(const LayoutRequest &req) {
  auto start = std::chrono::steady_clock::now();
  const GptConfig &c = req.shape;
  const LayoutFixed &fx = req.fixed;
  int64_t N = req.numDevices;
  if (N < 1)
    return Error{"layout search: the device count must be >= 1"};
  if (c.layers < 1 || c.heads < 1 || c.globalBatch < 1)
    return Error{"layout search: the model needs layers, heads and a global "
                 "batch >= 1"};
  if (fx.tp > 0 && fx.pp > 0 && fx.dp > 0 && fx.tp * fx.pp * fx.dp != N)
    return Error{"layout search: tp x pp x dp = " + str(fx.tp * fx.pp * fx.dp) +
                 " is not the " + str(N) + " devices"};
  int64_t maxTp = req.maxTp > 0 ? req.maxTp : req.devicesPerNode;
  bool train = !req.opts.inference;

  SearchResult best;
  bool found = false;
  int64_t tried = 0;
  std::string lastError;
  double closestNeed = 0;
  std::string closest;
  for (int64_t tp : choices(fx.tp, range(1, std::min(N, maxTp)))) {
    if (N % tp != 0)
      continue;
    int64_t maxPp = req.allowPipeline ? std::min(c.layers, N / tp) : 1;
    for (int64_t pp : choices(fx.pp, range(1, maxPp))) {
      if ((N / tp) % pp != 0)
        continue;
      int64_t dp = N / (tp * pp);
      if (fx.dp > 0 && dp != fx.dp)
        continue;
      std::vector<int64_t> bs = {1, 2, 4, 8, 16};
      if (fx.microBatches > 0) {
        if (c.globalBatch % (fx.microBatches * dp) != 0)
          continue;
        bs = {c.globalBatch / (fx.microBatches * dp)};
      }
      for (int64_t b : choices(fx.microBatch, bs)) {
        if (b < 1 || c.globalBatch % (dp * b) != 0)
          continue;
        int64_t m = c.globalBatch / (dp * b);
        if (fx.microBatches > 0 && m != fx.microBatches)
          continue;
        std::vector<int64_t> vs = {1};
        if (req.allowInterleave && pp > 1 && m % pp == 0)
          for (int64_t v = 2; v <= std::min<int64_t>(8, c.layers / pp); ++v)
            if (c.layers % pp != 0 || (c.layers / pp) % v == 0)
              vs.push_back(v);
        for (int64_t v : choices(fx.virtualStages, vs)) {
          for (int zero : {0, 1}) {
            if ((fx.zeroStage >= 0 && zero != fx.zeroStage) ||
                (!train && zero != 0))
              continue;
            for (int rc : {1, 0}) {
              if (fx.recompute >= 0 ? rc != fx.recompute
                                    : (!req.searchRecompute || !train) &&
                                          rc != int(req.opts.recompute))
                continue;
              ParallelConfig par{tp, pp, dp, b, unsigned(zero), v};
              TrainingOptions o = req.opts;
              o.recompute = rc != 0;
              MeshSpec mesh = megatronMesh(req.device, par, req.intraNode,
                                           req.interNode, req.devicesPerNode);
              auto est = estimateTraining(c, par, mesh, o);
              ++tried;
              if (!est) {
                lastError = est.error().message;
                continue;
              }
              if (!est->fitsInMemory) {
                double need = est->memory.total();
                if (closest.empty() || need < closestNeed) {
                  closestNeed = need;
                  char buf[160];
                  std::snprintf(buf, sizeof buf,
                                "tp=%lld pp=%lld dp=%lld b=%lld needs %.1f GB",
                                (long long)tp, (long long)pp, (long long)dp,
                                (long long)b, need / 1e9);
                  closest = buf;
                }
                continue;
              }
              if (!found || est->stepTime < best.estimate.stepTime) {
                best.best = par;
                best.estimate = std::move(*est);
                found = true;
              }
            }
          }
        }
      }
    }
  }
  best.layoutsTried = tried;
  best.searchSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!found) {
    double limit = req.opts.memoryLimit > 0 ? req.opts.memoryLimit
                                            : req.device.memCapacity;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f GB", limit / 1e9);
    if (!closest.empty())
      return Error{"no legal layout of " + str(N) + " devices fits in " + buf +
                   " per device (the closest, " + closest + ")"};
    return Error{
        "no legal layout of " + str(N) +
        " devices: tp must divide "
        "N, heads=" +
        str(c.heads) + " and hidden=" + str(c.hidden) + " (<= " + str(maxTp) +
        "), pp <= layers=" + str(c.layers) +
        " divide N / tp, dp x b divide the batch=" + str(c.globalBatch) +
        (lastError.empty() ? std::string(", with the fixed fields")
                           : " (last tried: " + lastError + ")")};
  }
  return best;
}

std::string describeLayout(const SearchResult &r) {
  const ParallelConfig &p = r.best;
  const TrainingEstimate &e = r.estimate;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "tp=%lld pp=%lld dp=%lld b=%lld m=%lld v=%lld zero=%u%s: "
                "step %.3g s, bubble %.1f%%, %.1f GB of %.0f GB per device, "
                "%.0f TFLOP/s per device, MFU %.1f%%",
                (long long)p.tp, (long long)p.pp, (long long)p.dp,
                (long long)p.microBatch, (long long)e.microBatches,
                (long long)p.virtualStages, p.zeroStage,
                e.recompute ? " recompute" : "", e.stepTime,
                100 * e.bubbleFraction, e.memory.total() / 1e9,
                e.memoryLimit / 1e9, e.tflopsPerDevice, 100 * e.mfu);
  return buf;
}

Result<SearchResult>
searchLayouts(const GptConfig &model, int64_t numDevices,
              const DeviceSpec &device, const LinkSpec &intraNode,
              const LinkSpec &interNode, int64_t devicesPerNode,
              const TrainingOptions &opts, bool allowPipeline) {
  LayoutRequest req;
  req.shape = model;
  req.numDevices = numDevices;
  req.device = device;
  req.intraNode = intraNode;
  req.interNode = interNode;
  req.devicesPerNode = devicesPerNode;
  req.opts = opts;
  req.allowPipeline = allowPipeline;
  req.searchRecompute = false;
  return chooseLayout(req);
}

Result<SearchResult>
bestForLayout(const GptConfig &model, int64_t tp, int64_t pp, int64_t dp,
              const DeviceSpec &device, const LinkSpec &intraNode,
              const LinkSpec &interNode, int64_t devicesPerNode,
              const TrainingOptions &opts) {
  LayoutRequest req;
  req.shape = model;
  req.numDevices = tp * pp * dp;
  req.device = device;
  req.intraNode = intraNode;
  req.interNode = interNode;
  req.devicesPerNode = devicesPerNode;
  req.opts = opts;
  req.fixed.tp = tp;
  req.fixed.pp = pp;
  req.fixed.dp = dp;
  req.maxTp = std::max(tp, devicesPerNode);
  req.searchRecompute = false;
  auto r = chooseLayout(req);
  if (!r)
    return Error{"layout tp=" + str(tp) + " pp=" + str(pp) + " dp=" + str(dp) +
                 ": " + r.error().message};
  return r;
}

std::vector<MegatronRow> megatronTable1() {
  auto gpt = [](int64_t h, int64_t a, int64_t l, int64_t B) {
    return GptConfig{h, a, l, 2048, 51200, B};
  };
  // Narayanan et al., SC'21, Table 1: h, a, l, t, p, GPUs, B, TFLOP/s per
  // GPU; d = GPUs / (t p).
  return {
      {"1.7B", 1.7e9, gpt(2304, 24, 24, 512), 1, 1, 32, 137},
      {"3.6B", 3.6e9, gpt(3072, 32, 30, 512), 2, 1, 32, 138},
      {"7.5B", 7.5e9, gpt(4096, 32, 36, 512), 4, 1, 32, 142},
      {"18.4B", 18.4e9, gpt(6144, 48, 40, 1024), 8, 1, 32, 135},
      {"39.1B", 39.1e9, gpt(8192, 64, 48, 1536), 8, 2, 32, 138},
      {"76.1B", 76.1e9, gpt(10240, 80, 60, 1792), 8, 4, 32, 140},
      {"145.6B", 145.6e9, gpt(12288, 96, 80, 2304), 8, 8, 24, 148},
      {"310.1B", 310.1e9, gpt(16384, 128, 96, 2160), 8, 16, 15, 155},
      {"529.6B", 529.6e9, gpt(20480, 128, 105, 2520), 8, 35, 9, 163},
      {"1T", 1008e9, gpt(25600, 160, 128, 3072), 8, 64, 6, 163},
  };
}

std::vector<MegatronRow> megatronTable1PipelineFree() {
  std::vector<MegatronRow> rows;
  for (const MegatronRow &r : megatronTable1())
    if (r.pp == 1)
      rows.push_back(r);
  return rows;
}

double fitGemmEfficiency(const std::vector<MegatronRow> &rows, double *maxError,
                         double lo, double hi) {
  double bestE = lo, bestErr = 1e300;
  for (double eg = lo; eg <= hi + 1e-9; eg += 0.005) {
    TrainingOptions o;
    o.eff.gemm = eg;
    double worst = 0;
    for (const MegatronRow &row : rows) {
      auto r =
          bestForLayout(row.model, row.tp, row.pp, row.dp, megatronDevice(),
                        megatronIntraNode(), megatronInterNode(), 8, o);
      double err =
          r ? std::fabs(r->estimate.tflopsPerDevice / row.measuredTflops - 1)
            : 1e300;
      worst = std::max(worst, err);
    }
    if (worst < bestErr) {
      bestErr = worst;
      bestE = eg;
    }
  }
  if (maxError)
    *maxError = bestErr;
  return bestE;
}

DeviceSpec megatronDevice() { return a100_80gb(); }
LinkSpec megatronIntraNode() { return *linkByName("nvlink3", a100_80gb()); }
LinkSpec megatronInterNode() { return *linkByName("ib-hdr", a100_80gb()); }

} // namespace loom::cost
