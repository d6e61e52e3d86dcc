//===- CpuTarget.cpp - loom IR to a native shared library -----------------===//

#include "lib/Target/CpuTarget.h"

#include "loom/Support/OutputFile.h"
#include "loom/runtime/CpuFeatures.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"

using namespace mlir;

namespace loom {

/// Finds a C compiler driver to link shared objects with.
static std::string findLinker() {
  for (const char *name : {"cc", "gcc", "clang-22", "clang"}) {
    if (auto path = llvm::sys::findProgramByName(name))
      return *path;
  }
  return {};
}

/// The features of loom/runtime/CpuFeatures.h that the target machine's
/// subtarget (its CPU and feature string together) has.
static void recordCpuTarget(const llvm::TargetMachine &tm,
                            CpuTargetInfo &info) {
  info.cpu = tm.getTargetCPU().str();
  info.features.clear();
  const llvm::MCSubtargetInfo *sti = tm.getMCSubtargetInfo();
  if (!sti || !tm.getTargetTriple().isX86())
    return;
  for (const char *name : {
#define LOOM_FEATURE_NAME(llvmName, gccName) llvmName,
           LOOM_X86_CPU_FEATURES(LOOM_FEATURE_NAME)
#undef LOOM_FEATURE_NAME
       })
    if (sti->checkFeatures(std::string("+") + name))
      info.features.push_back(name);
}

/// A target machine for the host's triple: `cpu` with `features` (LLVM's
/// "+name,-name" form) or, with `cpu` empty, the host CPU and its features.
static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(StringRef cpu, const llvm::SubtargetFeatures &features,
                    unsigned optLevel) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  if (!cpu.empty()) {
    builder->setCPU(cpu.str());
    builder->getFeatures() = features;
  }
  builder->setRelocationModel(llvm::Reloc::PIC_);
  builder->setCodeGenOptLevel(optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                            : llvm::CodeGenOptLevel::Default);
  auto tm = builder->createTargetMachine();
  if (tm && !cpu.empty() && !(*tm)->getMCSubtargetInfo()->isCPUStringValid(cpu))
    return llvm::createStringError(
        "not a CPU that LLVM knows for " + (*tm)->getTargetTriple().str() +
        " (e.g. x86-64-v2, x86-64-v3, haswell, skylake-avx512, znver3; "
        "`llc -mcpu=help` lists them)");
  return tm;
}

CpuTargetAttr resolveCpuTarget(MLIRContext *ctx, StringRef cpu, bool portable,
                               std::string &error) {
  StringRef name = !cpu.empty() ? cpu : portable ? "x86-64-v2" : "";
  auto tm = createTargetMachine(name, llvm::SubtargetFeatures(), 3);
  if (!tm) {
    error = (cpu.empty() ? std::string("the host CPU: ")
                         : "--cpu=" + cpu.str() + ": ") +
            llvm::toString(tm.takeError());
    return {};
  }
  CpuTargetInfo info;
  recordCpuTarget(**tm, info);
  Builder b(ctx);
  SmallVector<Attribute> features;
  for (const std::string &f : info.features)
    features.push_back(b.getStringAttr(f));
  return CpuTargetAttr::get(ctx, info.cpu, b.getArrayAttr(features));
}

namespace {

/// One piece of the module, optimised and compiled on its own thread.
struct ModulePart {
  llvm::SmallVector<char, 0> bitcode; ///< in its own LLVMContext later
  std::string objPath;
  unsigned optLevel = 3;
  unsigned functions = 0;
  uint64_t instructions = 0;
  uint64_t largestFunction = 0;
  std::string error;
};

/// Runs LLVM's optimisation pipeline at `optLevel` for `tm`, with LLVM's
/// per-pass timing report when `timePasses` (one thread only).
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm, unsigned optLevel,
                    bool vectorize, bool timePasses) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassInstrumentationCallbacks pic;
  llvm::TimePassesHandler timer(timePasses);
  timer.registerCallbacks(pic);
  // CalledValuePropagation only attaches !callees metadata to indirect
  // calls, which generated code does not make, and its solver grows with
  // the calls' argument counts times the layer count: on SmolLM2's 30
  // outlined layers it was half of the O3 pipeline (0.87 of 1.66 s in
  // `opt -O3`, 0.01 s for 2 layers; docs/BENCHMARKS.md).
  pic.registerShouldRunOptionalPassCallback(
      [](llvm::StringRef pass, llvm::Any) {
        return pass != "CalledValuePropagationPass";
      });
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = optLevel > 1;
  tuning.LoopVectorization = optLevel > 1 && vectorize;
  tuning.SLPVectorization = optLevel > 1 && vectorize;
  llvm::PassBuilder pb(&tm, tuning, std::nullopt, &pic);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 0   ? llvm::OptimizationLevel::O0
                                  : optLevel == 1 ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = optLevel == 0
                                    ? pb.buildO0DefaultPipeline(level)
                                    : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
  if (timePasses)
    timer.print();
}

