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
//
//===----------------------------------------------------------------------===//

#include "loom/Cost/Transformer.h"

#include <algorithm>
#include <cmath>

namespace loom::cost {

double gptParameters(const GptConfig &c) {
  double h = double(c.hidden), l = double(c.layers);
  return 12 * l * h * h *
         (1 + 13.0 / (12 * h) + double(c.vocab + c.seqLen) / (12 * l * h));
}

double megatronFlopsPerIteration(const GptConfig &c) {
  double B = double(c.globalBatch), s = double(c.seqLen), l = double(c.layers),
         h = double(c.hidden), V = double(c.vocab);
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

static std::string str(int64_t v) { return std::to_string(v); }

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

Result<TrainingEstimate> estimateTraining(const GptConfig &c,
                                          const ParallelConfig &par,
                                          const MeshSpec &mesh,
                                          const TrainingOptions &o) {
  if (c.hidden <= 0 || c.heads <= 0 || c.layers <= 0 || c.seqLen <= 0 ||
      c.vocab <= 0 || c.globalBatch <= 0)
    return Error{"model: hidden, heads, layers, seq_len, vocab and "
                 "global_batch must all be positive"};
  if (par.tp < 1 || par.pp < 1 || par.dp < 1 || par.microBatch < 1)
    return Error{"layout: tp, pp, dp and micro_batch must be >= 1"};
  if (c.heads % par.tp != 0)
    return Error{"layout: tp=" + str(par.tp) + " does not divide heads=" +
                 str(c.heads)};
  if (c.hidden % par.tp != 0)
    return Error{"layout: tp=" + str(par.tp) + " does not divide hidden=" +
                 str(c.hidden)};
  if (c.layers % par.pp != 0)
    return Error{"layout: pp=" + str(par.pp) + " does not divide layers=" +
                 str(c.layers)};
  if (c.globalBatch % (par.dp * par.microBatch) != 0)
    return Error{"layout: dp x micro_batch = " + str(par.dp * par.microBatch) +
                 " does not divide global_batch=" + str(c.globalBatch)};
  if (mesh.axisSize("tp") != par.tp || mesh.axisSize("dp") != par.dp ||
      mesh.axisSize("pp") != par.pp)
    return Error{"layout: the mesh's tp/pp/dp axes do not match the layout"};

  const DeviceSpec &dev = mesh.device;
  const Efficiency &e = o.eff;
  double h = double(c.hidden), a = double(c.heads), s = double(c.seqLen),
         V = double(c.vocab), t = double(par.tp), p = double(par.pp),
         b = double(par.microBatch);
  double layersPerStage = double(c.layers) / p;
  int64_t m = c.globalBatch / (par.dp * par.microBatch);
  double passes = o.recompute ? 4 : 3; // fwd (+ recompute) + 2x bwd

  TrainingEstimate r;
  r.microBatches = m;
  r.flopsPerIteration = megatronFlopsPerIteration(c);

  // --- Per microbatch, per device of the (last, slowest) stage. ---
  double layerFlops = passes * b * (24 * s * h * h + 4 * s * s * h) / t;
  double logitFlops = 3 * b * 2 * s * h * V / t;
  double matmulFlops = layerFlops * layersPerStage + logitFlops;
  double peak = dev.peakFlops(ElemType::BF16) * e.gemm;
  double matmul = matmulFlops / peak;

  double layerBytes = passes * 2 * b * (16 * s * h + (8 * s * h + 3 * a * s * s) / t);
  double logitBytes = 3 * 4 * b * s * V / t;
  double elemBytes = layerBytes * layersPerStage + logitBytes;
  double elementwise = elemBytes / (dev.memBandwidth * e.memory);

  // Tensor parallel: all-reduces of b s h 16-bit values.
  double arBytes = 2 * b * s * h;
  double arPerLayer = o.recompute ? 6 : 4;
  double arCount = arPerLayer * layersPerStage + 2; // + vocab-parallel embed
  double tpComm = arCount * collectiveTimeOnAxes(Collective::AllReduce, arBytes,
                                                 mesh, {"tp"}, o.algorithm, e);
  // Pipeline: activations forward and their gradients backward.
  double ppComm = par.pp > 1
                      ? 2 * collectiveTimeOnAxes(Collective::SendRecv, arBytes,
                                                 mesh, {"pp"}, o.algorithm, e)
                      : 0;
  double perMicro = matmul + elementwise + tpComm + ppComm;

  r.matmulTime = matmul * m;
  r.elementwiseTime = elementwise * m;
  r.computeTime = r.matmulTime + r.elementwiseTime;
  r.tpCommTime = tpComm * m;
  r.ppCommTime = ppComm * m;
  r.bubbleFraction = (p - 1) / (double(m) + p - 1);
  r.bubbleTime = (p - 1) * perMicro;

  // Data parallel: the gradients of one stage's device. With ZeRO-1/2 a
  // reduce-scatter + all-gather moves the same bytes as the all-reduce.
  double params = gptParameters(c);
  double stageParams = (12 * h * h * layersPerStage + 13 * h * layersPerStage +
                        (par.pp == 1 ? 1.0 : 0.5) * (V + s) * h) /
                       t;
  if (par.pp == 1)
    stageParams = params / t;
  double dpFull = collectiveTimeOnAxes(Collective::AllReduce,
                                       stageParams * o.gradBytes, mesh, {"dp"},
                                       o.algorithm, e);
  r.dpCommTime = dpFull * (1 - std::clamp(o.dpOverlap, 0.0, 1.0));

  r.stepTime = perMicro * (double(m) + p - 1) + r.dpCommTime;
  r.tflopsPerDevice =
      r.flopsPerIteration / (r.stepTime * double(par.numDevices())) / 1e12;

  // --- Memory of the first stage's device (holds most in-flight work). ---
  TrainingMemoryOptions mo;
  mo.zeroStage = par.zeroStage;
  mo.gradBytes = std::max(2.0, o.gradBytes);
  r.memory = trainingStateMemory(stageParams, par.dp, mo);
  double inFlight = std::min<double>(p, double(m)); // 1F1B
  double checkpoints =
      o.recompute ? inFlight * layersPerStage * 2 * s * b * h : 0;
  // One layer's activations (Korthikanti et al. 2022, tp without sequence
  // parallelism): s b h (10 + 24/t + 5 a s / (h t)) bytes; all layers of all
  // in-flight microbatches without recomputation.
  double layerAct = s * b * h * (10 + 24 / t + 5 * a * s / (h * t));
  double working = o.recompute ? layerAct : layerAct * layersPerStage * inFlight;
  double logits = 2 * 4 * s * b * V / t; // fp32 logits and their gradient
  r.memory.activations = checkpoints + working + logits;
  r.fitsInMemory = r.memory.total() <= dev.memCapacity;
  return r;
}

Result<SearchResult> bestForLayout(const GptConfig &model, int64_t tp,
                                   int64_t pp, int64_t dp,
                                   const DeviceSpec &device,
                                   const LinkSpec &intraNode,
                                   const LinkSpec &interNode,
                                   int64_t devicesPerNode,
                                   const TrainingOptions &opts) {
  SearchResult best;
  bool found = false;
  std::string lastError;
  for (int64_t b : {1, 2, 4, 8, 16}) {
    for (unsigned zero : {0u, 1u}) {
      ParallelConfig par{tp, pp, dp, b, zero};
      if (model.globalBatch % (dp * b) != 0)
        continue;
      MeshSpec mesh = megatronMesh(device, par, intraNode, interNode,
                                   devicesPerNode);
      auto est = estimateTraining(model, par, mesh, opts);
      ++best.layoutsTried;
      if (!est) {
        lastError = est.error().message;
        continue;
      }
      if (!est->fitsInMemory) {
        lastError = "does not fit: needs " +
                    std::to_string(est->memory.total() / 1e9) +
                    " GB per device, capacity " +
                    std::to_string(device.memCapacity / 1e9) + " GB";
        continue;
      }
      if (!found || est->stepTime < best.estimate.stepTime) {
        best.best = par;
        best.estimate = *est;
        found = true;
      }
    }
  }
  if (!found)
    return Error{"layout tp=" + std::to_string(tp) + " pp=" +
                 std::to_string(pp) + " dp=" + std::to_string(dp) + ": " +
                 (lastError.empty() ? "no legal microbatch size" : lastError)};
  return best;
}

Result<SearchResult> searchLayouts(const GptConfig &model, int64_t numDevices,
                                   const DeviceSpec &device,
                                   const LinkSpec &intraNode,
                                   const LinkSpec &interNode,
                                   int64_t devicesPerNode,
                                   const TrainingOptions &opts,
                                   bool allowPipeline) {
  SearchResult best;
  bool found = false;
  int64_t tried = 0;
  for (int64_t tp = 1; tp <= std::min(numDevices, devicesPerNode); ++tp) {
    if (numDevices % tp != 0 || model.heads % tp != 0 ||
        model.hidden % tp != 0)
      continue;
    for (int64_t pp = 1; pp <= (allowPipeline ? model.layers : 1); ++pp) {
      if ((numDevices / tp) % pp != 0 || model.layers % pp != 0)
        continue;
      int64_t dp = numDevices / (tp * pp);
      auto r = bestForLayout(model, tp, pp, dp, device, intraNode, interNode,
                             devicesPerNode, opts);
      if (!r)
        continue;
      tried += r->layoutsTried;
      if (!found || r->estimate.stepTime < best.estimate.stepTime) {
        best = *r;
        found = true;
      }
    }
  }
  best.layoutsTried = tried;
  if (!found)
    return Error{"no legal layout of " + std::to_string(numDevices) +
                 " devices fits in " +
                 std::to_string(device.memCapacity / 1e9) + " GB per device"};
  return best;
}

std::vector<MegatronRow> megatronTable1PipelineFree() {
  auto gpt = [](int64_t h, int64_t a, int64_t l) {
    return GptConfig{h, a, l, 2048, 51200, 512};
  };
  return {
      {"1.7B", 1.7e9, gpt(2304, 24, 24), 1, 1, 32, 137},
      {"3.6B", 3.6e9, gpt(3072, 32, 30), 2, 1, 32, 138},
      {"7.5B", 7.5e9, gpt(4096, 32, 36), 4, 1, 32, 142},
      {"18.4B", 18.4e9, gpt(6144, 48, 40), 8, 1, 32, 135},
  };
}

DeviceSpec megatronDevice() { return a100_80gb(); }
LinkSpec megatronIntraNode() { return *linkByName("nvlink3", a100_80gb()); }
LinkSpec megatronInterNode() { return *linkByName("ib-hdr", a100_80gb()); }

} // namespace loom::cost
