//===- Driver.cpp - the compile driver shared by loomc and python/loom ----===//
//
// Walks the phases import -> raise -> quantize -> shard -> pipeline ->
// partition -> lower -> bundle and stops after `compileTo`. Outputs are
// written to a temporary name and renamed when complete, so a failed run
// never leaves a half-written file behind.
//
//===----------------------------------------------------------------------===//

#include "driver/Driver.h"

#include "dialects/Loom/IR/LoomDialect.h"
#include "driver/LayoutChoice.h"
#include "driver/PlanHtml.h"
#include "driver/TempCleanup.h"
#include "lib/Bundle/Bundle.h"
#include "lib/Import/Import.h"
#include "lib/Import/MlirInputGuard.h"
#include "lib/Target/CpuTarget.h"
#include "loom/Support/OutputFile.h"
#include "passes/Lowering/QuantKernels.h"
#include "passes/Pipelines.h"
#ifdef LOOM_HAVE_GPU_TARGET
#include "lib/Target/GpuTarget/GpuTarget.h"
#include "passes/Gpu/Passes.h"
#endif

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <mutex>
#include <unistd.h>

using namespace mlir;

namespace loom::driver {
namespace {

/// Plugins register passes globally, so each is loaded once per process
/// (a Python session may compile many times).
LogicalResult loadPlugins(const std::vector<std::string> &paths,
                          raw_ostream &diag, StringRef tool) {
  static std::mutex mutex;
  static llvm::StringSet<> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::string &path : paths) {
    if (loaded.contains(path))
      continue;
    auto plugin = PassPlugin::load(path);
    if (!plugin) {
      diag << tool << ": --plugin " << path << ": "
           << llvm::toString(plugin.takeError()) << "\n";
      return failure();
    }
    plugin->registerPassRegistryCallbacks();
    loaded.insert(path);
  }
  return mlir::success();
}

/// The environment variables that once steered code generation: say which
/// flag replaces each one that is set (the compiler no longer reads them).
void noteRetiredEnvironment(raw_ostream &diag, StringRef tool) {
  static constexpr std::pair<const char *, const char *> kRetired[] = {
      {"LOOM_QMATMUL", "--qmatmul=f32|i8|i8x3|dequant"},
      {"LOOM_NO_GEMM", "--no-gemm"},
      {"LOOM_QMATMUL_VNNI", "--cpu=NAME (a CPU without avx512vnni)"},
      {"LOOM_QMATMUL_AVX2", "--cpu=NAME or --portable (a CPU without avx2)"},
      {"LOOM_QMM_TILE", "--qmm-tile=MRxNR2xNR1"},
      {"LOOM_QMM_PREFETCH", "--qmm-prefetch=BYTES"}};
  for (auto [var, flag] : kRetired)
    if (std::getenv(var))
      diag << tool << ": note: " << var
           << " is ignored (code generation does not read the "
              "environment); use "
           << flag << "\n";
}

/// One compile: the options, the diagnostic stream and what the phases
/// share (the module, the pipelines' options, where files are staged).
class Compilation {
public:
  Compilation(const CompileOptions &o, raw_ostream &diag) : o(o), diag(diag) {}
  int run();

private:
  int fail(const Twine &message, int rc = 1) {
    diag << o.toolName << ": " << message << "\n";
    return rc;
  }
  int checkFlags();
  OwningOpRef<ModuleOp> importModel(MLIRContext &context,
                                    llvm::SourceMgr &sourceMgr);
  int setUpOutputs();
  void noteWeightsWithoutStorage();
  bool beginLowering();
  bool checkCudaProgram();
  bool lowerForCuda(TimingScope &timing);
  bool emitBundle(TimingScope &timing);
  bool runPhase(loom::Phase p, TimingScope &root);
  LogicalResult writeAtomically(StringRef path,
                                llvm::function_ref<void(raw_ostream &)> write);

