//===- Bundle.h - writing out/ for loom-run ---------------------*- C++ -*-===//
//
// Collects what the launcher needs from a lowered module (the entry points'
// signatures that the lower phase recorded: inputs, outputs, weights with
// their storage), and writes the
// bundle directory atomically (docs/BUNDLE.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_BUNDLE_BUNDLE_H
#define LOOM_LIB_BUNDLE_BUNDLE_H

#include "lib/Target/CpuTarget.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>
#include <string>
#include <vector>

namespace loom {

/// The bundle format version written and read (docs/BUNDLE.md).
constexpr int kBundleVersion = 1;

/// Where `loomc --quant` puts the quantized weights and their error report
/// in a bundle (relative to the bundle directory).
constexpr const char *kBundleQuantFile = "weights/quant.bin";
constexpr const char *kBundleQuantReport = "weights/quant.report.json";

struct TensorInfo {
  std::string name;
  std::string dtype;          ///< f32 f16 bf16 f64 i8 i32 i64 u8 i1
  std::vector<int64_t> shape; ///< -1 for dynamic
  /// Inputs only: runtime-owned state updated in place ("kv_cache"; the
  /// `loom.state` argument attribute), else empty.
  std::string state;
  int64_t ctxDim = -1; ///< kv_cache: the context dimension (2)
  /// Inputs of a pipeline stage function (docs/BUNDLE.md "pipeline"): the
  /// `loom.boundary` / `loom.entry_arg` argument attributes, else -1.
  int64_t boundary = -1;
  int64_t entryArg = -1;
  /// The `loom.batch_dim` argument/result attribute (the dimension that is
  /// the batch; microbatches split it), else -1.
  int64_t batchDim = -1;
};

/// What an LLM's module says about itself (`llm.model` / `llm.tokenizer`
/// module attributes); `model` is a JSON object text, empty when the
/// module is not an LLM.
struct LlmInfo {
  std::string model;
  std::string tokenizerFormat; ///< "gguf" | "hf" | "" (none)
  std::string tokenizerFile;   ///< absolute
};

/// Reads the `llm.model` / `llm.tokenizer` attributes of `module` (relative
/// files resolved against `baseDir`).
bool collectLlm(mlir::ModuleOp module, const std::string &baseDir, LlmInfo &llm,
                std::string &error);

struct WeightInfo {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string file; ///< absolute (made bundle-relative by writeBundle)
  int64_t offset = 0;
  int64_t nbytes = 0;
  /// A weight loaded split (partitioned): the mesh axes of each dimension
  /// (major first) and the global shape; `shape` is the per-rank block,
  /// `offset`/`nbytes` the whole tensor's bytes in `file`.
  std::vector<std::vector<std::string>> splitAxes;
  std::vector<int64_t> globalShape;
  /// Interleaved layout of a quantized weight (docs/QUANTIZE.md), made by
  /// the launcher at load; empty: the rows as stored. In manifest order:
  /// rows, block_bytes, fields, field_bytes, unit_bytes.
  std::vector<std::pair<std::string, int64_t>> interleave;
  /// "kn" / "nk": the weight is the f32 GEMM's right operand stored [K, N]
  /// / [N, K] (loom-record-gemm-weights), packed by the runtime at load;
  /// empty: not.
  std::string gemmB;
};

struct EntryInfo {
  std::string name;
  /// A stage function of a pipelined module (`loom.pipeline`, functions
  /// `@f__stage<k>`): the pipelined entry `f`, the stage k, the pipeline's
  /// mesh axis and stage count; stage -1 otherwise.
  std::string pipelineEntry;
  int64_t stage = -1;
  std::string pipelineAxis;
  int64_t pipelineStages = 0;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs; ///< shape holds -1s: only the rank counts
  std::vector<WeightInfo> weights;
};

/// The device of a GPU program (`loomc --target=cuda`), recorded in the
/// manifest's "target" beside the host CPU (docs/BUNDLE.md "target").
struct GpuTargetInfo {
  std::string device;             ///< "cuda"
  std::vector<std::string> chips; ///< the fatbin's cubins, e.g. sm_80
  std::string format;             ///< fatbin, bin or isa (PTX)
  struct Plan {
    std::string entry;
    int64_t peakBytes = 0, uploadBytes = 0, residentBytes = 0;
    /// State (KV caches): resident for the life of the bundle, sized by the
    /// context chosen at load; not in peakBytes.
    int64_t stateBytesPerPosition = 0;
    /// The bound of every dynamic input dimension the plan assumed (the
    /// entry's sizes are run-time ones up to it); 0: static shapes.
    int64_t maxDim = 0;
    /// The workspace: every buffer of a call at its compile-time offset
    /// (in peakBytes).
    int64_t workspaceBytes = 0;
  };
  std::vector<Plan> memoryPlan; ///< per entry point
};

struct MeshInfo {
  std::vector<std::string> axes;
  std::vector<int64_t> shape;
  int64_t numRanks() const;
};

/// Reads the entry points that loom-record-entry-points recorded on the
/// module (`loom.entry_points`; before or after lowering). Relative weight
/// files are resolved against `baseDir`; every weight must have storage that
/// exists and is long enough. Errors go to `error`.
bool collectEntries(mlir::ModuleOp module, const std::string &baseDir,
                    std::vector<EntryInfo> &entries, std::string &error);

/// The mesh the program runs on: the one mesh the module declares
/// (`loom.meshes` recorded by the lower phase, else its loom.mesh ops), or
/// `meshFlag` ("dp=2,tp=4"), or a single rank.
bool collectMesh(mlir::ModuleOp module, const std::string &meshFlag,
                 MeshInfo &mesh, std::string &error);

/// Writes `outDir` (via a temporary directory renamed into place):
/// manifest.json, ir/program.mlir, the library made by `emitLibrary`, and
/// every entry of `stagedDir` (when not empty): files that earlier phases
/// wrote for the bundle (the quantized weights, the plan, cubins), laid out
/// as in the bundle, moved in before the bundle is renamed into place. The
/// manifest names a weight file under `stagedDir` by its path relative to
/// the bundle. On failure nothing is written at `outDir` (an older bundle
/// stays); the caller removes `stagedDir` either way. The manifest ties
/// itself to the library ("integrity": hashes of the library and of the
/// entry signatures) and, with `target` (filled by `emitLibrary`), records
/// the CPU and features the code was generated for ("target"), with
/// `gpu` the device, its chips and the memory plan.
bool writeBundle(const std::string &outDir, const std::string &model,
                 const MeshInfo &mesh, const std::vector<EntryInfo> &entries,
                 const std::string &programIR,
                 const std::function<bool(const std::string &soPath,
                                          std::string &error)> &emitLibrary,
                 const std::string &stagedDir, std::string &error,
                 const CpuTargetInfo *target = nullptr, const LlmInfo &llm = {},
                 const GpuTargetInfo *gpu = nullptr);

} // namespace loom

#endif // LOOM_LIB_BUNDLE_BUNDLE_H