/// Emits `m` as an object file at `objPath`.
bool emitObject(llvm::Module &m, llvm::TargetMachine &tm,
                const std::string &objPath, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(objPath, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write " + objPath + ": " + ec.message();
    return false;
  }
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return false;
  }
  pm.run(m);
  error = loom::closeChecked(os, objPath);
  return error.empty();
}

/// Splits `m` into at most `n` modules of about equal size for parallel
/// code generation. Every function that is not internal, and every internal
/// function of `kDuplicateBelow` instructions or more (made hidden:
/// visible to the other parts, not outside the library), is defined in
/// exactly one part, largest first into the smallest part. Smaller internal
/// functions and internal constants are copied into each part that uses
/// them, so that they stay internal and inlinable (the quantized kernels,
/// the C-interface wrappers). Other globals are defined in part 0.
std::vector<std::unique_ptr<llvm::Module>> splitModule(llvm::Module &m,
                                                       unsigned n) {
  constexpr uint64_t kDuplicateBelow = 2000;
  auto isCopied = [&](const llvm::GlobalValue *gv) {
    if (!gv->hasLocalLinkage())
      return false;
    if (auto *f = llvm::dyn_cast<llvm::Function>(gv))
      return f->getInstructionCount() < kDuplicateBelow;
    auto *v = llvm::dyn_cast<llvm::GlobalVariable>(gv);
    return v && v->isConstant();
  };
  unsigned unnamed = 0;
  for (llvm::GlobalValue &gv : m.global_values()) {
    if (gv.isDeclaration() || isCopied(&gv))
      continue;
    if (gv.hasLocalLinkage()) {
      gv.setLinkage(llvm::GlobalValue::ExternalLinkage);
      gv.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
    if (!gv.hasName())
      gv.setName("__loom_split_" + llvm::Twine(unnamed++));
  }
  // Largest first into the least loaded part.
  std::vector<llvm::Function *> roots;
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && !isCopied(&f))
      roots.push_back(&f);
  llvm::stable_sort(roots, [](llvm::Function *a, llvm::Function *b) {
    return a->getInstructionCount() > b->getInstructionCount();
  });
  n = std::max<unsigned>(1, std::min<size_t>(n, roots.size()));
  std::vector<uint64_t> load(n, 0);
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> owner;
  for (llvm::Function *f : roots) {
    unsigned part = std::min_element(load.begin(), load.end()) - load.begin();
    owner[f] = part;
    load[part] += f->getInstructionCount() + 1;
  }
  std::vector<std::unique_ptr<llvm::Module>> parts;
  for (unsigned i = 0; i < n; ++i) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(m, map, [&](const llvm::GlobalValue *gv) {
          if (isCopied(gv))
            return true;
          auto it = owner.find(gv);
          return it != owner.end() ? it->second == i : i == 0;
        });
    // Copies that this part does not use.
    for (bool changed = true; changed;) {
      changed = false;
      for (llvm::GlobalValue &gv :
           llvm::make_early_inc_range(part->global_values())) {
        gv.removeDeadConstantUsers();
        if (gv.hasLocalLinkage() && gv.use_empty()) {
          gv.eraseFromParent();
          changed = true;
        }
      }
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

/// The optimisation level of a part: `optLevel`, except for a part made of
/// one function of `largeFunction` instructions or more (an entry point
/// with every layer inline: straight-line code in which O3's loop passes
/// find nothing, and whose quadratic cost grows with the layer count).
unsigned partOptLevel(const ModulePart &part, const CpuEmitOptions &options) {
  if (options.largeFunction && part.largestFunction >= options.largeFunction)
    return std::min(options.optLevel, options.largeFunctionOptLevel);
  return options.optLevel;
}

/// Optimises and compiles one part in its own LLVMContext.
void compilePart(ModulePart &part, StringRef cpu,
                 const llvm::SubtargetFeatures &features,
                 const CpuEmitOptions &options, TimingScope &timing) {
  llvm::LLVMContext context;
  auto m = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(StringRef(part.bitcode.data(), part.bitcode.size()),
                            "part"),
      context);
  if (!m) {
    part.error = "cannot read a module part: " + llvm::toString(m.takeError());
    return;
  }
  auto tm = createTargetMachine(cpu, features, part.optLevel);
  if (!tm) {
    part.error = llvm::toString(tm.takeError());
    return;
  }
  TimingScope opt = timing.nest("LLVM optimisation (sum over parts)");
  optimizeModule(**m, **tm, part.optLevel, options.vectorize,
                 options.timeLLVMPasses);
  opt.stop();
  TimingScope codegen = timing.nest("LLVM codegen (sum over parts)");
  // The legacy pass manager of codegen reports through LLVM's global
  // timers.
  llvm::TimePassesIsEnabled = options.timeLLVMPasses;
  emitObject(**m, **tm, part.objPath, part.error);
  if (options.timeLLVMPasses)
    llvm::reportAndResetTimings();
}

} // namespace