  const CompileOptions &o;
  raw_ostream &diag;
  loom::Phase first = loom::Phase::Import, last = loom::Phase::Bundle;
  OwningOpRef<ModuleOp> module;
  loom::PipelineOptions options;
  std::string out;       ///< -o without trailing separators
  std::string model;     ///< the library's name: the input's stem
  std::string baseDir;   ///< relative weight files are resolved here
  std::string stageDir;  ///< files for the bundle, moved in by writeBundle
  std::string programIR; ///< ir/program.mlir: the IR entering lower
  loom::CpuTargetAttr cpuTarget; ///< set on the module by the lower phase
  loom::GpuTargetInfo gpuTarget; ///< --target=cuda: chips, memory plan
};

/// Writes `text` to `path` through a temporary file renamed into place.
LogicalResult
Compilation::writeAtomically(StringRef path,
                             llvm::function_ref<void(raw_ostream &)> write) {
  if (path == "-") {
    write(llvm::outs());
    return mlir::success();
  }
  loom::tempcleanup::add((path + ".tmp").str());
  if (std::string msg = loom::writeFileAtomically(path, write); !msg.empty())
    return fail(msg), failure();
  return mlir::success();
}

/// The phases to run, [first, last], from compileFrom/compileTo and emit;
/// refuses options that cannot work (non-zero exit code).
int Compilation::checkFlags() {
  constexpr const char *kPhaseList = "import, raise, quantize, shard, "
                                     "pipeline, partition, lower, bundle";
  std::optional<loom::Phase> to = loom::parsePhase(o.compileTo);
  if (!to)
    return fail("unknown phase '" + o.compileTo +
                    "' for --compile-to; expected one of: " + kPhaseList,
                2);
  last = *to;
  first = loom::Phase::Import;
  if (!o.emit.empty() && o.emit != "plan")
    return fail("--emit=" + o.emit + ": unknown; expected plan or plan-html");
  if (o.emit == "plan") {
    // The plan is the output: stop after the pipeline phase (which adds
    // the stages to the planner's JSON when the mesh has 'pp').
    last = loom::Phase::Pipeline;
    if (o.output == "-")
      return fail("--emit=plan writes JSON to a file: give -o plan.json");
  }
  if (!o.compileFrom.empty()) {
    std::optional<loom::Phase> from = loom::parsePhase(o.compileFrom);
    if (!from)
      return fail("unknown phase '" + o.compileFrom +
                      "' for --compile-from; expected one of: " + kPhaseList,
                  2);
    if (*from >= last)
      return fail("--compile-from=" + o.compileFrom + " resumes after phase '" +
                  o.compileFrom +
                  "', so --compile-to must name a later phase (it is '" +
                  loom::getPhaseName(last).str() + "')");
    first = loom::Phase(int(*from) + 1);
    // The plan is made by the shard phase: resuming after it, there is
    // nothing to write (never exit 0 with no plan).
    if (o.emit == "plan" && first > loom::Phase::Shard)
      return fail("--emit=plan: the plan is made in the shard phase, and "
                  "--compile-from=" +
                  o.compileFrom +
                  " resumes after it; plan from the model or from the IR "
                  "of an earlier phase (--compile-to=quantize)");
    if (loom::detectModelKind(o.input) != loom::ModelKind::Mlir)
      return fail("--compile-from: " + o.input +
                  " is not .mlir; resume from the file that "
                  "--compile-to=" +
                  o.compileFrom + " wrote");
    if (first > loom::Phase::Lower && (!o.cpu.empty() || o.portable))
      return fail("--cpu and --portable choose the code of the lower phase; "
                  "--compile-from=" +
                  o.compileFrom + " resumes after it");
  }
  if (o.target != "cpu" && o.target != "cuda" && o.target != "cuda-kernels")
    return fail("--target=" + o.target +
                ": unknown; expected cpu, cuda or cuda-kernels");
  if (o.gpuEmulate && o.target != "cuda")
    return fail("--gpu-emulate compiles a --target=cuda program's kernels "
                "for the CUDA emulator; add --target=cuda (or drop it for "
                "--target=" +
                o.target + ")");
  if (o.gpuMaxTokens != 0 && o.target != "cuda")
    return fail("--gpu-max-tokens bounds the run-time sizes of a "
                "--target=cuda program; drop it for --target=" +
                o.target);
  if (!o.gpuDtype.empty() && o.target != "cuda")
    return fail("--gpu-dtype sets a --target=cuda program's activations on "
                "the device; drop it for --target=" +
                o.target);
  if (!o.gpuDtype.empty() && o.gpuDtype != "f32" && o.gpuDtype != "f16" &&
      o.gpuDtype != "bf16")
    return fail("--gpu-dtype=" + o.gpuDtype +
                ": unknown; expected f32, f16 or bf16");
#ifndef LOOM_HAVE_GPU_TARGET
  if (o.target != "cpu")
    return fail("--target=" + o.target +
                ": this loomc was built without CUDA (configure "
                "with nvcc on PATH or -DLOOM_ENABLE_CUDA=ON)");
#endif
  loom::QKernelTuning tuning;
  std::string error;
  if (!loom::isQMatmulMode(o.qmatmul))
    return fail("--qmatmul=" + o.qmatmul +
                ": unknown; expected f32, i8, i8x3 or dequant");
  if (!loom::parseQKernelTuning(o.qmmTile, o.qmmPrefetch, tuning, error))
    return fail("--" + error);
  if (!o.weightDtype.empty()) {
    if (o.weightDtype != "f32" && o.weightDtype != "f16" &&
        o.weightDtype != "bf16")
      return fail("--weight-dtype=" + o.weightDtype +
                  ": unknown; expected f32, f16 or bf16");
    if (loom::detectModelKind(o.input) != loom::ModelKind::HuggingFace)
      return fail("--weight-dtype applies to a Hugging Face config planned "
                  "without its weights (a folder with config.json, or the "
                  "config.json); " +
                  o.input + " gives its weights' types");
  }
  if (o.microbatches < 0)
    return fail("--microbatches=" + Twine(o.microbatches) +
                ": give at least 1");
  if (o.contextLimit < 0)
    return fail("--context-limit=" + Twine(o.contextLimit) +
                ": must be a positive number of tokens");
  return 0;
}

/// Reads the input: an importer, or the .mlir of an earlier phase.
OwningOpRef<ModuleOp> Compilation::importModel(MLIRContext &context,
                                               llvm::SourceMgr &sourceMgr) {
  std::string error;
  OwningOpRef<ModuleOp> result;
  const std::string &input = o.input;
  loom::ModelKind kind = loom::detectModelKind(input);
  loom::LlmImportOptions llmOptions;
  llmOptions.contextLimit = o.contextLimit;
  // A plan (--emit=plan and its picture) reads no weight byte: a config
  // alone or a GGUF header plans. Any other output needs the weights (an
  // IR without them could not become a bundle), so a truncated file or a
  // folder without safetensors stays an error that names the fix.
  llmOptions.weightsOptional = StringRef(o.emit).starts_with("plan");
  llmOptions.weightDtype = o.weightDtype;
  if (o.contextLimit > 0 && kind != loom::ModelKind::Gguf &&
      kind != loom::ModelKind::HuggingFace) {
    fail("--context-limit applies to GGUF and Hugging Face models (it sets "
         "llm.model's context_length)");
    return {};
  }
  [[maybe_unused]] auto notBuilt =
      [&](StringRef what) -> OwningOpRef<ModuleOp> {
    fail(input + ": the " + what +
         " importer is not built in this version of Loom");
    return {};
  };
  switch (kind) {
  case loom::ModelKind::Mlir: {
    auto file = openInputFile(input, &error);
    if (!file)
      return fail(error), nullptr;
    if (auto crash = loom::findParserCrashers(file->getBuffer(), input))
      return fail(*crash), nullptr;
    sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
    // Diagnostics were written by the handler.
    return parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  case loom::ModelKind::Onnx:
#ifdef LOOM_HAVE_ONNX_IMPORT
    result = loom::importOnnx(&context, input, error);
    break;
#else
    return notBuilt("ONNX");
#endif
  case loom::ModelKind::Gguf:
#ifdef LOOM_HAVE_LLAMA_IMPORT
    result = loom::importGguf(&context, input, error, llmOptions);
    break;
#else
    return notBuilt("GGUF");
#endif
  case loom::ModelKind::HuggingFace:
#ifdef LOOM_HAVE_LLAMA_IMPORT
    result = loom::importHuggingFace(&context, input, error, llmOptions);
    break;
#else
    return notBuilt("Hugging Face");
#endif
  case loom::ModelKind::Unknown:
    fail(input + ": unknown model kind; give a .mlir, .onnx or .gguf "
                 "file, or a directory with config.json");
    return {};
  }
  if (!result)
    return fail(error), nullptr;
  if (failed(verify(*result))) {
    fail(input + ": the imported module does not verify (an "
                 "importer bug; please report it)");
    return {};
  }
  return result;
}

/// Says when an LLM imported for a plan has no weight bytes (a config
/// alone, a GGUF header), so that a mistyped folder is not taken for one
/// with its weights.
void Compilation::noteWeightsWithoutStorage() {
  loom::ModelKind kind = loom::detectModelKind(o.input);
  if (kind != loom::ModelKind::HuggingFace && kind != loom::ModelKind::Gguf)
    return;
  llvm::StringSet<> names;
  module->walk([&](loom::WeightOp w) {
    if (!w.getSource())
      names.insert(w.getName());
  });
  if (!names.empty())
    diag << o.toolName << ": note: " << o.input
         << " has no weight data: " << names.size()
         << " weights are planned as typed references without storage\n";
}

/// The pipelines' options; creates the stage directory of a bundle and
/// names the files that the phases write for it.
int Compilation::setUpOutputs() {
  options.mesh = o.mesh;
  if (StringRef(o.mesh).ends_with(".json")) {
    options.mesh.clear();
    options.meshJson = o.mesh;
  }
  options.device = o.device;
  options.memoryLimitGiB = o.memoryLimit;
  options.shardPasses = o.shardPasses;
  options.stages = o.stages;
  options.microbatches = o.microbatches > 0 ? o.microbatches : 1;
  options.pipelineVerbose = o.verbose;
  options.lower = {o.quantInterleave, o.qmatmul,     !o.noGemm,
                   o.qmmTile,         o.qmmPrefetch, !o.noOutlineLayers};
  if (o.emit == "plan") {
    options.planFile = o.output;
    options.planSummary = o.planSummary;
    // A plan is asked for: without a mesh (none given, none in the
    // program) it is the plan on one device, said so, not no plan at all.
    if (options.mesh.empty() && options.meshJson.empty() &&
        module->getOps<loom::MeshOp>().empty()) {
      options.mesh = "dp=1";
      if (o.planSummary)
        diag << o.toolName
             << ": note: no --mesh: planning on one device (mesh dp=1); "
                "give --mesh or --devices N to plan on more\n";
    }
  }
  out = o.output;
  while (out.size() > 1 && llvm::sys::path::is_separator(out.back()))
    out.pop_back();
  SmallString<256> base(o.input == "-" ? std::string(".") : o.input);
  if (o.input != "-")
    llvm::sys::path::remove_filename(base);
  baseDir = base.empty() ? "." : base.str().str();
  model = o.input == "-" ? "model" : llvm::sys::path::stem(o.input).str();
  // Files that the phases write for a bundle (the plan, the quantized
  // weights, cubins) are staged beside it, laid out as in the bundle, and
  // moved in by writeBundle; whatever is left (a failed compile) goes.
  if (o.emit.empty() && last == loom::Phase::Bundle) {
    if (o.output == "-")
      return fail("a bundle is a directory; give it with -o out/");
    // Temporaries of runs that died without cleaning up (SIGKILL, power
    // loss) go first; this run's are removed on a signal as well.
    loom::tempcleanup::removeStale(out);
    stageDir = out + ".stage-" + std::to_string(::getpid());
    loom::tempcleanup::add(stageDir);
    loom::tempcleanup::add(out + ".tmp-" + std::to_string(::getpid()));
    llvm::sys::fs::remove_directories(stageDir);
    if (std::error_code ec = llvm::sys::fs::create_directories(stageDir))
      return fail("cannot create '" + stageDir + "': " + ec.message());
    options.planFile = stageDir + "/plan.json";
    options.planSummary = o.verbose;
  }
  options.quant = o.quant;
  options.quantActivations = o.quantAct;
  if (o.quant.empty())
    return 0;
  // The quantized blocks go to one file: quantFile; else inside the
  // bundle (staged as weights/quant.bin), named relative to the bundle by
  // the manifest and by the report in it; else beside the output.
  options.quantFile = o.quantFile;
  options.quantReport = o.quantReport;
  options.quantSkip = o.quantSkip;
  options.quantRules = o.quantRules;
  options.baseDir = baseDir;
  options.quantVerbose = o.verbose;
  if (o.quantFile.empty() && !stageDir.empty()) {
    if (std::error_code ec =
            llvm::sys::fs::create_directories(stageDir + "/weights"))
      return fail("cannot create '" + stageDir + "/weights': " + ec.message());
    options.quantFile = stageDir + "/" + loom::kBundleQuantFile;
    options.quantFileName = loom::kBundleQuantFile;
    if (options.quantReport.empty()) {
      options.quantReport = stageDir + "/" + loom::kBundleQuantReport;
    } else {
      // A report outside the bundle names the file where it ends up.
      SmallString<256> dest(out);
      llvm::sys::fs::make_absolute(dest);
      llvm::sys::path::remove_dots(dest, /*remove_dot_dot=*/true);
      llvm::sys::path::append(dest, loom::kBundleQuantFile);
      options.quantFileName = dest.str().str();
    }
    return 0;
  }
  if (options.quantFile.empty())
    options.quantFile = out == "-" ? model + ".qweights" : out + ".qweights";
  if (options.quantReport.empty())
    options.quantReport = options.quantFile + ".report.json";
  return 0;
}

/// --target=cuda: what the whole-program GPU lowering does not build yet,
/// refused by name before it runs (docs/GPU.md, "loomc --target=cuda").
bool Compilation::checkCudaProgram() {
  loom::MeshInfo mesh;
  std::string error;
  if (!loom::collectMesh(*module, o.mesh, mesh, error))
    return fail(o.input + ": " + error), false;
  // A mesh's ranks run on GPUs (loom-run --backend cuda: NCCL, or ranks
  // sharing one device), their collectives as loom_rt_* calls on device
  // buffers (loom-gpu-sync-collectives). Pipeline stages are not: their
  // boundaries are the executor's host arrays between stage entries, never
  // tried with device programs.
  for (size_t a = 0; a < mesh.axes.size(); ++a)
    if (mesh.axes[a] == "pp" && mesh.shape[a] > 1)
      return fail("--target=cuda: the mesh has pipeline stages (pp=" +
                  Twine(mesh.shape[a]) +
                  "), which are not built for CUDA yet; use data, tensor, "
                  "sequence or expert axes, or compile for the CPU "
                  "(--target=cpu)"),
             false;
  return true;
}

/// --target=cuda: the lower phase for one CUDA device instead of the CPU's
/// (passes/Gpu), then its memory plan per entry (printed with -v and
/// recorded in the manifest).
bool Compilation::lowerForCuda(TimingScope &timing) {
#ifdef LOOM_HAVE_GPU_TARGET
  if (!checkCudaProgram())
    return false;
  loom::GpuLowerPipelineOptions gpu;
  gpu.cublas = !o.noGemm;
  if (o.gpuEmulate)
    gpu.format = "emu";
  // The bound of dynamic dimensions: --gpu-max-tokens, else the model's
  // context (a dynamic size with neither is refused by the pipeline).
  gpu.maxDim = o.gpuMaxTokens;
  if (!o.gpuDtype.empty())
    gpu.activationDtype = o.gpuDtype;
  if (gpu.maxDim < 0)
    return fail("--gpu-max-tokens " + Twine(gpu.maxDim) +
                ": give a positive bound"),
           false;
  if (gpu.maxDim == 0)
    if (auto llm = (*module)->getAttrOfType<DictionaryAttr>("llm.model"))
      if (auto ctx = llm.getAs<IntegerAttr>("context_length");
          ctx && ctx.getInt() > 0)
        gpu.maxDim = ctx.getInt();
  // The toolkit folder is the driver's to find (the passes never read the
  // environment): $CUDA_HOME when set, else `fatbinary` on PATH.
  if (const char *home = std::getenv("CUDA_HOME"))
    gpu.toolkit = home;
  PassManager pm(module->getContext());
  loom::buildGpuLowerPassPipeline(pm, gpu);
  pm.enableTiming(timing);
  if (failed(pm.run(*module)))
    return false;
  gpuTarget.device = "cuda";
  if (!o.gpuEmulate)
    gpuTarget.chips = gpu.chips;
  gpuTarget.format = gpu.format;
  for (auto f : module->getOps<LLVM::LLVMFuncOp>()) {
    auto peak = f->getAttrOfType<IntegerAttr>(loom::kGpuPeakBytesAttr);
    // (The C interface wrapper inherits the attributes.)
    if (!peak || f.getName().starts_with("_mlir_ciface_"))
      continue;
    auto attr = [&](StringRef name) {
      auto a = f->getAttrOfType<IntegerAttr>(name);
      return a ? a.getInt() : int64_t(0);
    };
    loom::GpuTargetInfo::Plan plan{f.getName().str(),
                                   peak.getInt(),
                                   attr(loom::kGpuUploadBytesAttr),
                                   attr(loom::kGpuResidentBytesAttr),
                                   attr(loom::kGpuStateBytesPerPositionAttr),
                                   attr(loom::kGpuMaxDimAttr),
                                   attr(loom::kGpuWorkspaceBytesAttr)};
    if (o.verbose) {
      diag << o.toolName << ": --target=cuda: memory plan of '" << plan.entry
           << "': peak " << plan.peakBytes << " device bytes ("
           << plan.workspaceBytes << " workspace, " << plan.residentBytes
           << " weights resident, " << plan.uploadBytes
           << " inputs uploaded per call into the workspace";
      if (plan.stateBytesPerPosition)
        diag << "; KV cache resident: " << plan.stateBytesPerPosition
             << " bytes per context position, sized at load";
      diag << ")";
      if (plan.maxDim > 0)
        diag << " at the bound " << plan.maxDim
             << " of every dynamic input dimension ("
             << (o.gpuMaxTokens > 0 ? "--gpu-max-tokens"
                                    : "the model's context_length")
             << ")";
      if (o.gpuEmulate)
        diag << ", kernels for the host (--gpu-emulate)\n";
      else
        diag << ", chips " << llvm::join(gpu.chips, ",") << "\n";
    }
    gpuTarget.memoryPlan.push_back(std::move(plan));
  }
  return true;
#else
  return fail("--target=cuda: this loomc was built without CUDA"), false;
#endif
}

/// What the lower phase needs from the driver first: the quantized
/// matmuls' GPU kernels (--target=cuda-kernels), the CPU in loom.target,
/// and ir/program.mlir, the loom program as it enters the phase.
bool Compilation::beginLowering() {
#ifdef LOOM_HAVE_GPU_TARGET
  if (o.target == "cuda-kernels" && last == loom::Phase::Bundle) {
    // Staged for the bundle's cuda/ folder.
    std::string error, cubinDir = stageDir + "/cuda";
    if (llvm::sys::fs::create_directories(cubinDir))
      return fail("cannot create '" + cubinDir + "'"), false;
    auto cubins = loom::gpu::emitQMatmulCubins(*module, {"sm_80", "sm_90"},
                                               cubinDir, &error);
    if (!cubins)
      return fail("--target=cuda-kernels: " + error), false;
    if (o.verbose || cubins->empty())
      diag << o.toolName << ": --target=cuda-kernels: " << cubins->size()
           << " cubin(s)" << (cubins->empty() ? " (no quantized matmuls)" : "")
           << "\n";
  }
#endif
  if (cpuTarget)
    (*module)->setAttr(loom::LoomDialect::kTargetAttrName, cpuTarget);
  if (last == loom::Phase::Bundle) {
    llvm::raw_string_ostream os(programIR);
    module->print(os);
  }
  return true;
}

/// The bundle phase: the library from the lowered module, and the manifest
/// from what the lower phase recorded on it.
bool Compilation::emitBundle(TimingScope &timing) {
  std::vector<loom::EntryInfo> entries;
  loom::MeshInfo mesh;
  loom::LlmInfo llm;
  std::string error;
  if (!loom::collectMesh(*module, o.mesh, mesh, error) ||
      !loom::collectEntries(*module, baseDir, entries, error) ||
      !loom::collectLlm(*module, baseDir, llm, error))
    return fail(o.input + ": " + error), false;
  loom::CpuEmitOptions emit;
  emit.optLevel = std::min(3u, o.optLevel);
  emit.threads = o.jobs;
  emit.largeFunction = o.largeFunction;
  emit.largeFunctionOptLevel = o.largeFunctionOpt;
  // --target=cuda: the library is host code launching device work.
  emit.vectorize = o.target != "cuda";
  emit.timing = &timing;
  emit.timeLLVMPasses = o.timeLLVMPasses;
  emit.verbose = o.verbose;
  loom::CpuTargetInfo target;
  bool ok = loom::writeBundle(
      o.output, model, mesh, entries, programIR,
      [&](const std::string &soPath, std::string &err) {
        return loom::emitSharedLibrary(*module, soPath, emit, err, &target);
      },
      stageDir, error, &target, llm,
      gpuTarget.device.empty() ? nullptr : &gpuTarget);
  if (!ok)
    return fail(error), false;
  if (o.verbose)
    diag << o.toolName << ": wrote bundle " << o.output << " ("
         << mesh.numRanks() << " ranks)\n";
  return true;
}

/// Runs one phase: its registered pass pipeline, or the driver's part.
bool Compilation::runPhase(loom::Phase p, TimingScope &root) {
  if (!loom::isPhaseBuilt(p)) {
    if (p == last || (p == loom::Phase::Quantize && !o.quant.empty())) {
      fail("phase '" + loom::getPhaseName(p) +
           "' is not built yet in this version of Loom" +
           (p == last ? "; stop earlier with --compile-to"
                      : "; it is needed by the options given") +
           " (see README.md, status table)");
      return false;
    }
    if (o.verbose)
      diag << o.toolName << ": skipping phase '" << loom::getPhaseName(p)
           << "' (not built yet): the program runs as written\n";
    return true;
  }
  TimingScope timing = root.nest(("phase " + loom::getPhaseName(p)).str());
  if (p == loom::Phase::Lower && !beginLowering())
    return false;
  if (p == loom::Phase::Bundle)
    return emitBundle(timing);
  if (p == loom::Phase::Lower && o.target == "cuda")
    return lowerForCuda(timing);
  if (!loom::isPassPhase(p))
    return true;
  if (p == loom::Phase::Shard && o.beforeShard &&
      !o.beforeShard(module->getOperation(), diag))
    return false;
  PassManager pm(module->getContext());
  std::string error;
  if (failed(loom::buildPhasePipeline(pm, p, options, error)))
    return fail(error), false;
  pm.enableTiming(timing);
  return succeeded(pm.run(*module));
}

void registerDialects(DialectRegistry &registry) {
  registry.insert<loom::LoomDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
#ifdef LOOM_HAVE_GPU_TARGET
  loom::gpu::registerGpuTargetDialects(registry);
#endif
}

int Compilation::run() {
  if (int rc = checkFlags())
    return rc;
  if (failed(loadPlugins(o.plugins, diag, o.toolName)))
    return 1;
  noteRetiredEnvironment(diag, o.toolName);
  DialectRegistry registry;
  registerDialects(registry);
  MLIRContext context(registry);
  // The module dies before its context (it is a member of this object).
  llvm::scope_exit dropModule([&] { module = nullptr; });
  // Diagnostics name the place and the fix; no IR dumps for user errors.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  // Every diagnostic, with its location (and the source line of a .mlir
  // input), goes to the caller's stream.
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context, diag);
  // -v: where compile time goes, per phase and pass (at the end).
  DefaultTimingManager timing;
  timing.setEnabled(o.verbose);
  TimingScope root = timing.getRootScope();
  TimingScope importing = root.nest("phase import");
  if (!(module = importModel(context, sourceMgr)))
    return 1;
  importing.stop();
  noteWeightsWithoutStorage();
  // The CPU the code is for (loom.target, set by the lower phase): --cpu,
  // --portable, else the input's own loom.target, else the host.
  std::string error;
  if (!o.cpu.empty() || o.portable ||
      !(*module)->hasAttr(loom::LoomDialect::kTargetAttrName))
    if (!(cpuTarget =
              loom::resolveCpuTarget(&context, o.cpu, o.portable, error)))
      return fail(error);
  llvm::scope_exit removeStage([&] {
    if (!stageDir.empty())
      llvm::sys::fs::remove_directories(stageDir);
  });
  if (int rc = setUpOutputs())
    return rc;
  for (loom::Phase p : loom::kAllPhases)
    if (p >= first && p <= last && !runPhase(p, root))
      return 1;
  if (!o.emit.empty() || last == loom::Phase::Bundle)
    return 0; // the planner wrote the plan, or the bundle is written
  if (o.irText) {
    llvm::raw_string_ostream os(*o.irText);
    module->print(os);
    return 0;
  }
  return failed(
      writeAtomically(o.output, [&](raw_ostream &os) { module->print(os); }));
}

/// The plan of --emit=plan-html: the input itself when it is a plan JSON
/// (a bundle's plan.json, an earlier --emit=plan), else a compile with
/// --emit=plan into a temporary file.
int readOrCompilePlan(const CompileOptions &o, raw_ostream &diag,
                      llvm::json::Value &plan) {
  auto fail = [&](const Twine &message) {
    diag << o.toolName << ": " << message << "\n";
    return 1;
  };
  auto readJson = [&](StringRef path) -> std::optional<llvm::json::Value> {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buffer)
      return fail("cannot read '" + path + "': " + buffer.getError().message()),
             std::nullopt;
    auto value = llvm::json::parse((*buffer)->getBuffer());
    if (!value)
      return fail(path + ": not JSON (" + llvm::toString(value.takeError()) +
                  ")"),
             std::nullopt;
    return std::move(*value);
  };
  if (StringRef(o.input).ends_with(".json") &&
      llvm::sys::fs::is_regular_file(o.input) &&
      llvm::sys::path::filename(o.input) != "config.json") {
    std::optional<llvm::json::Value> value = readJson(o.input);
    if (!value)
      return 1;
    if (isPlanJson(*value)) {
      plan = std::move(*value);
      return 0;
    }
    // Not a plan: a model's configuration, compiled below.
  }
  SmallString<128> tmp;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("loom-plan", "json", tmp))
    return fail("cannot create a temporary file for the plan: " + ec.message());
  loom::tempcleanup::add(tmp.str().str());
  loom::tempcleanup::add((tmp + ".tmp").str());
  llvm::scope_exit removeTmp([&] { llvm::sys::fs::remove(tmp); });
  CompileOptions planOptions = o;
  planOptions.emit = "plan";
  planOptions.output = tmp.str().str();
  if (int rc = Compilation(planOptions, diag).run())
    return rc;
  uint64_t size = 0;
  if (llvm::sys::fs::file_size(tmp, size) || size == 0)
    return fail(o.input + ": no plan was made: the planner plans on a mesh; "
                          "give one with --mesh (e.g. --mesh tp=2)");
  std::optional<llvm::json::Value> value = readJson(tmp);
  if (!value)
    return 1;
  plan = std::move(*value);
  return 0;
}

