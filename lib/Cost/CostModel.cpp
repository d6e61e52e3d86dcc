//===- CostModel.cpp - Roofline, collectives and memory -------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Cost/CostModel.h"

#include <algorithm>
#include <cmath>

namespace loom::cost {

Efficiency defaultEfficiency() { return Efficiency{}; }

double rooflineTime(const DeviceSpec &dev, ElemType type, double flops,
                    double bytes, const Efficiency &eff) {
  double peak = dev.peakFlops(type) * eff.gemm;
  double bw = dev.memBandwidth * eff.memory;
  double tc = peak > 0 ? flops / peak : 0;
  double tm = bw > 0 ? bytes / bw : 0;
  return std::max(tc, tm);
}

double collectiveBytesPerRank(Collective c, double bytes, int64_t p) {
  if (p <= 1)
    return 0;
  double frac = double(p - 1) / double(p);
  switch (c) {
  case Collective::AllReduce:
    return 2 * frac * bytes;
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    return frac * bytes;
  case Collective::SendRecv:
  case Collective::Broadcast:
    return bytes;
  }
  return 0;
}

static double ceilLog2(int64_t p) {
  return std::ceil(std::log2(double(std::max<int64_t>(p, 1))));
}

double collectiveTime(Collective c, double bytes, int64_t p,
                      const LinkSpec &link, Algorithm algo,
                      const Efficiency &eff) {
  if (p <= 1 || bytes <= 0)
    return 0;
  double bw = link.bandwidth * eff.network;
  double a = link.latency;
  double steps = double(p - 1);
  switch (c) {
  case Collective::AllReduce: {
    double ring = collectiveBytesPerRank(c, bytes, p) / bw + 2 * steps * a;
    double tree = 2 * bytes / bw + 2 * ceilLog2(p) * a;
    if (algo == Algorithm::Ring)
      return ring;
    if (algo == Algorithm::Tree)
      return tree;
    return std::min(ring, tree);
  }
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    return collectiveBytesPerRank(c, bytes, p) / bw + steps * a;
  case Collective::SendRecv:
    return bytes / bw + a;
  case Collective::Broadcast: {
    double ring = bytes / bw + steps * a;
    double tree = bytes / bw + ceilLog2(p) * a;
    return algo == Algorithm::Ring ? ring : std::min(ring, tree);
  }
  }
  return 0;
}

double collectiveTimeOnAxes(Collective c, double bytes, const MeshSpec &mesh,
                            const std::vector<std::string> &axes,
                            Algorithm algo, const Efficiency &eff) {
  int64_t p = 1;
  LinkSpec slowest;
  bool first = true;
  for (auto &name : axes) {
    const MeshAxis *a = mesh.axis(name);
    if (!a)
      continue;
    p *= a->size;
    if (a->size <= 1)
      continue;
    if (first || a->link.bandwidth < slowest.bandwidth) {
      double lat =
          first ? a->link.latency : std::max(slowest.latency, a->link.latency);
      slowest = a->link;
      slowest.latency = lat;
    } else {
      slowest.latency = std::max(slowest.latency, a->link.latency);
    }
    first = false;
  }
  if (first)
    return 0;
  return collectiveTime(c, bytes, p, slowest, algo, eff);
}

MemoryBreakdown trainingStateMemory(double paramsPerDevice, int64_t dp,
                                    const TrainingMemoryOptions &o) {
  MemoryBreakdown m;
  double d = double(std::max<int64_t>(dp, 1));
  m.weights = paramsPerDevice * o.weightBytes / (o.zeroStage >= 3 ? d : 1);
  m.gradients = paramsPerDevice * o.gradBytes / (o.zeroStage >= 2 ? d : 1);
  m.optimizer = paramsPerDevice * o.optimizerBytes / (o.zeroStage >= 1 ? d : 1);
  return m;
}

double kvCacheBytes(int64_t layers, int64_t kvHeads, int64_t headDim,
                    int64_t tokens, double bytesPerElem, int64_t tp) {
  // KV heads split over tp; with fewer KV heads than tp they are replicated.
  double heads = double(kvHeads) / double(std::max<int64_t>(tp, 1));
  heads = std::max(heads, 1.0);
  return 2.0 * double(layers) * heads * double(headDim) * double(tokens) *
         bytesPerElem;
}

MemoryBreakdown inferenceMemory(double params, double bytesPerParam,
                                int64_t layers, int64_t kvHeads,
                                int64_t headDim, int64_t tokens,
                                double kvBytesPerElem, int64_t tp) {
  MemoryBreakdown m;
  m.weights = params * bytesPerParam / double(std::max<int64_t>(tp, 1));
  m.kvCache =
      kvCacheBytes(layers, kvHeads, headDim, tokens, kvBytesPerElem, tp);
  return m;
}

} // namespace loom::cost
