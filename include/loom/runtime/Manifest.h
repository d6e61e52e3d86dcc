//===- Manifest.h - the bundle's manifest.json ------------------*- C++ -*-===//
//
// Reads and validates manifest.json (docs/BUNDLE.md, format version 1).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_MANIFEST_H
#define LOOM_RUNTIME_MANIFEST_H

#include "loom/Support/DType.h"
#include "loom/runtime/Strided.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::run {

/// The bundle format version this loom-run reads.
constexpr int64_t kBundleVersion = 1;

/// Element types of the manifest ("f32", ..., "i1"): the one vocabulary
/// (loom/Support/DType.h) the bundle writer spells them with.
using ::loom::DType;
using ::loom::dtypeName;
using ::loom::dtypeSize;
using ::loom::parseDType;

/// The .npy descr written for this dtype ('<f4'; bf16: '<u2', its bits).
const char *npyDescr(DType t);
/// Whether a normalised .npy descr is accepted for this dtype.
bool npyAccepts(DType t, const std::string &descr);

struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape; ///< -1: dynamic (inputs only)
  /// Inputs only: "kv_cache" for state the runtime allocates, zero-fills,
  /// owns and passes to every call (updated in place), else empty; its
  /// context dimension (shape[ctxDim] == -1).
  std::string state;
  int64_t ctxDim = -1;
  /// Inputs of a pipeline stage's entry (docs/BUNDLE.md "pipeline"): the
  /// index of the previous stage's result this input receives (-1: not a
  /// boundary), or the index of the input in the pipelined entry (-1:
  /// unknown).
  int64_t boundary = -1;
  int64_t entryArg = -1;
  /// "batch_dim" (docs/BUNDLE.md): the dimension that is the batch, which
  /// microbatches split; -1: not annotated.
  int64_t batchDim = -1;
};

/// The top-level "model" object of an LLM's bundle (docs/BUNDLE.md).
struct ModelInfo {
  bool llm = false; ///< false: "model" is the plain name string
  std::string architecture;
  int64_t numLayers = 0, numHeads = 0, numKvHeads = 0, headDim = 0,
          hiddenSize = 0, vocabSize = 0, contextLength = 0;
};

/// The top-level "tokenizer" object; format empty when absent.
struct TokenizerInfo {
  std::string format; ///< "gguf" | "hf"
  std::string file;   ///< absolute
};

struct OutputSpec {
  std::string name;
  DType dtype = DType::F32;
  int64_t rank = 0;
  /// The per-rank shape when the manifest gives it (stage entries of a
  /// pipeline; -1: dynamic), else empty.
  std::vector<int64_t> shape;
  /// "batch_dim": the dimension microbatches concatenate; -1: none given.
  int64_t batchDim = -1;
};

/// A quantized weight's interleaved layout (Strided.h); rows == 0: the
/// rows as stored.
using Interleave = RowInterleave;

/// How a weight is read by the f32 GEMM ("gemm_b"): not as its right
/// operand, or as B stored [K, N] (trans_b 0) or [N, K] (trans_b 1). The
/// runtime packs such weights into GEMM panels at load.
enum class GemmB { None, KN, NK };

struct Entry {
  std::string name;
  std::string symbol;
  std::vector<TensorSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::vector<TensorSpec> weights;
  std::vector<Interleave> interleave; ///< one per weight
  std::vector<GemmB> gemmB;           ///< one per weight
};

struct WeightSlice {
  std::string name;
  std::string file; ///< as written: absolute, or relative to the bundle
  int64_t offset = 0;
  int64_t nbytes = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; ///< elements
};

struct RankInfo {
  int64_t rank = 0;
  std::vector<int64_t> coords;
  std::string ir;
  /// entry name -> one slice per weight of the entry, in manifest order.
  std::map<std::string, std::vector<WeightSlice>> weights;
};

/// What ties the manifest to its library (docs/BUNDLE.md "integrity"):
/// FNV-1a 64 hashes as "fnv1a64:<16 hex>"; empty when the manifest has
/// none (checkBundleIntegrity refuses it then).
struct Integrity {
  bool present = false;
  std::string library;  ///< hash of the library file's bytes
  std::string entries;  ///< hash of the compact JSON of "entries"
  std::string pipeline; ///< hash of the compact JSON of "pipeline" (or "")
};

