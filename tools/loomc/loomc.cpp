//===- loomc.cpp - the Loom compiler driver -------------------------------===//
//
// Walks the phases import -> raise -> quantize -> shard -> pipeline ->
// partition -> lower -> bundle and stops after --compile-to. Outputs are
// written to a temporary name and renamed when complete, so a failed run
// never leaves a half-written file behind.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"
#include "lib/Bundle/Bundle.h"
#include "lib/Import/Import.h"
#include "lib/Import/MlirInputGuard.h"
#include "lib/Target/CpuTarget.h"
#include "passes/Lowering/Passes.h"
#include "passes/Lowering/QuantKernels.h"
#include "passes/Pipelines.h"
#include "tools/loomc/TempCleanup.h"
#ifdef LOOM_HAVE_GPU_TARGET
#include "lib/Target/GpuTarget/GpuTarget.h"
#endif

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory loomcCategory("loomc options");

cl::opt<std::string> inputFilename(cl::Positional,
                                   cl::desc("<model: .mlir | .onnx | .gguf | "
                                            "config.json>"),
                                   cl::init("-"), cl::cat(loomcCategory));
cl::opt<std::string> outputFilename("o", cl::desc("Output file or bundle "
                                                  "directory"),
                                    cl::value_desc("path"), cl::init("-"),
                                    cl::cat(loomcCategory));
cl::opt<std::string>
    compileTo("compile-to",
              cl::desc("Stop after this phase: import, raise, quantize, "
                       "shard, pipeline, partition, lower, bundle"),
              cl::value_desc("phase"), cl::init("bundle"),
              cl::cat(loomcCategory));
cl::opt<std::string> meshSpec("mesh",
                              cl::desc("Device mesh, e.g. dp=2,tp=4, or a "
                                       "JSON spec file"),
                              cl::value_desc("spec"), cl::cat(loomcCategory));
cl::opt<std::string> quantSpec("quant",
                               cl::desc("Weight quantization, e.g. int4:32"),
                               cl::value_desc("spec"), cl::cat(loomcCategory));
cl::opt<std::string> quantSkip(
    "quant-skip",
    cl::desc("Weights kept in float under --quant: comma-separated globs, "
             "'default' (embeddings and the LM head) or 'none'"),
    cl::value_desc("globs"), cl::init("default"), cl::cat(loomcCategory));
cl::opt<std::string> quantRules(
    "quant-rules",
    cl::desc("Per-tensor schemes under --quant, first match wins: "
             "'GLOB=SCHEME;GLOB=skip' (e.g. 'blk.*.ffn_down*=int8:32')"),
    cl::value_desc("rules"), cl::cat(loomcCategory));
cl::opt<std::string> quantAct(
    "quant-act",
    cl::desc("Activations of the quantized matmul kernels: f32 (accurate, "
             "default), int8 (quantized per block, integer dot products) or "
             "int8x3 (three int8 levels per block: about f32's accuracy, "
             "integer dot products)"),
    cl::value_desc("f32|int8|int8x3"), cl::init("f32"),
    cl::cat(loomcCategory));
cl::opt<std::string> quantFile(
    "quant-file",
    cl::desc("File the quantized weights are written to (default: "
             "weights/quant.bin inside a bundle, else <-o>.qweights)"),
    cl::value_desc("path"), cl::cat(loomcCategory));
cl::opt<std::string> quantReport(
    "quant-report",
    cl::desc("JSON error report per quantized tensor (default: "
             "weights/quant.report.json inside a bundle, else "
             "<quant-file>.report.json)"),
    cl::value_desc("path"), cl::cat(loomcCategory));
cl::opt<bool> quantInterleave(
    "quant-interleave",
    cl::desc("Give the weights of int8-activation quantized matmuls the "
             "interleaved layout, made by loom-run at load (default on; "
             "--quant-interleave=0: keep the rows as stored)"),
    cl::init(true), cl::cat(loomcCategory));
cl::list<std::string> plugins("plugin",
                              cl::desc("Load a pass plugin (shared library); "
                                       "run its passes with --shard-passes"),
                              cl::value_desc("path"), cl::cat(loomcCategory));
