//===- GpuTarget.cpp - loom.qmatmul kernels through NVVM to PTX/cubin -----===//
//
// Device-side compilation follows ../shared/design/TOOLCHAIN.md, the recipe
// verified with Debian's MLIR 22:
//   nvvm-attach-target{chip O=3}
//   gpu.module(convert-scf-to-cf, convert-gpu-to-nvvm, canonicalize, cse,
//              reconcile-unrealized-casts)
//   gpu-module-to-binary{format=isa|bin|fatbin}
// `bin` and `fatbin` run ptxas (and fatbinary) found through PATH or
// CUDA_HOME; `isa` needs only LLVM's NVPTX backend.
//
//===----------------------------------------------------------------------===//

#include "lib/Target/GpuTarget/GpuTarget.h"

#include "dialects/Loom/IR/LoomDialect.h"
#include "dialects/Loom/IR/LoomEnums.h"
#include "loom/Support/OutputFile.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "loom-gpu-build-qmatmul-kernels"

using namespace mlir;

namespace loom::gpu {

void registerGpuTargetDialects(DialectRegistry &registry) {
  registry.insert<mlir::gpu::GPUDialect, NVVM::NVVMDialect, LLVM::LLVMDialect,
                  arith::ArithDialect, scf::SCFDialect, memref::MemRefDialect,
                  cf::ControlFlowDialect, func::FuncDialect, math::MathDialect,
                  vector::VectorDialect, loom::LoomDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  // The ConvertToLLVM interfaces that convert-gpu-to-nvvm collects from
  // the loaded dialects (arith, cf, memref, ...).
  registerAllExtensions(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  // #gpu.select_object: how a gpu.binary becomes a global and its module
  // load in the host's LLVM IR (loomc --target=cuda's bundle library).
  mlir::gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

namespace {

bool toElemType(Type t, ElemType &out) {
  if (t.isF32())
    out = ElemType::F32;
  else if (t.isF16())
    out = ElemType::F16;
  else if (t.isBF16())
    out = ElemType::BF16;
  else
    return false;
  return true;
}

} // namespace

std::optional<QMatmulSpec> specFromQMatmul(loom::QMatmulOp op,
                                           std::string *why) {
  auto w = cast<QTensorType>(op.getWeight().getType());
  QuantAttr q = w.getQuant();
  QMatmulSpec s;
  s.format = fromQuantFormat(q.getFormat());
  s.block = q.getBlockSize();
  s.mode = fromQuantMode(q.getMode());
  if (!toElemType(q.getScaleType(), s.scale)) {
    *why = "unsupported scale type";
    return std::nullopt;
  }
  if (!toElemType(op.getInput().getType().getElementType(), s.act)) {
    *why = "activations must be f32 or f16";
    return std::nullopt;
  }
  s.n = w.getShape()[0];
  s.k = w.getShape()[1];
  if (ShapedType::isDynamic(s.n) || ShapedType::isDynamic(s.k)) {
    *why = "the weight shape must be static";
    return std::nullopt;
  }
  std::string err = validate(s);
  if (!err.empty()) {
    *why = err;
    return std::nullopt;
  }
  return s;
}

LogicalResult appendQMatmulKernels(ModuleOp module, ArrayRef<QMatmulSpec> specs,
                                   StringRef name,
                                   const KernelOptions &options) {
  std::string text = emitQMatmulModule(name.str(), specs, options);
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(
      text, module.getContext(), "loom-qmatmul-kernels");
  if (!parsed)
    return module.emitError("internal error: generated qmatmul kernels do "
                            "not parse (a bug in QMatmulKernelGen.cpp)");
  if (SymbolTable::lookupSymbolIn(module, name))
    return module.emitError()
           << "a symbol named '" << name << "' already exists";
  module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  Block &dst = module.getBodyRegion().front();
  for (Operation &op :
       llvm::make_early_inc_range(parsed->getBody()->getOperations()))
    op.moveBefore(&dst, dst.end());
  return mlir::success();
}

//===----------------------------------------------------------------------===//
// loom-gpu-build-qmatmul-kernels
//===----------------------------------------------------------------------===//

namespace {

struct BuildQMatmulKernelsPass
    : PassWrapper<BuildQMatmulKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BuildQMatmulKernelsPass)

  StringRef getArgument() const override {
    return "loom-gpu-build-qmatmul-kernels";
  }
  StringRef getDescription() const override {
    return "Generate gpu.func kernels (GEMV for batch <= 8, tiled above) for "
           "every loom.qmatmul and name them in its loom.gpu_kernel attribute";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry
        .insert<mlir::gpu::GPUDialect, LLVM::LLVMDialect, arith::ArithDialect,
                scf::SCFDialect, memref::MemRefDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::vector<QMatmulSpec> specs;
    bool failedAny = false;
    module.walk([&](loom::QMatmulOp op) {
      std::string why;
      std::optional<QMatmulSpec> spec = specFromQMatmul(op, &why);
      if (!spec) {
        // Diagnostic at the op, saying what to change.
        op.emitError() << "no GPU kernel for this qmatmul: " << why;
        failedAny = true;
        return;
      }
      // `loom.gpu_kernel`, declared and verified by the loom dialect.
      op.setGpuKernel(StringAttr::get(op.getContext(), kernelBaseName(*spec)));
      specs.push_back(*spec);
    });
    if (failedAny)
      return signalPassFailure();
    // Idempotent: kernels built by an earlier run are rebuilt from the ops.
    if (auto old =
            module.lookupSymbol<mlir::gpu::GPUModuleOp>(kQMatmulModuleName))
      old.erase();
    if (specs.empty())
      return;
    if (failed(appendQMatmulKernels(module, specs, kQMatmulModuleName)))
      return signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createBuildQMatmulKernelsPass() {
  return std::make_unique<BuildQMatmulKernelsPass>();
}

void registerGpuTargetPasses() { PassRegistration<BuildQMatmulKernelsPass>(); }

//===----------------------------------------------------------------------===//
// NVVM -> PTX / cubin
//===----------------------------------------------------------------------===//

std::string validateChip(const std::string &chip) {
  unsigned sm = 0;
  if (chip.size() < 5 || chip.compare(0, 3, "sm_") != 0 ||
      StringRef(chip).drop_front(3).rtrim('a').getAsInteger(10, sm) || sm < 70)
    return "unsupported GPU chip '" + chip +
           "': expected sm_70 or newer, e.g. sm_80 (A100) or sm_90 (H100/H200)";
  return "";
}

std::optional<std::map<std::string, std::string>>
compileGpuModules(ModuleOp module, const GpuCompileOptions &options,
                  std::string *error) {
  std::string chipErr = validateChip(options.chip);
  if (!chipErr.empty()) {
    *error = chipErr;
    return std::nullopt;
  }
  if (options.format != "isa" && options.format != "bin" &&
      options.format != "fatbin") {
    *error = "unknown GPU output format '" + options.format +
             "': expected isa (PTX), bin (cubin) or fatbin";
    return std::nullopt;
  }
  MLIRContext *ctx = module.getContext();
  OwningOpRef<ModuleOp> clone(module.clone());

  // Collect diagnostics instead of printing them: the caller decides.
  std::string diags;
  llvm::raw_string_ostream os(diags);
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    os << d.getLocation() << ": " << d.str() << "\n";
    return mlir::success();
  });

  PassManager pm(ctx);
  GpuNVVMAttachTargetOptions attach;
  attach.chip = options.chip;
  attach.optLevel = options.optLevel;
  attach.features = options.features;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  OpPassManager &dev = pm.nest<mlir::gpu::GPUModuleOp>();
  dev.addPass(createSCFToControlFlowPass());
  dev.addPass(createConvertGpuOpsToNVVMOps());
  dev.addPass(createCanonicalizerPass());
  dev.addPass(createCSEPass());
  dev.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions toBinary;
  toBinary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(toBinary));
  if (failed(pm.run(*clone))) {
    *error = "GPU compilation for " + options.chip + " (" + options.format +
             ") failed";
    if (options.format != "isa")
      *error += " (is ptxas on PATH or under $CUDA_HOME/bin?)";
    *error += ":\n" + diags;
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  clone->walk([&](mlir::gpu::BinaryOp bin) {
    for (Attribute a : bin.getObjects())
      if (auto obj = dyn_cast<mlir::gpu::ObjectAttr>(a))
        out[bin.getSymName().str()] = obj.getObject().getValue().str();
  });
  if (out.empty()) {
    *error = "the module has no gpu.module to compile";
    return std::nullopt;
  }
  return out;
}

std::optional<std::vector<std::string>>
emitQMatmulCubins(ModuleOp module, ArrayRef<std::string> chips,
                  StringRef outDir, std::string *error) {
  PassManager pm(module.getContext());
  pm.addPass(createBuildQMatmulKernelsPass());
  OwningOpRef<ModuleOp> work(module.clone());
  if (failed(pm.run(*work))) {
    *error = "building the qmatmul GPU kernels failed";
    return std::nullopt;
  }
  // Name the kernels on the caller's ops too (same walk order).
  SmallVector<StringAttr> names;
  work->walk(
      [&](loom::QMatmulOp op) { names.push_back(op.getGpuKernelAttr()); });
  size_t i = 0;
  module.walk([&](loom::QMatmulOp op) { op.setGpuKernel(names[i++]); });
  std::vector<std::string> written;
  if (names.empty())
    return written;
  for (const std::string &chip : chips) {
    GpuCompileOptions opts;
    opts.chip = chip;
    opts.format = "bin";
    auto objs = compileGpuModules(*work, opts, error);
    if (!objs)
      return std::nullopt;
    for (auto &[name, bytes] : *objs) {
      SmallString<256> path(outDir);
      llvm::sys::path::append(path, name + "." + chip + ".cubin");
      std::error_code ec;
      llvm::raw_fd_ostream f(path, ec, llvm::sys::fs::OF_None);
      if (ec) {
        *error = "cannot write '" + path.str().str() + "': " + ec.message();
        return std::nullopt;
      }
      f << bytes;
      if (std::string msg = loom::closeChecked(f, path); !msg.empty()) {
        *error = msg;
        return std::nullopt;
      }
      written.push_back(path.str().str());
    }
  }
  return written;
}

int cubinSm(StringRef b) {
  // ELF64 little-endian, e_machine EM_CUDA (190); the SM is in e_flags:
  // bits 0-7 for ELF ABI version < 8 (CUDA <= 12.x), bits 8-15 from 8 on.
  if (b.size() < 64 ||
      !b.starts_with("\x7f"
                     "ELF") ||
      b[4] != 2 || b[5] != 1)
    return -1;
  auto u16 = [&](size_t o) {
    return unsigned(uint8_t(b[o])) | unsigned(uint8_t(b[o + 1])) << 8;
  };
  if (u16(18) != 190)
    return -1;
  uint32_t flags = u16(48) | uint32_t(u16(50)) << 16;
  unsigned abi = uint8_t(b[8]);
  return abi >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
}

} // namespace loom::gpu
