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
#include "mlir/Support/Timing.h"
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
cl::opt<std::string> compileFrom(
    "compile-from",
    cl::desc("Resume after this phase: the input is the .mlir that "
             "--compile-to=<phase> wrote (e.g. --compile-from=partition)"),
    cl::value_desc("phase"), cl::cat(loomcCategory));
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
    cl::desc("Activations of the quantized matmul kernels: auto (default: "
             "int8x3 where the target has integer dot products, AVX2 or "
             "AVX512-VNNI, else f32), f32, int8 (quantized per block, "
             "integer dot products) or int8x3 (three int8 levels per block: "
             "about f32's accuracy, integer dot products)"),
    cl::value_desc("auto|f32|int8|int8x3"), cl::init("auto"),
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
cl::opt<bool> verbose("v", cl::desc("Say what each phase does and where "
                                    "compile time goes"),
                      cl::cat(loomcCategory));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimisation level (0-3)"),
                           cl::init(3), cl::cat(loomcCategory));
cl::opt<unsigned> jobs("j",
                       cl::desc("Threads that optimise and compile the "
                                "generated code in parallel (default: the "
                                "cores available)"),
                       cl::value_desc("N"), cl::init(0),
                       cl::cat(loomcCategory));
cl::opt<uint64_t> largeFunction(
    "large-function",
    cl::desc("Code parts holding a function of this many LLVM instructions "
             "or more are optimised at --large-function-opt (0: never)"),
    cl::value_desc("N"), cl::init(20000), cl::Hidden, cl::cat(loomcCategory));
cl::opt<unsigned> largeFunctionOpt(
    "large-function-opt",
    cl::desc("LLVM optimisation level of large functions' parts"),
    cl::init(2), cl::Hidden, cl::cat(loomcCategory));
cl::opt<bool> timeLLVMPasses(
    "time-llvm-passes",
    cl::desc("LLVM's per-pass timing report of the code generation (one "
             "thread)"),
    cl::Hidden, cl::cat(loomcCategory));
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
cl::opt<bool> noOutlineLayers(
    "no-outline-layers",
    cl::desc("Keep repeated layers inline in each entry point instead of "
             "one function per distinct layer (A/B measurements)"),
    cl::cat(loomcCategory));
cl::opt<bool> noGemm("no-gemm",
                     cl::desc("Generate every matmul instead of calling the "
                              "runtime's GEMM (A/B measurements, debugging)"),
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
  os << "Phases (loomc --compile-to=<phase> stops after one, "
        "--compile-from=<phase> resumes after one):\n";
  for (loom::Phase p : loom::kAllPhases)
    os << llvm::formatv("  {0,-10} {1}{2}\n", loom::getPhaseName(p),
                        loom::getPhaseSummary(p),
                        loom::isPhaseBuilt(p) ? "" : "  [not built yet]");
}

int fail(const Twine &message, int rc = 1) {
  llvm::errs() << "loomc: " << message << "\n";
  return rc;
}

/// The phases to run, [first, last], from --compile-from/--compile-to and
/// --emit; refuses flags that cannot work (non-zero exit code).
int checkFlags(loom::Phase &first, loom::Phase &last) {
  constexpr const char *kPhaseList = "import, raise, quantize, shard, "
                                     "pipeline, partition, lower, bundle";
  std::optional<loom::Phase> to = loom::parsePhase(compileTo);
  if (!to)
    return fail("unknown phase '" + compileTo +
                    "' for --compile-to; expected one of: " + kPhaseList,
                2);
  last = *to;
  first = loom::Phase::Import;
  if (!emitWhat.empty() && emitWhat != "plan")
    return fail("--emit=" + emitWhat +
                ": unknown; the one supported value is 'plan'");
  if (emitWhat == "plan") {
    // The plan is the output: stop after the shard phase.
    last = loom::Phase::Shard;
    if (outputFilename == "-")
      return fail("--emit=plan writes JSON to a file: give -o plan.json");
  }
  if (!compileFrom.empty()) {
    std::optional<loom::Phase> from = loom::parsePhase(compileFrom);
    if (!from)
      return fail("unknown phase '" + compileFrom +
                      "' for --compile-from; expected one of: " + kPhaseList,
                  2);
    if (*from >= last)
      return fail("--compile-from=" + compileFrom + " resumes after phase '" +
                  compileFrom + "', so --compile-to must name a later phase "
                  "(it is '" + loom::getPhaseName(last).str() + "')");
    first = loom::Phase(int(*from) + 1);
    if (loom::detectModelKind(inputFilename) != loom::ModelKind::Mlir)
      return fail("--compile-from: " + inputFilename +
                  " is not .mlir; resume from the file that "
                  "--compile-to=" + compileFrom + " wrote");
    if (first > loom::Phase::Lower && (!cpuName.empty() || portable))
      return fail("--cpu and --portable choose the code of the lower phase; "
                  "--compile-from=" + compileFrom + " resumes after it");
  }
  if (targetName != "cpu" && targetName != "cuda")
    return fail("--target=" + targetName + ": unknown; expected cpu or cuda");
#ifndef LOOM_HAVE_GPU_TARGET
  if (targetName == "cuda")
    return fail("--target=cuda: this loomc was built without CUDA (configure "
                "with nvcc on PATH or -DLOOM_ENABLE_CUDA=ON)");
#endif
  loom::QKernelTuning tuning;
  std::string error;
  if (!loom::isQMatmulMode(qmatmulMode))
    return fail("--qmatmul=" + qmatmulMode +
                ": unknown; expected f32, i8, i8x3 or dequant");
  if (!loom::parseQKernelTuning(qmmTile, qmmPrefetch, tuning, error))
    return fail("--" + error);
  if (contextLimit < 0)
    return fail("--context-limit=" + Twine(int64_t(contextLimit)) +
                ": must be a positive number of tokens");
  return 0;
}