cl::opt<std::string> shardPasses(
    "shard-passes",
    cl::desc("Passes run at the start of the shard phase, before the "
             "planner, e.g. 'loom-pin-attention-heads{axis=tp}'"),
    cl::value_desc("pipeline"), cl::cat(loomcCategory));
cl::opt<std::string> deviceName(
    "device",
    cl::desc("Device of every rank for the cost model: a100-40gb, "
             "a100-80gb, h100-sxm, h200, cpu"),
    cl::value_desc("name"), cl::init("cpu"), cl::cat(loomcCategory));
cl::opt<double> memoryLimit(
    "memory-limit",
    cl::desc("Memory per device in GiB for the planner (default: the "
             "device's capacity)"),
    cl::value_desc("GiB"), cl::init(0), cl::cat(loomcCategory));
cl::opt<std::string> targetName(
    "target",
    cl::desc("cpu (default), or cuda: also compile the quantized matmul "
             "kernels to cubins for sm_80 and sm_90 into the bundle's cuda/ "
             "folder (docs/GPU.md)"),
    cl::value_desc("name"), cl::init("cpu"), cl::cat(loomcCategory));
cl::opt<std::string> emitWhat(
    "emit",
    cl::desc("'plan': stop after the shard phase, write the plan as JSON to "
             "-o and print its summary"),
    cl::value_desc("what"), cl::cat(loomcCategory));
cl::opt<bool> listPhases("list-phases", cl::desc("Print the phases and exit"),
                         cl::cat(loomcCategory));
cl::opt<bool> verbose("v", cl::desc("Say what each phase does"),
                      cl::cat(loomcCategory));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimisation level (0-3)"),
                           cl::init(3), cl::cat(loomcCategory));
cl::opt<int64_t> contextLimit(
    "context-limit",
    cl::desc("Longest context the compiled LLM serves (GGUF / Hugging Face "
             "input): recorded as llm.model's context_length; a model with "
             "a sliding attention window compiles when N <= the window"),
    cl::value_desc("N"), cl::init(0), cl::cat(loomcCategory));
cl::opt<bool> portable("portable",
                       cl::desc("Generate code for any x86-64-v2 CPU instead "
                                "of the host CPU"),
                       cl::cat(loomcCategory));
cl::opt<std::string> qmatmulMode(
    "qmatmul",
    cl::desc("How every quantized matmul lowers, overriding --quant-act: "
             "f32, i8, i8x3 (generated kernels) or dequant (dequantize + "
             "f32 GEMM, bit-exact with the dequantized weights)"),
    cl::value_desc("mode"), cl::cat(loomcCategory));
cl::opt<bool> noGemm("no-gemm",
                     cl::desc("Generate every matmul instead of calling the "
                              "runtime's GEMM (A/B measurements, debugging)"),
                     cl::cat(loomcCategory));
cl::opt<bool> noOutlineLayers(
    "no-outline-layers",
    cl::desc("Keep repeated layers inline in each entry point instead of "
             "one function per distinct layer (A/B measurements)"),
    cl::cat(loomcCategory));
cl::opt<std::string> qmmTile(
    "qmm-tile",
    cl::desc("Register tile of the quantized matmul kernels, MRxNR2xNR1 "
             "(tuning)"),
    cl::value_desc("tile"), cl::Hidden, cl::cat(loomcCategory));
cl::opt<std::string> qmmPrefetch(
    "qmm-prefetch",
    cl::desc("Software prefetch of the quantized matmul kernels: bytes "
             "ahead, 0: none, -N: N tiles ahead (tuning)"),
    cl::value_desc("bytes"), cl::Hidden, cl::cat(loomcCategory));
cl::opt<std::string> cpuName(
    "cpu",
    cl::desc("Generate code for this CPU (LLVM's names: x86-64-v3, haswell, "
             "skylake-avx512, znver3...) instead of the host CPU; the "
             "manifest records it and its features, and loom-run refuses "
             "a host that lacks one"),
    cl::value_desc("name"), cl::cat(loomcCategory));

