//===- CostModel.h - Roofline, collectives and memory -----------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The formulas the planner adds up. All times in seconds, sizes in bytes.
//
//  * Roofline per op: t = max(flops / (peak(type) * eGemm),
//                             bytes / (memBandwidth * eMem)).
//  * Collectives over p devices of one axis with link bandwidth B (per
//    direction) and hop latency a, data size n bytes (the full, unsharded
//    buffer for all-gather / reduce-scatter, each rank's buffer for
//    all-reduce and all-to-all):
//      ring all-reduce     2(p-1)/p * n / (B eNet) + 2(p-1) a
//      tree all-reduce     2 n / (B eNet) + 2 ceil(log2 p) a
//      all-gather          (p-1)/p * n / (B eNet) + (p-1) a
//      reduce-scatter      (p-1)/p * n / (B eNet) + (p-1) a
//      all-to-all          (p-1)/p * n / (B eNet) + (p-1) a
//      send/recv           n / (B eNet) + a
//      broadcast (pipelined ring) n / (B eNet) + (p-1) a
//    Auto picks the faster of ring and tree for all-reduce.
//  * Memory per device: weights, gradients, optimizer state with ZeRO
//    stages, KV cache and activations.
//
// The efficiency factors are calibrated once (docs/COST-MODEL.md), against
// Megatron-LM SC'21 Table 1; defaultEfficiency() returns them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COST_COSTMODEL_H
#define LOOM_COST_COSTMODEL_H

#include "loom/Cost/Device.h"
#include "loom/Cost/Mesh.h"

#include <cstdint>

namespace loom::cost {

/// Fractions of the datasheet peaks that real kernels and NCCL reach.
struct Efficiency {
  double gemm = 0.70; ///< of peak FLOP/s, large tensor-core GEMMs (fitted once)
  double memory = 0.80;  ///< of HBM / DRAM bandwidth, elementwise kernels
  double network = 0.80; ///< of link bandwidth (NCCL bus bandwidth / link)
};
Efficiency defaultEfficiency();

/// Time of one op on one device by the roofline.
double rooflineTime(const DeviceSpec &dev, ElemType type, double flops,
                    double bytes, const Efficiency &eff = defaultEfficiency());

enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  SendRecv,
  Broadcast
};
enum class Algorithm { Ring, Tree, Auto };

/// Bytes each rank sends for the collective (the bandwidth term's numerator
/// before dividing by the link): 2(p-1)/p n for all-reduce, (p-1)/p n for
/// all-gather, reduce-scatter and all-to-all, n for send/recv and broadcast.
double collectiveBytesPerRank(Collective c, double bytes, int64_t p);

/// Time of one collective over `p` ranks on `link`. p <= 1 costs zero.
double collectiveTime(Collective c, double bytes, int64_t p,
                      const LinkSpec &link, Algorithm algo = Algorithm::Ring,
                      const Efficiency &eff = defaultEfficiency());

/// Time of a collective over the named mesh axes (outermost first). Over
/// several axes the group is their product and the slowest link among them
/// bounds the bandwidth (a flat ring through all of them).
double collectiveTimeOnAxes(Collective c, double bytes, const MeshSpec &mesh,
                            const std::vector<std::string> &axes,
                            Algorithm algo = Algorithm::Ring,
                            const Efficiency &eff = defaultEfficiency());

/// Fraction of a pipelined step spent idle in the fill and drain of p stages
/// with m microbatches (GPipe, 1F1B): (p-1)/(m+p-1); with the interleaved
/// 1F1B schedule of v model chunks per device (Megatron-LM SC'21 2.2.2) the
/// bubble shrinks v-fold: (p-1)/(v m + p - 1). 0 for p <= 1; 1 for m <= 0.
inline double pipelineBubble(int64_t p, int64_t m, int64_t v = 1) {
  if (p <= 1)
    return 0;
  if (m <= 0)
    return 1;
  if (v < 1)
    v = 1;
  return double(p - 1) / double(v * m + p - 1);
}

/// ZeRO stage: 0 none, 1 optimizer state sharded over data parallel,
/// 2 + gradients, 3 + parameters.
struct TrainingMemoryOptions {
  unsigned zeroStage = 0;
  double weightBytes = 2;     ///< bf16/fp16 working copy
  double gradBytes = 2;       ///< bf16/fp16 gradients
  double optimizerBytes = 12; ///< Adam mixed precision: fp32 master, m, v
};

/// Memory of one device holding `paramsPerDevice` parameters (already divided
/// by the model-parallel degrees) with data parallel degree `dp`.
struct MemoryBreakdown {
  double weights = 0, gradients = 0, optimizer = 0, kvCache = 0,
         activations = 0;
  double total() const {
    return weights + gradients + optimizer + kvCache + activations;
  }
};
MemoryBreakdown trainingStateMemory(double paramsPerDevice, int64_t dp,
                                    const TrainingMemoryOptions &opts = {});

/// KV cache bytes on one device: 2 (K and V) x layers x kvHeads x headDim x
/// tokens x bytes, divided over `tp` (KV heads split by tensor parallel).
double kvCacheBytes(int64_t layers, int64_t kvHeads, int64_t headDim,
                    int64_t tokens, double bytesPerElem, int64_t tp = 1);

/// Inference memory: weights (params x bytes / tp) + the KV cache.
MemoryBreakdown inferenceMemory(double params, double bytesPerParam,
                                int64_t layers, int64_t kvHeads,
                                int64_t headDim, int64_t tokens,
                                double kvBytesPerElem, int64_t tp = 1);

} // namespace loom::cost

#endif // LOOM_COST_COSTMODEL_H