/// One pipelined entry point: its stage entries, stage k on the ranks whose
/// pipeline coordinate is k, and the entry as a caller sees it (`entry`:
/// the stages' non-boundary inputs by entry_arg, the last stage's outputs,
/// no symbol, no weights).
struct PipelineEntry {
  Entry entry;
  std::vector<std::string> stages;
};

/// The top-level "pipeline" object (docs/BUNDLE.md): present when the
/// module was split into stages over the mesh axis `axis`.
struct PipelineInfo {
  bool present = false;
  std::string axis;
  int64_t axisIndex = -1;
  int64_t stages = 1;
  std::vector<PipelineEntry> entries; ///< by name
  const PipelineEntry *find(const std::string &name) const;
};

/// The CPU the library was generated for (docs/BUNDLE.md "target").
struct TargetInfo {
  bool present = false;
  std::string cpu;
  std::vector<std::string> features; ///< x86 features the code may use
  /// A GPU program (`loomc --target=cuda`): "cuda", else empty (the CPU).
  std::string device;
  std::vector<std::string> chips; ///< e.g. sm_80, sm_90
  /// How the kernels are stored: fatbin, bin, isa (PTX), or emu (compiled
  /// for the host, run only by the emulating driver, kEmulatorDeviceName).
  std::string format;
  /// The CUDA runtime ABI (loom/runtime/cuda.h) the host code was generated
  /// against (0: not recorded, a bundle older than the field).
  int64_t cudaAbiVersion = 0;
  /// Per entry: peak device bytes of the compile-time memory plan.
  std::map<std::string, int64_t> peakBytes;
  /// Per entry: device bytes of its workspace (every buffer of a call at a
  /// compile-time offset; in peakBytes), allocated at its first call.
  std::map<std::string, int64_t> workspaceBytes;
  /// Per entry with state: device bytes of its KV caches per context
  /// position (resident for the life of the bundle, not in peakBytes).
  std::map<std::string, int64_t> stateBytesPerPosition;
  /// Per entry with dynamic input dimensions: the bound the plan assumed
  /// for each of them (a call over it is refused before it runs).
  std::map<std::string, int64_t> maxDim;
  bool isCuda() const { return device == "cuda"; }
  bool isEmulated() const { return isCuda() && format == "emu"; }
};

struct Manifest {
  std::string format;
  int64_t version = 0;
  int64_t abiVersion = 0;
  std::string model; ///< the model's name
  ModelInfo llm;
  TokenizerInfo tokenizer;
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape;
  int64_t numRanks = 0;
  std::string library;
  std::vector<Entry> entries;
  std::vector<RankInfo> ranks;
  Integrity integrity;
  TargetInfo target;
  PipelineInfo pipeline;
  /// The entries never write their inputs (non-state arguments) in place
  /// (loom-bufferize marks them read-only): the executor may hand them the
  /// caller's memory (RunOptions::copyInputs = false).
  bool inputsReadOnly = false;
  /// fnv1a64 of the compact JSON dump of the "entries" array as read, to
  /// compare with integrity.entries; likewise of "pipeline" (empty without).
  std::string entriesHash;
  std::string pipelineHash;

  /// The pipeline stage of `rank` (its coordinate on the pipeline axis; 0
  /// without a pipeline) and the rank with the same coordinates but stage
  /// `stage`.
  int64_t stageOf(int64_t rank) const;
  int64_t peerAtStage(int64_t rank, int64_t stage) const;

  const Entry *findEntry(const std::string &name) const;
  /// "tp=2" / "dp=2 x tp=4".
  std::string meshString() const;
};

/// The path of a file that manifest.json names (the library, a weight
/// file): an absolute path as it is, a relative one under `bundleDir`.
std::string resolveBundlePath(const std::string &bundleDir,
                              const std::string &path);

/// Parses and validates the text of manifest.json. `runtimeAbi` is the ABI
/// version of the linked runtime. On failure returns false and sets *error
/// to a message naming the offending key (e.g.
/// "entries[0].inputs[1].shape: expected an array of integers").
bool parseManifest(const std::string &text, int64_t runtimeAbi, Manifest &m,
                   std::string *error);

} // namespace loom::run

#endif // LOOM_RUNTIME_MANIFEST_H