bool emitSharedLibrary(ModuleOp module, const std::string &soPath,
                       const CpuEmitOptions &options, std::string &error,
                       CpuTargetInfo *info) {
  TimingScope timing =
      options.timing ? options.timing->nest("emit library") : TimingScope();
  // The CPU and features the lowering assumed: exactly the target's
  // features of the vocabulary on, the others off.
  auto target =
      module->getAttrOfType<CpuTargetAttr>(LoomDialect::kTargetAttrName);
  std::string cpu = target ? target.getCpu().str() : "x86-64-v2";
  llvm::SubtargetFeatures features;
  if (target && llvm::Triple(llvm::sys::getProcessTriple()).isX86())
    for (const char *name : {
#define LOOM_FEATURE_NAME(llvmName, gccName) llvmName,
             LOOM_X86_CPU_FEATURES(LOOM_FEATURE_NAME)
#undef LOOM_FEATURE_NAME
         })
      features.AddFeature(name, target.hasFeature(name));
  auto tm = createTargetMachine(cpu, features, options.optLevel);
  if (!tm) {
    error = "loom.target: CPU '" + cpu + "': " + llvm::toString(tm.takeError());
    return false;
  }
  CpuTargetInfo generated;
  recordCpuTarget(**tm, generated);
  if (target) {
    std::vector<std::string> wanted;
    for (Attribute f : target.getFeatures())
      wanted.push_back(cast<StringAttr>(f).getValue().str());
    llvm::sort(wanted);
    std::vector<std::string> got = generated.features;
    llvm::sort(got);
    if (wanted != got) {
      error = "loom.target: the features given for CPU '" + cpu +
              "' are not consistent (LLVM derives [" +
              llvm::join(generated.features, ", ") +
              "] from them: a feature needs another one); list them as "
              "`loomc --cpu` records them";
      return false;
    }
  }
  if (info)
    *info = generated;

  TimingScope translate = timing.nest("translate to LLVM IR");
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "loom");
  if (!llvmModule) {
    error = "cannot translate the lowered module to LLVM IR";
    return false;
  }
  llvmModule->setDataLayout((*tm)->createDataLayout());
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  translate.stop();

  // Parts optimised and compiled in parallel, one object file each.
  unsigned threads = options.threads
                         ? options.threads
                         : llvm::hardware_concurrency().compute_thread_count();
  if (options.timeLLVMPasses)
    threads = 1; // LLVM's pass timers are global
  std::vector<ModulePart> parts;
  {
    TimingScope split = timing.nest("split module");
    std::vector<std::unique_ptr<llvm::Module>> modules =
        splitModule(*llvmModule, std::max(1u, threads));
    for (auto [i, m] : llvm::enumerate(modules)) {
      ModulePart part;
      part.objPath = soPath + ".part" + std::to_string(i) + ".o.tmp";
      for (llvm::Function &f : *m) {
        if (f.isDeclaration())
          continue;
        ++part.functions;
        part.instructions += f.getInstructionCount();
        part.largestFunction =
            std::max<uint64_t>(part.largestFunction, f.getInstructionCount());
      }
      part.optLevel = partOptLevel(part, options);
      llvm::raw_svector_ostream os(part.bitcode);
      llvm::WriteBitcodeToFile(*m, os);
      parts.push_back(std::move(part));
    }
    llvmModule.reset();
  }
  llvm::scope_exit removeObjects([&] {
    for (const ModulePart &part : parts)
      llvm::sys::fs::remove(part.objPath);
  });
  {
    TimingScope parallel = timing.nest(
        "optimise + codegen (" + std::to_string(parts.size()) + " parts, " +
        std::to_string(std::min<size_t>(threads, parts.size())) + " threads)");
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(threads));
    for (ModulePart &part : parts)
      pool.async([&, p = &part] {
        compilePart(*p, cpu, features, options, parallel);
      });
    pool.wait();
  }
  if (options.verbose)
    for (auto [i, part] : llvm::enumerate(parts))
      llvm::errs() << llvm::formatv(
          "loomc: code part {0}: {1} functions, {2} instructions (largest "
          "{3}), O{4}\n",
          i, part.functions, part.instructions, part.largestFunction,
          part.optLevel);
  for (const ModulePart &part : parts)
    if (!part.error.empty()) {
      error = part.error;
      return false;
    }

  TimingScope link = timing.nest("link");
  std::string linker = findLinker();
  if (linker.empty()) {
    error = "no C compiler driver (cc, gcc or clang) found to link the "
            "shared library; install gcc";
    return false;
  }
  std::string tmpSo = soPath + ".tmp";
  SmallVector<StringRef> args{linker, "-shared", "-o", tmpSo};
  for (const ModulePart &part : parts)
    args.push_back(part.objPath);
  args.push_back("-lm");
  std::string linkError;
  int rc = llvm::sys::ExecuteAndWait(linker, args, std::nullopt, {}, 0, 0,
                                     &linkError);
  if (rc != 0) {
    error = "linking " + soPath + " with " + linker + " failed" +
            (linkError.empty() ? "" : ": " + linkError);
    llvm::sys::fs::remove(tmpSo);
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpSo, soPath)) {
    error = "cannot rename " + tmpSo + ": " + ec.message();
    return false;
  }
  return true;
}

} // namespace loom