/// --emit=plan-html: the plan drawn as one self-contained HTML page, with
/// the measured schedule of --trace-overlay beside the prediction.
int emitPlanHtml(const CompileOptions &o, raw_ostream &diag) {
  std::optional<llvm::json::Value> trace;
  if (!o.traceOverlay.empty()) {
    llvm::json::Value value = nullptr;
    std::string error;
    if (!readTraceFiles(o.traceOverlay, value, error)) {
      diag << o.toolName << ": --trace-overlay: " << error << "\n";
      return 1;
    }
    trace = std::move(value);
  }
  llvm::json::Value plan = nullptr;
  if (int rc = readOrCompilePlan(o, diag, plan))
    return rc;
  std::string html = renderPlanHtml(plan, trace);
  // "-": standard output; a file: written to a temporary and renamed.
  if (llvm::Error e = llvm::writeToOutput(o.output, [&](raw_ostream &os) {
        os << html;
        return llvm::Error::success();
      })) {
    diag << o.toolName << ": cannot write '" << o.output
         << "': " << llvm::toString(std::move(e)) << "\n";
    return 1;
  }
  return 0;
}
} // namespace

Outcome compile(const CompileOptions &options, raw_ostream &diag) {
  if (options.devices != 0) {
    // --devices N: the layout search picks the mesh, then compile with it.
    CompileOptions chosen = options;
    int64_t microbatches = 0;
    chosen.mesh = chooseMeshForDevices(options, diag, diag, microbatches);
    if (chosen.mesh.empty())
      return diag.flush(), Outcome{1};
    chosen.devices = 0;
    // The pipeline phase plans the schedule the search costed.
    chosen.microbatches = microbatches;
    return compile(chosen, diag);
  }
  Outcome outcome;
  if (options.emit == "plan-html") {
    outcome.exitCode = emitPlanHtml(options, diag);
    diag.flush();
    return outcome;
  }
  if (!options.traceOverlay.empty()) {
    diag << options.toolName
         << ": --trace-overlay draws a run on the plan's picture: give it "
            "with --emit=plan-html\n";
    outcome.exitCode = 1;
    return outcome;
  }
  Compilation c(options, diag);
  outcome.exitCode = c.run();
  diag.flush();
  return outcome;
}

void printPhases(raw_ostream &os) {
  os << "Phases (loomc --compile-to=<phase> stops after one, "
        "--compile-from=<phase> resumes after one):\n";
  for (loom::Phase p : loom::kAllPhases)
    os << llvm::formatv("  {0,-10} {1}{2}\n", loom::getPhaseName(p),
                        loom::getPhaseSummary(p),
                        loom::isPhaseBuilt(p) ? "" : "  [not built yet]");
}

void registerMLIRCommandLineOptions() {
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
}

} // namespace loom::driver
