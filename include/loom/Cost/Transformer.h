//===- Transformer.h - Analytical transformer step model --------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// One training step (or forward-only batch) of a decoder-only transformer,
// GPT-style (Megatron-LM SC'21, Narayanan et al., arXiv 2104.04473) or
// llama-style (GQA, SwiGLU), with tensor parallel t, pipeline p (v model
// chunks per device when interleaved), data parallel d, microbatch b
// (m = B / (d b) microbatches per pipeline), ZeRO 0/1, recomputation on/off;
// and the search over all of them (chooseLayout) that the compiler calls.
//
//  FLOPs per iteration (the paper's eq. 3, counted as the paper does):
//    F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
//  i.e. per layer and sequence 24 s h^2 + 4 s^2 h forward matmul FLOPs, x4
//  (forward, recomputed forward, backward = 2x), plus the logit layer
//  2 s h V x3. MFU uses 3 x the forward (modelFlopsPerIteration).
//
//  Per microbatch and device of a stage:
//    compute  = its layers' matmul FLOPs / t / (peak eGemm)
//             + elementwise bytes / (HBM eMem)      (layernorm, GeLU,
//               softmax, dropout, residuals; see Transformer.cpp)
//               (+ the logit layer on the last stage)
//    tp comm  = per layer, all-reduces of b s h 16-bit values over the tp
//               axis: 2 forward + 2 backward (+2 in the recomputed forward)
//    p2p      = send/recv of b s h activations (and gradients) per chunk
//  step = (m + (p-1)/v) x (slowest stage + p2p) + the exposed dp comm
//    dp comm  = all-reduce of the largest stage's gradients over d, minus the
//               part overlapped with the backward pass (dpOverlap, 0 for
//               Megatron-LM 2021 which reduces after the backward pass)
//  Memory per stage: its weights (+ embedding / head), gradients, optimizer
//  state, activations of min(p - k, m) in-flight microbatches (1F1B), the KV
//  cache for inference. docs/COST-MODEL.md has every formula.
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

/// The shape of a decoder-only transformer. The first six fields are the
/// Megatron GPT ones (and an aggregate `GptConfig{h, a, l, s, V, B}` is a
/// GPT-3-style model: multi-head attention, 4h GeLU MLP with biases, learned
/// positions, tied embedding); the rest generalise to llama-style models
/// (`llamaShape`): grouped-query attention, a gated (SwiGLU) MLP of any
/// width, no biases, rotary positions, untied LM head.
struct GptConfig {
  int64_t hidden = 0;           ///< h
  int64_t heads = 0;            ///< a
  int64_t layers = 0;           ///< l
  int64_t seqLen = 0;           ///< s
  int64_t vocab = 0;            ///< V
  int64_t globalBatch = 0;      ///< B, sequences per iteration
  int64_t kvHeads = 0;          ///< KV heads (GQA); 0: = heads
  int64_t ffn = 0;              ///< MLP width; 0: 4 h
  bool gatedMlp = false;        ///< SwiGLU: gate, up, down (3 matrices)
  bool biases = true;           ///< linear biases + layernorm betas
  bool learnedPositions = true; ///< an s x h position embedding
  bool tiedEmbedding = true;    ///< the LM head reuses the embedding

  int64_t kvHeadCount() const { return kvHeads > 0 ? kvHeads : heads; }
  int64_t ffnSize() const { return ffn > 0 ? ffn : 4 * hidden; }
  int64_t headDim() const { return heads > 0 ? hidden / heads : 0; }
};
using TransformerShape = GptConfig;

/// A llama-style shape (GQA, SwiGLU of width `ffn`, RMSNorm without
/// biases, rotary positions, untied head).
GptConfig llamaShape(int64_t hidden, int64_t heads, int64_t kvHeads,
                     int64_t layers, int64_t ffn, int64_t vocab, int64_t seqLen,
                     int64_t globalBatch);

struct ParallelConfig {
  int64_t tp = 1, pp = 1, dp = 1;
  int64_t microBatch = 1; ///< b
  unsigned zeroStage = 0;
  /// v: model chunks per device of the interleaved 1F1B schedule (1: plain
  /// 1F1B); needs m % p == 0, >= v layers per stage and, when p divides the
  /// layers, v dividing l / p (Megatron's rule).
  int64_t virtualStages = 1;
  int64_t numDevices() const { return tp * pp * dp; }
};

