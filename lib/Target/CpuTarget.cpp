//===- CpuTarget.cpp - loom IR to a native shared library -----------------===//

#include "lib/Target/CpuTarget.h"

#include "loom/runtime/CpuFeatures.h"
#include "passes/Lowering/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;

namespace loom {

namespace {
/// Generated code allocates through loom_rt_malloc (abi.h) instead of
/// malloc: the same memory (freed with free), but an allocation that fails
/// fails the job with its size instead of returning null to code that
/// would write through it. Renames the `malloc` declaration that
/// finalize-memref-to-llvm made, and so every call of it.
struct CheckedMallocPass
    : PassWrapper<CheckedMallocPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckedMallocPass)
  StringRef getArgument() const override { return "loom-checked-malloc"; }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto malloc = module.lookupSymbol<LLVM::LLVMFuncOp>("malloc");
    if (!malloc)
      return;
    StringAttr checked = StringAttr::get(&getContext(), "loom_rt_malloc");
    if (module.lookupSymbol(checked)) {
      malloc.emitError("both malloc and loom_rt_malloc are declared");
      return signalPassFailure();
    }
    if (failed(SymbolTable::replaceAllSymbolUses(malloc, checked, module)))
      return signalPassFailure();
    SymbolTable::setSymbolName(malloc, checked);
  }
};
} // namespace

void buildCpuLoweringPipeline(OpPassManager &pm,
                              const ConvertLoomToLinalgPassOptions &lower) {
  // CSE runs on loom ops only: after lowering it would merge the
  // to_buffer ops of runtime calls and hide later reads from the
  // bufferization analysis (see ConvertLoomToLinalg.cpp, bufferOf).
  pm.addPass(createCSEPass());
  pm.addPass(createConvertLoomToLinalgPass(lower));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLinalgElementwiseOpFusionPass());
  pm.addPass(createApproximateMathPass());
  pm.addPass(createCanonicalizerPass());

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createConvertBufferizationToMemRefPass());

  // Parallel dimensions become scf.parallel; the outermost big ones (and
  // the quantized kernels' row blocks) run on the rank's threads
  // (loom_rt_parallel_for), the rest serially as plain loops.
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createOutlineParallelLoopsPass());
  // expand-strided-metadata creates affine.apply: lower affine after it.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createPackEntryPointsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(std::make_unique<CheckedMallocPass>());
}

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
  builder->setCodeGenOptLevel(optLevel >= 3
                                  ? llvm::CodeGenOptLevel::Aggressive
                                  : llvm::CodeGenOptLevel::Default);
  auto tm = builder->createTargetMachine();
  if (tm && !cpu.empty() &&
      !(*tm)->getMCSubtargetInfo()->isCPUStringValid(cpu))
    return llvm::createStringError(
        "not a CPU that LLVM knows for " + (*tm)->getTargetTriple().str() +
        " (e.g. x86-64-v2, x86-64-v3, haswell, skylake-avx512, znver3; "
        "`llc -mcpu=help` lists them)");
  return tm;
}

CpuTargetAttr resolveCpuTarget(MLIRContext *ctx, StringRef cpu,
                               bool portable, std::string &error) {
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

bool emitSharedLibrary(ModuleOp module, const std::string &soPath,
                       const CpuEmitOptions &options, std::string &error,
                       CpuTargetInfo *info) {
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
    error =
        "loom.target: CPU '" + cpu + "': " + llvm::toString(tm.takeError());
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

  auto optimize = makeOptimizingTransformer(options.optLevel,
                                            /*sizeLevel=*/0, tm->get());
  if (llvm::Error err = optimize(llvmModule.get())) {
    error = "LLVM optimisation failed: " + llvm::toString(std::move(err));
    return false;
  }

  // Object file next to the library, then link.
  std::string objPath = soPath + ".o.tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objPath, ec, llvm::sys::fs::OF_None);
    if (ec) {
      error = "cannot write " + objPath + ": " + ec.message();
      return false;
    }
    llvm::legacy::PassManager pm;
    if ((*tm)->addPassesToEmitFile(pm, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
      error = "the target cannot emit object files";
      return false;
    }
    pm.run(*llvmModule);
  }
  std::string linker = findLinker();
  if (linker.empty()) {
    error = "no C compiler driver (cc, gcc or clang) found to link the "
            "shared library; install gcc";
    return false;
  }
  std::string tmpSo = soPath + ".tmp";
  SmallVector<StringRef> args{linker, "-shared", "-o", tmpSo, objPath,
                              "-lm"};
  std::string linkError;
  int rc = llvm::sys::ExecuteAndWait(linker, args, std::nullopt, {}, 0, 0,
                                     &linkError);
  llvm::sys::fs::remove(objPath);
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
