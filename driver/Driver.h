//===- Driver.h - the compile driver shared by loomc and python/loom -*- C++
//-*-===//
//
// One compile as a library call: the options (loomc's flags as a struct),
// then import -> the phases' pass pipelines -> the bundle, the plan JSON
// (--emit=plan) or the IR after a phase. loomc is a command line around
// `compile`; the Python package (python/loom) calls it in process.
//
// Errors are values: every message the driver and MLIR's diagnostics write
// (the file:line:col of the input, the op's location) goes to the stream
// the caller gives (loomc: stderr as it happens; Python: a string that
// becomes the exception's text), and the outcome's exit code says whether
// it failed (1: an error, 2: an unknown flag value, as loomc exits).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_DRIVER_DRIVER_H
#define LOOM_LIB_DRIVER_DRIVER_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm
namespace mlir {
class Operation;
} // namespace mlir

namespace loom::driver {

/// loomc's flags (tools/loomc/loomc.cpp documents each one).
struct CompileOptions {
  std::string input = "-";  ///< model: .mlir, .onnx, .gguf, HF folder
  std::string output = "-"; ///< -o: a file, a bundle directory, "-"
  std::string compileTo = "bundle";
  std::string compileFrom;
  std::string mesh; ///< "dp=2,tp=4" or a .json mesh spec
  /// --devices N (no --mesh): the cost model picks dp x pp x tp for an LLM
  /// input (driver/LayoutChoice.h); --plan-batch sequences per step.
  int64_t devices = 0;
  int64_t planBatch = 1;
  std::string quant, quantSkip = "default", quantRules, quantAct = "auto";
  std::string quantFile, quantReport;
  bool quantInterleave = true;
  std::vector<std::string> plugins;
  std::string shardPasses;
  std::string device = "cpu";
  double memoryLimit = 0; ///< GiB per device, 0: the device's
  /// The pipeline phase (docs/PIPELINE.md): layer ranges per stage
  /// ("0-9,10-19"; empty: balanced) and the microbatches of the schedule
  /// (0: not given: 1, or with --devices the layout search's choice).
  std::string stages;
  int64_t microbatches = 0;
  std::string target = "cpu";
  std::string emit; ///< "", "plan" or "plan-html"
  /// --trace-overlay: a run's Chrome trace drawn beside the predicted
  /// schedule of --emit=plan-html (driver/PlanHtml.h).
  std::string traceOverlay;
  bool verbose = false;
  unsigned optLevel = 3;
  unsigned jobs = 0;
  uint64_t largeFunction = 20000;
  unsigned largeFunctionOpt = 2;
  bool timeLLVMPasses = false;
  int64_t contextLimit = 0;
  /// --weight-dtype: f32, f16 or bf16 for weights planned from a config
  /// alone ("": the config's torch_dtype, else f32).
  std::string weightDtype;
  bool portable = false;
  std::string qmatmul, cpu;
  bool noOutlineLayers = false, noGemm = false;
  /// --gpu-max-tokens: --target=cuda's bound of every dynamic input
  /// dimension (0: llm.model's context_length, else none).
  int64_t gpuMaxTokens = 0;
  /// --gpu-dtype: --target=cuda's activations on the device ("", f32, f16,
  /// bf16; "" is f32).
  std::string gpuDtype;
  /// --target=cuda: kernels compiled for the host, run by the emulating
  /// CUDA driver (test/gpu/emu) instead of a GPU (--gpu-emulate).
  bool gpuEmulate = false;
  std::string qmmTile, qmmPrefetch;

  /// The library's additions (no loomc flag):
  /// print the plan's readable summary with --emit=plan (loomc does).
  bool planSummary = true;
  /// When set and the compile stops before the bundle, the IR goes here
  /// instead of to `output`.
  std::string *irText = nullptr;
  /// Prefix of the driver's own messages ("loomc: ...").
  std::string toolName = "loomc";
  /// Called with the module (a ModuleOp) at the start of the shard phase,
  /// before the sharding passes and the planner: custom sharding rules of
  /// a library caller (python/loom). False: the compile fails (it wrote
  /// why to the stream).
  std::function<bool(mlir::Operation *module, llvm::raw_ostream &diag)>
      beforeShard;
};

/// How a compile ended: `exitCode` 0 on success; otherwise the messages
/// were written to the diagnostic stream given to `compile`.
struct Outcome {
  int exitCode = 0;
  bool ok() const { return exitCode == 0; }
};

/// Runs one compile. Driver messages and MLIR diagnostics (with their
/// source locations) go to `diag`. Thread-compatible: each call has its own
/// MLIRContext; plugins are loaded once per process.
Outcome compile(const CompileOptions &options, llvm::raw_ostream &diag);

/// The phase list as `loomc --list-phases` prints it.
void printPhases(llvm::raw_ostream &os);

/// Registers the MLIR command-line options that loomc offers
/// (--mlir-print-*, --mlir-disable-threading, ...).
void registerMLIRCommandLineOptions();

} // namespace loom::driver

#endif // LOOM_LIB_DRIVER_DRIVER_H