/// Knobs of the training model; the defaults are Megatron-LM 2021's.
struct TrainingOptions {
  Efficiency eff = defaultEfficiency();
  bool recompute = true; ///< full activation recomputation
  double gradBytes = 2;  ///< bytes per gradient in the dp all-reduce
  double dpOverlap = 0;  ///< fraction of the dp all-reduce hidden
  Algorithm algorithm = Algorithm::Ring;
  /// Megatron's scatter/gather between pipeline stages (SC'21 4.1): each tp
  /// rank sends 1/t of the boundary activation over the inter-node link and
  /// the receivers all-gather it over the tp link.
  bool scatterGather = true;
  /// Attention in one fused kernel (FlashAttention): the a s^2 scores are
  /// neither written to memory nor kept for the backward pass.
  bool fusedAttention = false;
  /// Megatron sequence parallelism (Korthikanti et al. 2022): the norms,
  /// dropouts and residuals (and their activations) split over tp; the
  /// all-reduces become reduce-scatter + all-gather of the same volume.
  bool sequenceParallel = false;
  /// Forward only (batch inference / prefill): no backward, no gradients or
  /// optimizer state, no dp all-reduce; the KV cache of the batch is kept.
  bool inference = false;
  double weightBytes = 2; ///< inference weights (2: bf16)
  double kvBytes = 2;     ///< inference KV-cache element bytes
  /// Bytes per device the layout must fit in; 0: the device's capacity.
  double memoryLimit = 0;
};

/// Parameters. GPT: 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)) (the
/// paper's count, learned position embeddings, tied input/output
/// embedding); in general per layer h (h + 2 h_kv) + h^2 + (2|3) h f +
/// norms/biases, plus V h (x2 untied) + s h (learned positions).
double gptParameters(const GptConfig &c);

/// The paper's FLOPs per iteration, 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double megatronFlopsPerIteration(const GptConfig &c);

/// Forward matmul FLOPs of one sequence: per layer
/// 2 s (h (h + 2 h_kv) + h^2 + (2|3) h f) + 4 s^2 h (scores and
/// probabilities x V, the full square as Megatron and PaLM count it), plus
/// the logit layer 2 s h V.
double forwardFlopsPerSequence(const GptConfig &c);

/// The model FLOPs of an iteration for MFU: 3 x the forward (forward +
/// backward), no recomputation: per token 6 N_matmul + 12 l h s, the PaLM
/// convention (N_matmul: the matmul parameters, LM head included, embedding
/// lookup excluded).
double modelFlopsPerIteration(const GptConfig &c);

/// One pipeline stage of an estimate.
struct StageEstimate {
  int64_t firstLayer = -1, lastLayer = -1; ///< inclusive; -1,-1: none
  bool hasEmbedding = false, hasHead = false;
  double time = 0;        ///< per microbatch (forward+backward), seconds
  double params = 0;      ///< parameters on one of its devices
  MemoryBreakdown memory; ///< one of its devices
};

/// What one step costs.
struct TrainingEstimate {
  double stepTime = 0;    ///< seconds per iteration
  double computeTime = 0; ///< matmuls + elementwise, bubble excluded
  double matmulTime = 0;
  double elementwiseTime = 0;
  double tpCommTime = 0;
  double ppCommTime = 0;
  double bubbleTime = 0;
  double dpCommTime = 0;             ///< the exposed part
  double bubbleFraction = 0;         ///< (p-1)/(v m+p-1)
  int64_t microBatches = 0;          ///< m per pipeline
  double stageTime = 0;              ///< the slowest stage, per microbatch
  double p2pBytes = 0;               ///< one boundary transfer (per rank)
  double p2pTime = 0;                ///< one boundary transfer
  double flopsPerIteration = 0;      ///< executed (recomputation included)
  double modelFlopsPerIteration = 0; ///< for MFU (no recomputation)
  double tflopsPerDevice = 0; ///< flopsPerIteration / (stepTime N) / 1e12
  double mfu = 0;             ///< model FLOPs / (stepTime N peak bf16)
  bool recompute = true;
  MemoryBreakdown memory; ///< the most loaded device
  std::vector<StageEstimate> stages;
  bool fitsInMemory = false;
  double memoryLimit = 0; ///< what fitsInMemory compared against
};

/// Layers per stage: any layer count, balanced so that the slowest stage
/// (layers x per-layer time + the embedding on the first, the logit layer
/// on the last) is as fast as possible, never a dropped layer. `perLayer`,
/// `first`, `last` in any unit. An Error when pp > layers.
Result<std::vector<int64_t>> balanceStages(int64_t layers, int64_t pp,
                                           double perLayer, double first,
                                           double last);

/// Checks that the layout is legal: tp divides heads, KV heads (or is a
/// multiple of them) and hidden, pp <= layers, d b divides B, interleaving
/// (v > 1) needs m % p == 0 and >= v layers per stage (v | l/p when p | l).
/// An Error naming the field if not.
Result<TrainingEstimate> estimateTraining(const GptConfig &model,
                                          const ParallelConfig &par,
                                          const MeshSpec &mesh,
                                          const TrainingOptions &opts = {});

/// Builds the mesh "dp=d,pp=p,tp=t" for `device` (tp innermost, inside a node
/// when it fits) with the given links, for the Megatron layouts.
MeshSpec megatronMesh(const DeviceSpec &device, const ParallelConfig &par,
                      const LinkSpec &intraNode, const LinkSpec &interNode,
                      int64_t devicesPerNode = 8);