/// Writes `text` to `path` through a temporary file renamed into place.
LogicalResult writeAtomically(StringRef path,
                              llvm::function_ref<void(raw_ostream &)> write) {
  if (path == "-") {
    write(llvm::outs());
    return success();
  }
  std::string error;
  loom::tempcleanup::add((path + ".tmp").str());
  auto out = openOutputFile((path + ".tmp").str(), &error);
  if (!out) {
    llvm::errs() << "loomc: cannot write '" << path << "': " << error << "\n";
    return failure();
  }
  write(out->os());
  out->os().flush();
  if (out->os().has_error()) {
    llvm::errs() << "loomc: error writing '" << path << ".tmp'\n";
    return failure();
  }
  out->keep();
  out.reset();
  if (std::error_code ec = llvm::sys::fs::rename(path + ".tmp", path)) {
    llvm::errs() << "loomc: cannot rename '" << path << ".tmp' to '" << path
                 << "': " << ec.message() << "\n";
    return failure();
  }
  return success();
}

/// The environment variables that once steered code generation: say which
/// flag replaces each one that is set (the compiler no longer reads them).
void noteRetiredEnvironment() {
  static constexpr std::pair<const char *, const char *> kRetired[] = {
      {"LOOM_QMATMUL", "--qmatmul=f32|i8|i8x3|dequant"},
      {"LOOM_NO_GEMM", "--no-gemm"},
      {"LOOM_QMATMUL_VNNI", "--cpu=NAME (a CPU without avx512vnni)"},
      {"LOOM_QMATMUL_AVX2", "--cpu=NAME or --portable (a CPU without avx2)"},
      {"LOOM_QMM_TILE", "--qmm-tile=MRxNR2xNR1"},
      {"LOOM_QMM_PREFETCH", "--qmm-prefetch=BYTES"}};
  for (auto [var, flag] : kRetired)
    if (std::getenv(var))
      llvm::errs() << "loomc: note: " << var
                   << " is ignored (code generation does not read the "
                      "environment); use "
                   << flag << "\n";
}