/// Reads the input: an importer, or the .mlir of an earlier phase.
OwningOpRef<ModuleOp> importModel(MLIRContext &context,
                                  llvm::SourceMgr &sourceMgr) {
  std::string error;
  OwningOpRef<ModuleOp> module;
  loom::ModelKind kind = loom::detectModelKind(inputFilename);
  loom::LlmImportOptions llmOptions;
  llmOptions.contextLimit = contextLimit;
  if (contextLimit > 0 && kind != loom::ModelKind::Gguf &&
      kind != loom::ModelKind::HuggingFace) {
    fail("--context-limit applies to GGUF and Hugging Face models (it sets "
         "llm.model's context_length)");
    return {};
  }
  auto notBuilt = [&](StringRef what) -> OwningOpRef<ModuleOp> {
    fail(inputFilename + ": the " + what +
         " importer is not built in this version of Loom");
    return {};
  };
  switch (kind) {
  case loom::ModelKind::Mlir: {
    auto file = openInputFile(inputFilename, &error);
    if (!file)
      return fail(error), nullptr;
    if (auto crash =
            loom::findParserCrashers(file->getBuffer(), inputFilename))
      return fail(*crash), nullptr;
    sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
    // Diagnostics were printed by the handler.
    return parseSourceFile<ModuleOp>(sourceMgr, &context);
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
    module =
        loom::importHuggingFace(&context, inputFilename, error, llmOptions);
    break;
#else
    return notBuilt("Hugging Face");
#endif
  case loom::ModelKind::Unknown:
    fail(inputFilename + ": unknown model kind; give a .mlir, .onnx or .gguf "
                         "file, or a directory with config.json");
    return {};
  }
  if (!module)
    return fail(error), nullptr;
  if (failed(verify(*module))) {
    fail(inputFilename + ": the imported module does not verify (an "
                         "importer bug; please report it)");
    return {};
  }
  return module;
}

/// What the phases share: the module, the pipelines' options, where the
/// files for the bundle are staged.
struct Compilation {
  OwningOpRef<ModuleOp> module;
  loom::PipelineOptions options;
  loom::Phase last = loom::Phase::Bundle;
  std::string out;       ///< -o without trailing separators
  std::string model;     ///< the library's name: the input's stem
  std::string baseDir;   ///< relative weight files are resolved here
  std::string stageDir;  ///< files for the bundle, moved in by writeBundle
  std::string programIR; ///< ir/program.mlir: the IR entering lower
  loom::CpuTargetAttr cpuTarget; ///< set on the module by the lower phase
};

/// The pipelines' options from the flags; creates the stage directory of a
/// bundle and names the files that the phases write for it.
int setUpOutputs(Compilation &c) {
  loom::PipelineOptions &options = c.options;
  options.mesh = meshSpec;
  if (StringRef(meshSpec).ends_with(".json")) {
    options.mesh.clear();
    options.meshJson = meshSpec;
  }
  options.device = deviceName;
  options.memoryLimitGiB = memoryLimit;
  options.shardPasses = shardPasses;
  options.lower = {quantInterleave, qmatmulMode, !noGemm, qmmTile,
                   qmmPrefetch, !noOutlineLayers};
  if (emitWhat == "plan") {
    options.planFile = outputFilename;
    options.planSummary = true;
  }
  c.out = outputFilename;
  while (c.out.size() > 1 && llvm::sys::path::is_separator(c.out.back()))
    c.out.pop_back();
  SmallString<256> baseDir(inputFilename == "-" ? std::string(".")
                                                : std::string(inputFilename));
  if (inputFilename != "-")
    llvm::sys::path::remove_filename(baseDir);
  c.baseDir = baseDir.empty() ? "." : baseDir.str().str();
  c.model = inputFilename == "-" ? "model"
                                 : llvm::sys::path::stem(inputFilename).str();
  // Files that the phases write for a bundle (the plan, the quantized
  // weights, cubins) are staged beside it, laid out as in the bundle, and
  // moved in by writeBundle; whatever is left (a failed compile) goes.
  if (emitWhat.empty() && c.last == loom::Phase::Bundle) {
    if (outputFilename == "-")
      return fail("a bundle is a directory; give it with -o out/");
    // Temporaries of runs that died without cleaning up (SIGKILL, power
    // loss) go first; this run's are removed on a signal as well.
    loom::tempcleanup::removeStale(c.out);
    c.stageDir = c.out + ".stage-" + std::to_string(::getpid());
    loom::tempcleanup::add(c.stageDir);
    loom::tempcleanup::add(c.out + ".tmp-" + std::to_string(::getpid()));
    llvm::sys::fs::remove_directories(c.stageDir);
    if (std::error_code ec = llvm::sys::fs::create_directories(c.stageDir))
      return fail("cannot create '" + c.stageDir + "': " + ec.message());
    options.planFile = c.stageDir + "/plan.json";
    options.planSummary = verbose;
  }
  options.quant = quantSpec;
  options.quantActivations = quantAct.getValue();
  if (quantSpec.empty())
    return 0;
  // The quantized blocks go to one file: --quant-file; else inside the
  // bundle (staged as weights/quant.bin), named relative to the bundle by
  // the manifest and by the report in it; else beside the output.
  options.quantFile = quantFile;
  options.quantReport = quantReport;
  options.quantSkip = quantSkip;
  options.quantRules = quantRules;
  options.baseDir = c.baseDir;
  options.quantVerbose = verbose;
  if (quantFile.empty() && !c.stageDir.empty()) {
    if (std::error_code ec =
            llvm::sys::fs::create_directories(c.stageDir + "/weights"))
      return fail("cannot create '" + c.stageDir + "/weights': " +
                  ec.message());
    options.quantFile = c.stageDir + "/" + loom::kBundleQuantFile;
    options.quantFileName = loom::kBundleQuantFile;
    if (options.quantReport.empty()) {
      options.quantReport = c.stageDir + "/" + loom::kBundleQuantReport;
    } else {
      // A report outside the bundle names the file where it ends up.
      SmallString<256> dest(c.out);
      llvm::sys::fs::make_absolute(dest);
      llvm::sys::path::remove_dots(dest, /*remove_dot_dot=*/true);
      llvm::sys::path::append(dest, loom::kBundleQuantFile);
      options.quantFileName = dest.str().str();
    }
    return 0;
  }
  if (options.quantFile.empty())
    options.quantFile =
        c.out == "-" ? c.model + ".qweights" : c.out + ".qweights";
  if (options.quantReport.empty())
    options.quantReport = options.quantFile + ".report.json";
  return 0;
}

/// What the lower phase needs from the driver first: the quantized
/// matmuls' GPU kernels (--target=cuda), the CPU in loom.target, and
/// ir/program.mlir, the loom program as it enters the phase.
bool beginLowering(Compilation &c) {
#ifdef LOOM_HAVE_GPU_TARGET
  if (targetName == "cuda" && c.last == loom::Phase::Bundle) {
    // Staged for the bundle's cuda/ folder.
    std::string error, cubinDir = c.stageDir + "/cuda";
    if (llvm::sys::fs::create_directories(cubinDir))
      return fail("cannot create '" + cubinDir + "'"), false;
    auto cubins = loom::gpu::emitQMatmulCubins(*c.module, {"sm_80", "sm_90"},
                                               cubinDir, &error);
    if (!cubins)
      return fail("--target=cuda: " + error), false;
    if (verbose || cubins->empty())
      llvm::errs() << "loomc: --target=cuda: " << cubins->size()
                   << " cubin(s)"
                   << (cubins->empty() ? " (no quantized matmuls)" : "")
                   << "\n";
  }
#endif
  if (c.cpuTarget)
    (*c.module)->setAttr(loom::LoomDialect::kTargetAttrName, c.cpuTarget);
  if (c.last == loom::Phase::Bundle) {
    llvm::raw_string_ostream os(c.programIR);
    c.module->print(os);
  }
  return true;
}

/// The bundle phase: the library from the lowered module, and the manifest
/// from what the lower phase recorded on it.
bool emitBundle(Compilation &c, TimingScope &timing) {
  std::vector<loom::EntryInfo> entries;
  loom::MeshInfo mesh;
  loom::LlmInfo llm;
  std::string error;
  if (!loom::collectMesh(*c.module, meshSpec, mesh, error) ||
      !loom::collectEntries(*c.module, c.baseDir, entries, error) ||
      !loom::collectLlm(*c.module, c.baseDir, llm, error))
    return fail(inputFilename + ": " + error), false;
  loom::CpuEmitOptions emit;
  emit.optLevel = std::min(3u, unsigned(optLevel));
  emit.threads = jobs;
  emit.largeFunction = largeFunction;
  emit.largeFunctionOptLevel = largeFunctionOpt;
  emit.timing = &timing;
  emit.timeLLVMPasses = timeLLVMPasses;
  emit.verbose = verbose;
  loom::CpuTargetInfo target;
  bool ok = loom::writeBundle(
      outputFilename, c.model, mesh, entries, c.programIR,
      [&](const std::string &soPath, std::string &err) {
        return loom::emitSharedLibrary(*c.module, soPath, emit, err, &target);
      },
      c.stageDir, error, &target, llm);
  if (!ok)
    return fail(error), false;
  if (verbose)
    llvm::errs() << "loomc: wrote bundle " << outputFilename << " ("
                 << mesh.numRanks() << " ranks)\n";
  return true;
}

/// Runs one phase: its registered pass pipeline, or the driver's part.
bool runPhase(Compilation &c, loom::Phase p, TimingScope &root) {
  if (!loom::isPhaseBuilt(p)) {
    if (p == c.last || (p == loom::Phase::Quantize && !quantSpec.empty())) {
      fail("phase '" + loom::getPhaseName(p) +
           "' is not built yet in this version of Loom" +
           (p == c.last ? "; stop earlier with --compile-to"
                        : "; it is needed by the options given") +
           " (see README.md, status table)");
      return false;
    }
    if (verbose)
      llvm::errs() << "loomc: skipping phase '" << loom::getPhaseName(p)
                   << "' (not built yet): the program runs as written\n";
    return true;
  }
  TimingScope timing = root.nest(("phase " + loom::getPhaseName(p)).str());
  if (p == loom::Phase::Lower && !beginLowering(c))
    return false;
  if (p == loom::Phase::Bundle)
    return emitBundle(c, timing);
  if (!loom::isPassPhase(p))
    return true;
  PassManager pm(c.module->getContext());
  std::string error;
  if (failed(loom::buildPhasePipeline(pm, p, c.options, error)))
    return fail(error), false;
  pm.enableTiming(timing);
  return succeeded(pm.run(*c.module));
}

void registerDialects(DialectRegistry &registry) {
  registry.insert<loom::LoomDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
#ifdef LOOM_HAVE_GPU_TARGET
  loom::gpu::registerGpuTargetDialects(registry);
#endif
}

void parseCommandLine(int argc, char **argv) {
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
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  parseCommandLine(argc, argv);
  if (listPhases)
    return printPhases(llvm::outs()), 0;
  loom::Phase first, last;
  if (int rc = checkFlags(first, last))
    return rc;
  for (const std::string &path : plugins) {
    auto plugin = PassPlugin::load(path);
    if (!plugin)
      return fail("--plugin " + path + ": " +
                  llvm::toString(plugin.takeError()));
    plugin->registerPassRegistryCallbacks();
  }
  noteRetiredEnvironment();
  loom::tempcleanup::install();
  DialectRegistry registry;
  registerDialects(registry);
  MLIRContext context(registry);
  // Diagnostics name the place and the fix; no IR dumps for user errors.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  // `loomc -v`: where compile time goes, per phase and pass (at exit).
  DefaultTimingManager timing;
  timing.setEnabled(verbose);
  TimingScope root = timing.getRootScope();
  Compilation c;
  c.last = last;
  TimingScope importing = root.nest("phase import");
  if (!(c.module = importModel(context, sourceMgr)))
    return 1;
  importing.stop();
  // The CPU the code is for (loom.target, set by the lower phase): --cpu,
  // --portable, else the input's own loom.target, else the host.
  std::string error;
  if (!cpuName.empty() || portable ||
      !(*c.module)->hasAttr(loom::LoomDialect::kTargetAttrName))
    if (!(c.cpuTarget = loom::resolveCpuTarget(&context, cpuName, portable,
                                               error)))
      return fail(error);
  llvm::scope_exit removeStage([&] {
    if (!c.stageDir.empty())
      llvm::sys::fs::remove_directories(c.stageDir);
  });
  if (int rc = setUpOutputs(c))
    return rc;
  for (loom::Phase p : loom::kAllPhases)
    if (p >= first && p <= c.last && !runPhase(c, p, root))
      return 1;
  if (!emitWhat.empty() || c.last == loom::Phase::Bundle)
    return 0; // the planner wrote -o (--emit=plan), or the bundle is written
  return failed(writeAtomically(outputFilename, [&](raw_ostream &os) {
    c.module->print(os);
  }));
}