/// What the layout search may choose; a field > 0 (or >= 0 for the ternary
/// ones) is fixed by the user.
struct LayoutFixed {
  int64_t tp = 0, pp = 0, dp = 0;
  int64_t microBatches = 0;  ///< m (then b = B / (m d))
  int64_t microBatch = 0;    ///< b
  int64_t virtualStages = 0; ///< v
  int zeroStage = -1;        ///< 0 or 1
  int recompute = -1;        ///< 0 or 1
};

/// A layout search: `numDevices` devices of `device` on `intraNode` links
/// inside a node of `devicesPerNode` and `interNode` links between nodes.
struct LayoutRequest {
  GptConfig shape;
  int64_t numDevices = 0;
  DeviceSpec device;
  LinkSpec intraNode, interNode;
  int64_t devicesPerNode = 8;
  TrainingOptions opts; ///< opts.memoryLimit: the per-device limit
  LayoutFixed fixed;
  int64_t maxTp = 0; ///< 0: devicesPerNode (tp inside a node)
  bool allowPipeline = true;
  bool allowInterleave = true;
  bool searchRecompute = true; ///< try with and without recomputation
};

struct SearchResult {
  ParallelConfig best;
  TrainingEstimate estimate;
  int64_t layoutsTried = 0;
  double searchSeconds = 0;
};

/// The fastest legal layout that fits: t (divides heads and N, <= maxTp),
/// p (divides N / t, <= layers, balanced stages), d = N / (t p), b in
/// {1, 2, 4, 8, 16} with d b | B (m = B / (b d)), v in 1..8 (legal as
/// estimateTraining says), ZeRO 0/1, recomputation on/off; every field in
/// `fixed` is held. An Error naming the closest miss when none fits.
Result<SearchResult> chooseLayout(const LayoutRequest &req);

/// The request for `numDevices` devices of a mesh's device with its default
/// links (defaultIntraNodeLink / defaultInterNodeLink).
LayoutRequest layoutRequest(const GptConfig &shape, int64_t numDevices,
                            const DeviceSpec &device,
                            int64_t devicesPerNode = 8);

/// One line: "tp=8 pp=16 dp=128 b=1 m=16 v=1 zero=1 recompute: step 6.1 s,
/// bubble 48.4%, 63.2 GB of 80 GB per device, 402 TFLOP/s, MFU 40.6%".
std::string describeLayout(const SearchResult &r);

/// The pipeline-free search of before (pp = 1 unless allowPipeline),
/// recomputation as `opts` says: chooseLayout with those fixed.
Result<SearchResult>
searchLayouts(const GptConfig &model, int64_t numDevices,
              const DeviceSpec &device, const LinkSpec &intraNode,
              const LinkSpec &interNode, int64_t devicesPerNode = 8,
              const TrainingOptions &opts = {}, bool allowPipeline = false);

/// The fastest b (and v, ZeRO 0/1) for a fixed (t, p, d), recomputation as
/// `opts` says; what the benchmark reports for the paper's layout.
Result<SearchResult>
bestForLayout(const GptConfig &model, int64_t tp, int64_t pp, int64_t dp,
              const DeviceSpec &device, const LinkSpec &intraNode,
              const LinkSpec &interNode, int64_t devicesPerNode = 8,
              const TrainingOptions &opts = {});

/// A row of Megatron-LM SC'21 Table 1 (A100 80 GB, 312 TFLOP/s bf16,
/// s = 2048, V = 51200; h, a, l, t, p, GPUs, B and the TFLOP/s per GPU as
/// the paper's table states them).
struct MegatronRow {
  const char *name;   ///< "1.7B"
  double paperParams; ///< the paper's stated parameter count
  GptConfig model;
  int64_t tp, pp, dp;
  double measuredTflops; ///< per GPU
};
/// All ten rows (1.7B ... 1T).
std::vector<MegatronRow> megatronTable1();
/// The four rows with p = 1 (1.7B, 3.6B, 7.5B, 18.4B).
std::vector<MegatronRow> megatronTable1PipelineFree();

/// The e_gemm in [lo, hi] (step 0.005) that minimises the largest relative
/// error of the predicted TFLOP/s per GPU over `rows` (each at its paper
/// layout, best b and v); `maxError` gets that error.
double fitGemmEfficiency(const std::vector<MegatronRow> &rows,
                         double *maxError = nullptr, double lo = 0.5,
                         double hi = 0.95);

/// The paper's cluster: A100 80 GB, 8 per node on NVLink/NVSwitch (600 GB/s
/// bidirectional: nvlink3), 8 x 200 Gb/s HDR InfiniBand per node (ib-hdr).
DeviceSpec megatronDevice();
LinkSpec megatronIntraNode();
LinkSpec megatronInterNode();

} // namespace loom::cost

#endif // LOOM_COST_TRANSFORMER_H
