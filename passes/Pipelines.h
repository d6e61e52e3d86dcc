//===- Pipelines.h - Loom's phases and their pass pipelines -----*- C++ -*-===//
//
// The compiler walks these phases in order; `loomc --compile-to=<phase>`
// stops after one. Each phase is a pass group in its own folder under
// passes/; a phase that has no passes yet reports so instead of pretending.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PIPELINES_H
#define LOOM_PASSES_PIPELINES_H

#include "passes/Lowering/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace loom {

enum class Phase {
  Import,
  Raise,
  Quantize,
  Shard,
  Pipeline,
  Partition,
  Lower,
  Bundle,
};

constexpr Phase kAllPhases[] = {
    Phase::Import,   Phase::Raise,     Phase::Quantize, Phase::Shard,
    Phase::Pipeline, Phase::Partition, Phase::Lower,    Phase::Bundle};

llvm::StringRef getPhaseName(Phase phase);
llvm::StringRef getPhaseSummary(Phase phase);
std::optional<Phase> parsePhase(llvm::StringRef name);

/// Options shared by the phase pipelines (filled from loomc's flags).
struct PipelineOptions {
  std::string mesh;  ///< e.g. "dp=2,tp=4"
  std::string quant; ///< e.g. "int4:32"
  // The quantize phase (passes/Quantize, docs/QUANTIZE.md).
  std::string quantFile;     ///< where the quantized blocks are written
  std::string quantReport;   ///< JSON error report (none when empty)
  std::string quantFileName; ///< the report's name for quantFile (default:
                             ///< its absolute path)
  std::string quantSkip = "default"; ///< globs kept in float
  std::string quantRules;            ///< 'GLOB=SCHEME;GLOB=skip'
  std::string baseDir; ///< relative weight files are resolved here
  bool quantVerbose = false;
  std::string quantActivations =
      "auto"; ///< auto, f32, int8 or int8x3 (generated kernels)
  // The shard phase (passes/Sharding, docs/SHARDING.md).
  std::string device = "cpu"; ///< lib/Cost device of every rank
  std::string meshJson;       ///< JSON mesh spec (links), optional
  double memoryLimitGiB = 0;  ///< per device; 0: the device's capacity
  std::string planFile;       ///< plan JSON (none when empty)
  bool planSummary = false;   ///< print the readable plan summary
  std::string shardPasses;    ///< pass pipeline run before the planner
                              ///< (plugins' sharding rules)
  // The pipeline phase (passes/Pipeline, docs/PIPELINE.md).
  std::string stages;           ///< layer ranges per stage ("0-9,10-19")
  int64_t microbatches = 1;     ///< recorded in the plan (bubble, activations)
  bool pipelineVerbose = false; ///< report the stages as a remark
  // The lower phase (passes/Lowering).
  LowerPipelineOptions lower;
};

/// Whether the passes of `phase` exist in this build.
bool isPhaseBuilt(Phase phase);

/// Whether `phase` is a pass pipeline (`loom-<phase>-pipeline`); import and
/// bundle are the driver's (reading a model, writing out/).
bool isPassPhase(Phase phase);

/// Appends the passes of `phase` to `pm` (nothing for import and bundle).
/// Fails with a message naming the phase when it is not built yet.
mlir::LogicalResult buildPhasePipeline(mlir::OpPassManager &pm, Phase phase,
                                       const PipelineOptions &options,
                                       std::string &error);

/// Registers every Loom pass and the `loom-<phase>-pipeline` pipelines.
void registerAllLoomPassesAndPipelines();

} // namespace loom

#endif // LOOM_PASSES_PIPELINES_H