void printPhases(raw_ostream &os) {
  os << "Phases (loomc --compile-to=<phase> stops after one):\n";
  for (loom::Phase p : loom::kAllPhases)
    os << llvm::formatv("  {0,-10} {1}{2}\n", loom::getPhaseName(p),
                        loom::getPhaseSummary(p),
                        loom::isPhaseBuilt(p) ? "" : "  [not built yet]");
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::AddExtraVersionPrinter(
      [](raw_ostream &os) { os << "Loom compiler (loomc)\n"; });
  cl::SetVersionPrinter(
      [](raw_ostream &os) { os << "loomc (Loom) 0.1.0, MLIR 22\n"; });
  std::string overview;
  llvm::raw_string_ostream ov(overview);
  ov << "Loom compiler driver\n\n"
        "  loomc model.mlir --compile-to=import -o model.loom.mlir\n"
        "  loomc model.gguf --mesh tp=2 -o out/\n\n";
  printPhases(ov);
  cl::HideUnrelatedOptions(loomcCategory);
  cl::ParseCommandLineOptions(argc, argv, overview);

  if (listPhases) {
    printPhases(llvm::outs());
    return 0;
  }
  std::optional<loom::Phase> last = loom::parsePhase(compileTo);
  if (!last) {
    llvm::errs() << "loomc: unknown phase '" << compileTo
                 << "' for --compile-to; expected one of: import, raise, "
                    "quantize, shard, pipeline, partition, lower, bundle\n";
    return 2;
  }
  for (const std::string &path : plugins) {
    auto plugin = PassPlugin::load(path);
    if (!plugin) {
      llvm::errs() << "loomc: --plugin " << path << ": "
                   << llvm::toString(plugin.takeError()) << "\n";
      return 1;
    }
    plugin->registerPassRegistryCallbacks();
  }
  if (targetName != "cpu" && targetName != "cuda") {
    llvm::errs() << "loomc: --target=" << targetName
                 << ": unknown; expected cpu or cuda\n";
    return 1;
  }
#ifndef LOOM_HAVE_GPU_TARGET
  if (targetName == "cuda") {
    llvm::errs() << "loomc: --target=cuda: this loomc was built without CUDA "
                    "(configure with nvcc on PATH or -DLOOM_ENABLE_CUDA=ON)\n";
    return 1;
  }
#endif
  noteRetiredEnvironment();
  {
    loom::QKernelTuning tuning;
    std::string error;
    if (!loom::isQMatmulMode(qmatmulMode)) {
      llvm::errs() << "loomc: --qmatmul=" << qmatmulMode
                   << ": unknown; expected f32, i8, i8x3 or dequant\n";
      return 1;
    }
    if (!loom::parseQKernelTuning(qmmTile, qmmPrefetch, tuning, error)) {
      llvm::errs() << "loomc: --" << error << "\n";
      return 1;
    }
  }
  if (contextLimit < 0) {
    llvm::errs() << "loomc: --context-limit=" << contextLimit
                 << ": must be a positive number of tokens\n";
    return 1;
  }
  loom::tempcleanup::install();
  if (!emitWhat.empty() && emitWhat != "plan") {
    llvm::errs() << "loomc: --emit=" << emitWhat
                 << ": unknown; the one supported value is 'plan'\n";
    return 1;
  }

  DialectRegistry registry;
  registry.insert<loom::LoomDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
#ifdef LOOM_HAVE_GPU_TARGET
  loom::gpu::registerGpuTargetDialects(registry);
#endif
  MLIRContext context(registry);
  // Diagnostics name the place and the fix; no IR dumps for user errors.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();

  std::string error;
  OwningOpRef<ModuleOp> module;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  loom::ModelKind kind = loom::detectModelKind(inputFilename);
  loom::LlmImportOptions llmOptions;
  llmOptions.contextLimit = contextLimit;
  if (contextLimit > 0 && kind != loom::ModelKind::Gguf &&
      kind != loom::ModelKind::HuggingFace) {
    llvm::errs() << "loomc: --context-limit applies to GGUF and Hugging Face "
                    "models (it sets llm.model's context_length)\n";
    return 1;
  }
  auto notBuilt = [&](StringRef what) {
    llvm::errs() << "loomc: " << inputFilename << ": the " << what
                 << " importer is not built in this version of Loom\n";
    return 1;
  };
  switch (kind) {
  case loom::ModelKind::Mlir: {
    auto file = openInputFile(inputFilename, &error);
    if (!file) {
      llvm::errs() << "loomc: " << error << "\n";
      return 1;
    }
    if (auto crash = loom::findParserCrashers(file->getBuffer(),
                                              inputFilename)) {
      llvm::errs() << "loomc: " << *crash << "\n";
      return 1;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return 1;
    break;
  }
  case loom::ModelKind::Onnx:
#ifdef LOOM_HAVE_ONNX_IMPORT
    module = loom::importOnnx(&context, inputFilename, error);
    break;
#else
    return notBuilt("ONNX");
#endif
  case loom::ModelKind::Gguf:
#ifdef LOOM_HAVE_LLAMA_IMPORT
    module = loom::importGguf(&context, inputFilename, error, llmOptions);
    break;
#else
    return notBuilt("GGUF");
#endif
  case loom::ModelKind::HuggingFace:
#ifdef LOOM_HAVE_LLAMA_IMPORT
    module = loom::importHuggingFace(&context, inputFilename, error,
                                     llmOptions);
    break;
#else
    return notBuilt("Hugging Face");
#endif
  case loom::ModelKind::Unknown:
    llvm::errs() << "loomc: " << inputFilename
                 << ": unknown model kind; give a .mlir, .onnx or .gguf "
                    "file, or a directory with config.json\n";
    return 1;
  }
  if (!module) {
    llvm::errs() << "loomc: " << error << "\n";
    return 1;
  }
  if (failed(verify(*module))) {
    llvm::errs() << "loomc: " << inputFilename
                 << ": the imported module does not verify (an importer "
                    "bug; please report it)\n";
    return 1;
  }
  // The CPU the code is for, recorded in the IR (loom.target) at the lower
  // phase: --cpu, --portable, else the input's own loom.target, else the
  // host.
  loom::CpuTargetAttr cpuTarget;
  if (!cpuName.empty() || portable ||
      !(*module)->hasAttr(loom::LoomDialect::kTargetAttrName)) {
    cpuTarget = loom::resolveCpuTarget(&context, cpuName, portable, error);
    if (!cpuTarget) {
      llvm::errs() << "loomc: " << error << "\n";
      return 1;
    }
  }

  loom::PipelineOptions options;
  options.mesh = meshSpec;
  if (StringRef(meshSpec).ends_with(".json")) {
    options.mesh.clear();
    options.meshJson = meshSpec;
  }
  options.device = deviceName;
  options.memoryLimitGiB = memoryLimit;
  options.shardPasses = shardPasses;
  bool emitPlan = emitWhat == "plan";
  if (emitPlan) {
    // The plan is the output: stop after the shard phase.
    last = loom::Phase::Shard;
    options.planFile = outputFilename == "-" ? "" : outputFilename.getValue();
    options.planSummary = true;
    if (outputFilename == "-") {
      llvm::errs() << "loomc: --emit=plan writes JSON to a file: give -o "
                      "plan.json\n";
      return 1;
    }
  }
  std::string out = outputFilename;
  while (out.size() > 1 && llvm::sys::path::is_separator(out.back()))
    out.pop_back();
  // Files that the phases write for a bundle (the plan, the quantized
  // weights, cubins) are staged beside it, laid out as in the bundle, and
  // moved in by writeBundle; whatever is left (a failed compile) goes.
  std::string stageDir;
  llvm::scope_exit removeStage([&] {
    if (!stageDir.empty())
      llvm::sys::fs::remove_directories(stageDir);
  });
  if (!emitPlan && *last == loom::Phase::Bundle) {
    if (outputFilename == "-") {
      llvm::errs() << "loomc: a bundle is a directory; give it with -o "
                      "out/\n";
      return 1;
    }
    // Temporaries of runs that died without cleaning up (SIGKILL, power
    // loss) go first; this run's are removed on a signal as well.
    loom::tempcleanup::removeStale(out);
    stageDir = out + ".stage-" + std::to_string(::getpid());
    loom::tempcleanup::add(stageDir);
    loom::tempcleanup::add(out + ".tmp-" + std::to_string(::getpid()));
    llvm::sys::fs::remove_directories(stageDir);
    if (std::error_code ec = llvm::sys::fs::create_directories(stageDir)) {
      llvm::errs() << "loomc: cannot create '" << stageDir
                   << "': " << ec.message() << "\n";
      return 1;
    }
    options.planFile = stageDir + "/plan.json";
    options.planSummary = verbose;
  }
  options.quant = quantSpec;
  SmallString<256> baseDir(inputFilename == "-" ? std::string(".")
                                                : std::string(inputFilename));
  if (inputFilename != "-")
    llvm::sys::path::remove_filename(baseDir);
  if (baseDir.empty())
    baseDir = ".";
  std::string model =
      inputFilename == "-" ? "model"
                           : llvm::sys::path::stem(inputFilename).str();
  options.quantActivations = quantAct.getValue();
  if (!quantSpec.empty()) {
    // The quantized blocks go to one file: --quant-file; else inside the
    // bundle (staged as weights/quant.bin), named relative to the bundle by
    // the manifest and by the report in it; else beside the output.
    options.quantFile = quantFile;
    options.quantReport = quantReport;
    if (quantFile.empty() && !stageDir.empty()) {
      if (std::error_code ec =
              llvm::sys::fs::create_directories(stageDir + "/weights")) {
        llvm::errs() << "loomc: cannot create '" << stageDir
                     << "/weights': " << ec.message() << "\n";
        return 1;
      }
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
    } else {
      if (options.quantFile.empty())
        options.quantFile =
            out == "-" ? model + ".qweights" : out + ".qweights";
      if (options.quantReport.empty())
        options.quantReport = options.quantFile + ".report.json";
    }
    options.quantSkip = quantSkip;
    options.quantRules = quantRules;
    options.baseDir = baseDir.str().str();
    options.quantVerbose = verbose;
  }
  std::vector<loom::EntryInfo> entries;
  loom::MeshInfo mesh;
  loom::LlmInfo llm;
  std::string programIR;

  for (loom::Phase p : loom::kAllPhases) {
    bool required = p == *last ||
                    (p == loom::Phase::Quantize && !quantSpec.empty());
    if (!loom::isPhaseBuilt(p)) {
      if (required) {
        llvm::errs() << "loomc: phase '" << loom::getPhaseName(p)
                     << "' is not built yet in this version of Loom"
                     << (p == *last ? "; stop earlier with --compile-to"
                                    : "; it is needed by the options given")
                     << " (see README.md, status table)\n";
        return 1;
      }
      if (verbose)
        llvm::errs() << "loomc: skipping phase '" << loom::getPhaseName(p)
                     << "' (not built yet): the program runs as written\n";
      continue;
    }
    if (p != loom::Phase::Import && p != loom::Phase::Lower &&
        p != loom::Phase::Bundle) {
      PassManager pm(&context);
      if (failed(loom::buildPhasePipeline(pm, p, options, error))) {
        llvm::errs() << "loomc: " << error << "\n";
        return 1;
      }
      if (failed(pm.run(*module)))
        return 1;
    } else if (p == loom::Phase::Lower) {
#ifdef LOOM_HAVE_GPU_TARGET
      if (targetName == "cuda" && *last == loom::Phase::Bundle) {
        // The quantized matmuls' GPU kernels, staged for the bundle's
        // cuda/ folder.
        std::string cubinDir = stageDir + "/cuda";
        if (llvm::sys::fs::create_directories(cubinDir)) {
          llvm::errs() << "loomc: cannot create '" << cubinDir << "'\n";
          return 1;
        }
        auto cubins = loom::gpu::emitQMatmulCubins(*module, {"sm_80", "sm_90"},
                                                   cubinDir, &error);
        if (!cubins) {
          llvm::errs() << "loomc: --target=cuda: " << error << "\n";
          return 1;
        }
        if (verbose || cubins->empty())
          llvm::errs() << "loomc: --target=cuda: " << cubins->size()
                       << " cubin(s)"
                       << (cubins->empty() ? " (no quantized matmuls)" : "")
                       << "\n";
      }
#endif
      if (cpuTarget)
        (*module)->setAttr(loom::LoomDialect::kTargetAttrName, cpuTarget);
      PassManager prepare(&context);
      prepare.addPass(loom::createPrepareEntryPointsPass(
          loom::PrepareEntryPointsPassOptions{quantInterleave, qmatmulMode}));
      if (failed(prepare.run(*module)))
        return 1;
      if (*last == loom::Phase::Bundle) {
        if (!loom::collectMesh(*module, meshSpec, mesh, error) ||
            !loom::collectEntries(*module, baseDir.str().str(), entries,
                                  error) ||
            !loom::collectLlm(*module, baseDir.str().str(), llm, error)) {
          llvm::errs() << "loomc: " << inputFilename << ": " << error
                       << "\n";
          return 1;
        }
        llvm::raw_string_ostream os(programIR);
        module->print(os);
      }
      PassManager pm(&context);
      loom::ConvertLoomToLinalgPassOptions lower;
      lower.qmatmul = qmatmulMode;
      lower.gemm = !noGemm;
      lower.qmmTile = qmmTile;
      lower.qmmPrefetch = qmmPrefetch;
      loom::buildCpuLoweringPipeline(pm, lower, !noOutlineLayers);
      if (failed(pm.run(*module)))
        return 1;
    } else if (p == loom::Phase::Bundle) {
      loom::CpuEmitOptions emit;
      emit.optLevel = std::min(3u, unsigned(optLevel));
      loom::CpuTargetInfo target;
      bool ok = loom::writeBundle(
          outputFilename, model, mesh, entries, programIR,
          [&](const std::string &soPath, std::string &err) {
            return loom::emitSharedLibrary(*module, soPath, emit, err,
                                           &target);
          },
          stageDir, error, &target, llm);
      if (!ok) {
        llvm::errs() << "loomc: " << error << "\n";
        return 1;
      }
      if (verbose)
        llvm::errs() << "loomc: wrote bundle " << outputFilename << " ("
                     << mesh.numRanks() << " ranks)\n";
    }
    if (p == *last)
      break;
  }

  if (emitPlan)
    return 0; // the planner wrote -o and printed the summary
  if (*last != loom::Phase::Bundle &&
      failed(writeAtomically(outputFilename,
                             [&](raw_ostream &os) { module->print(os); })))
    return 1;
  return 0;
}
