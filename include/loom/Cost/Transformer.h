//===- Transformer.h - Analytical GPT training-step model -------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// One training step of a GPT-style model (Megatron-LM SC'21, Narayanan et
// al., arXiv 2104.04473) with tensor parallel t, pipeline p, data parallel d,
// microbatch b (m = B / (d b) microbatches per pipeline), full activation
// recomputation.
//
//  FLOPs per iteration (the paper's eq. 3, counted as the paper does):
//    F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
//  i.e. per layer and sequence 24 s h^2 + 4 s^2 h forward matmul FLOPs, x4
//  (forward, recomputed forward, backward = 2x), plus the logit layer
//  2 s h V x3.
//
//  Time of a step on one device (p = 1 reduces to the first two lines):
//    compute  = matmul FLOPs / (t p) / (peak eGemm)
//             + elementwise bytes / (HBM eMem)      (layernorm, GeLU,
//               softmax, dropout, residuals; see Transformer.cpp)
//    tp comm  = per layer and microbatch, all-reduces of b s h 16-bit values
//               over the tp axis: 2 forward + 2 backward (+2 in the
//               recomputed forward)
//    pipeline = (m + p - 1) / m x (compute + tp comm) per stage + the
//               send/recv of b s h activations between stages
//    dp comm  = all-reduce of the stage's gradients over d, minus the part
//               overlapped with the backward pass (dpOverlap, 0 for
//               Megatron-LM 2021 which reduces after the backward pass)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COST_TRANSFORMER_H
#define LOOM_COST_TRANSFORMER_H

#include "loom/Cost/CostModel.h"
#include "loom/Cost/Device.h"
#include "loom/Cost/Mesh.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cost {

struct GptConfig {
  int64_t hidden = 0;  ///< h
  int64_t heads = 0;   ///< a
  int64_t layers = 0;  ///< l
  int64_t seqLen = 0;  ///< s
  int64_t vocab = 0;   ///< V
  int64_t globalBatch = 0; ///< B, sequences per iteration
};

struct ParallelConfig {
  int64_t tp = 1, pp = 1, dp = 1;
  int64_t microBatch = 1; ///< b
  unsigned zeroStage = 0;
  int64_t numDevices() const { return tp * pp * dp; }
};

/// Knobs of the training model; the defaults are Megatron-LM 2021's.
struct TrainingOptions {
  Efficiency eff = defaultEfficiency();
  bool recompute = true;       ///< full activation recomputation
  double gradBytes = 2;        ///< bytes per gradient in the dp all-reduce
  double dpOverlap = 0;        ///< fraction of the dp all-reduce hidden
  Algorithm algorithm = Algorithm::Ring;
};

/// Parameters: 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)) (the paper's
/// count, learned position embeddings, tied input/output embedding).
double gptParameters(const GptConfig &c);

/// The paper's FLOPs per iteration, 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double megatronFlopsPerIteration(const GptConfig &c);

/// What one step costs.
struct TrainingEstimate {
  double stepTime = 0;      ///< seconds per iteration
  double computeTime = 0;   ///< matmuls + elementwise, bubble excluded
  double matmulTime = 0;
  double elementwiseTime = 0;
  double tpCommTime = 0;
  double ppCommTime = 0;
  double bubbleTime = 0;
  double dpCommTime = 0;    ///< the exposed part
  double bubbleFraction = 0; ///< (p-1)/(m+p-1)
  int64_t microBatches = 0;  ///< m per pipeline
  double flopsPerIteration = 0;
  double tflopsPerDevice = 0; ///< F / (stepTime N) / 1e12
  MemoryBreakdown memory;     ///< the most loaded device (first stage)
  bool fitsInMemory = false;
};

/// Checks that the layout is legal: tp divides heads and hidden, pp divides
/// layers, d b divides B, tp and pp >= 1. An Error naming the field if not.
Result<TrainingEstimate> estimateTraining(const GptConfig &model,
                                          const ParallelConfig &par,
                                          const MeshSpec &mesh,
                                          const TrainingOptions &opts = {});

/// Builds the mesh "dp=d,pp=p,tp=t" for `device` (tp innermost, inside a node
/// when it fits) with the given links, for the Megatron layouts.
MeshSpec megatronMesh(const DeviceSpec &device, const ParallelConfig &par,
                      const LinkSpec &intraNode, const LinkSpec &interNode,
                      int64_t devicesPerNode = 8);

/// Searches all legal layouts on `numDevices` devices with pp = 1 (tp
/// divides heads, tp <= devicesPerNode, b in {1,2,4,8,16}, ZeRO 0 or 1) that
/// fit in memory, and returns the fastest; an Error when none fits.
struct SearchResult {
  ParallelConfig best;
  TrainingEstimate estimate;
  int64_t layoutsTried = 0;
};
Result<SearchResult> searchLayouts(const GptConfig &model, int64_t numDevices,
                                   const DeviceSpec &device,
                                   const LinkSpec &intraNode,
                                   const LinkSpec &interNode,
                                   int64_t devicesPerNode = 8,
                                   const TrainingOptions &opts = {},
                                   bool allowPipeline = false);

/// The fastest microbatch size (1..16) and ZeRO 0/1 for a fixed (t, p, d);
/// what the benchmark reports for the paper's layout.
Result<SearchResult> bestForLayout(const GptConfig &model, int64_t tp,
                                   int64_t pp, int64_t dp,
                                   const DeviceSpec &device,
                                   const LinkSpec &intraNode,
                                   const LinkSpec &interNode,
                                   int64_t devicesPerNode = 8,
                                   const TrainingOptions &opts = {});

/// A row of Megatron-LM SC'21 Table 1 (A100 80 GB, 312 TFLOP/s bf16,
/// s = 2048, V = 51200, B = 512 for the p = 1 rows).
struct MegatronRow {
  const char *name;     ///< "1.7B"
  double paperParams;   ///< the paper's stated parameter count
  GptConfig model;
  int64_t tp, pp, dp;
  double measuredTflops; ///< per GPU
};
/// The four rows with p = 1 (1.7B, 3.6B, 7.5B, 18.4B).
std::vector<MegatronRow> megatronTable1PipelineFree();

/// The paper's cluster: A100 80 GB, 8 per node on NVLink/NVSwitch (600 GB/s
/// bidirectional: nvlink3), 8 x 200 Gb/s HDR InfiniBand per node (ib-hdr).
DeviceSpec megatronDevice();
LinkSpec megatronIntraNode();
LinkSpec megatronInterNode();

} // namespace loom::cost

#endif // LOOM_COST_TRANSFORMER_H
