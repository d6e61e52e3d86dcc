//===- GpuEmulate.cpp - a CUDA program's kernels as host functions --------===//
//
// The emulation target of the GPU lower phase (format=emu; docs/GPU.md,
// "Emulation on the CPU"). No GPU is lent to most sessions, so a whole
// `--target=cuda` program (its host code, memory plan, launches, grids,
// device index checks, KV cache views) is run on the CPU with numbers:
// the kernels are compiled for the host into the bundle itself, the host
// code is the same as a real bundle's (the same mgpu* calls), and an
// emulating CUDA driver (test/gpu/emu) runs each launch thread by thread.
//
// loom-gpu-emulate-kernels (instead of NVVM and ptxas): every kernel of a
// gpu.module becomes `func.func private @__loom_emu_body_<module>__<kernel>`
// with one argument more, a pointer to the thread's twelve i64 (thread id,
// block id, block size, grid size; x y z each); the gpu.module becomes a
// gpu.binary whose object is "LOOMEMU1\0<module>\0", loaded by the host
// code like a fatbin.
//
// loom-gpu-emulate-launchers (after gpu-to-llvm): `llvm.func
// @__loom_emu_<module>__<kernel>(ptr params, ptr ctx)`, exported, reads
// each (expanded) argument through cuLaunchKernel's parameter array and
// calls the body.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

#define DEBUG_TYPE "loom-gpu-emulate"

namespace loom {
#define GEN_PASS_DEF_GPUEMULATEKERNELSPASS
#define GEN_PASS_DEF_GPUEMULATELAUNCHERSPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kEmuKernelAttr = "loom_gpu_emu_kernel";
constexpr llvm::StringLiteral kBodyPrefix = "__loom_emu_body_";
constexpr llvm::StringLiteral kLauncherPrefix = "__loom_emu_";
/// `i64 [n, size_0, ..., size_n-1]`: the bytes of each kernel parameter,
/// so that the emulator can copy a launch's values when it records it into
/// a CUDA graph (the device copies them at cuLaunchKernel).
constexpr llvm::StringLiteral kParamSizesPrefix = "__loom_emu_param_sizes_";

/// The slot of a thread's context (twelve i64) that `op` reads, -1 if none.
int contextSlot(Operation *op) {
  auto dim = [](gpu::Dimension d) { return int(d); };
  if (auto o = dyn_cast<gpu::ThreadIdOp>(op))
    return dim(o.getDimension());
  if (auto o = dyn_cast<gpu::BlockIdOp>(op))
    return 3 + dim(o.getDimension());
  if (auto o = dyn_cast<gpu::BlockDimOp>(op))
    return 6 + dim(o.getDimension());
  if (auto o = dyn_cast<gpu::GridDimOp>(op))
    return 9 + dim(o.getDimension());
  return -1;
}

/// Undoes loom-gpu-host-program's NVPTX intrinsics (f32; f16 values were
/// extended around them) on the host: the math op they stand for.
LogicalResult unNvvm(LLVM::CallIntrinsicOp call) {
  StringRef name = call.getIntrin();
  OpBuilder b(call);
  Location loc = call.getLoc();
  if (call.getNumOperands() != 1 || call.getNumResults() != 1)
    return failure();
  Value x = call.getOperand(0), r;
  if (name == "llvm.nvvm.sqrt.rn.f")
    r = math::SqrtOp::create(b, loc, x);
  else if (name == "llvm.nvvm.floor.f")
    r = math::FloorOp::create(b, loc, x);
  else if (name == "llvm.nvvm.ceil.f")
    r = math::CeilOp::create(b, loc, x);
  else if (name == "llvm.nvvm.trunc.f")
    r = math::TruncOp::create(b, loc, x);
  else
    return failure();
  call.getResult(0).replaceAllUsesWith(r);
  call.erase();
  return success();
}

struct GpuEmulateKernelsPass
    : loom::impl::GpuEmulateKernelsPassBase<GpuEmulateKernelsPass> {
  using Base::Base;

  /// `k` as a host function of the module (the kernel is moved, not copied).
  LogicalResult emulate(gpu::GPUModuleOp gm, gpu::GPUFuncOp k) {
    if (!k.isKernel())
      return k.emitError() << "loom-gpu-emulate-kernels: '" << k.getName()
                           << "' is a device function, not a kernel: only "
                              "kernels are emulated";
    if (k.getNumWorkgroupAttributions() || k.getNumPrivateAttributions())
      return k.emitError() << "loom-gpu-emulate-kernels: kernel '"
                           << k.getName()
                           << "' uses shared or private memory attributions; "
                              "the emulation runs threads one after the "
                              "other and cannot share memory between them";
    MLIRContext *ctx = &getContext();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Type i64 = IntegerType::get(ctx, 64);
    SmallVector<Type> args(k.getArgumentTypes());
    args.push_back(ptr);
    OpBuilder b(gm);
    std::string name = (kBodyPrefix + gm.getName() + "__" + k.getName()).str();
    auto f = func::FuncOp::create(b, k.getLoc(), name,
                                  FunctionType::get(ctx, args, {}));
    f.setPrivate();
    f->setAttr(kEmuKernelAttr, b.getUnitAttr());
    f.getBody().takeBody(k.getBody());
    Block &entry = f.getBody().front();
    Value threadCtx = entry.addArgument(ptr, k.getLoc());

    SmallVector<Operation *> ids, returns;
    SmallVector<LLVM::CallIntrinsicOp> intrinsics;
    Operation *bad = nullptr;
    f.walk([&](Operation *op) {
      if (contextSlot(op) >= 0)
        ids.push_back(op);
      else if (isa<gpu::ReturnOp>(op))
        returns.push_back(op);
      else if (auto c = dyn_cast<LLVM::CallIntrinsicOp>(op))
        intrinsics.push_back(c);
      else if (isa<gpu::GPUDialect, NVVM::NVVMDialect>(op->getDialect()) ||
               isa<LLVM::InlineAsmOp>(op))
        if (!bad)
          bad = op;
    });
    if (bad)
      return bad->emitError()
             << "loom-gpu-emulate-kernels: kernel '" << k.getName()
             << "' uses '" << bad->getName()
             << "', which the emulation (one thread after the other) "
                "cannot run";
    for (Operation *op : ids) {
      OpBuilder ib(op);
      Location loc = op->getLoc();
      Value at = LLVM::GEPOp::create(
          ib, loc, ptr, i64, threadCtx,
          ArrayRef<LLVM::GEPArg>{LLVM::GEPArg(contextSlot(op))});
      Value v = LLVM::LoadOp::create(ib, loc, i64, at);
      op->getResult(0).replaceAllUsesWith(
          arith::IndexCastOp::create(ib, loc, ib.getIndexType(), v));
      op->erase();
    }
    for (Operation *op : returns) {
      OpBuilder rb(op);
      func::ReturnOp::create(rb, op->getLoc(), op->getOperands());
      op->erase();
    }
    for (LLVM::CallIntrinsicOp c : intrinsics)
      if (failed(unNvvm(c)))
        return c.emitError()
               << "loom-gpu-emulate-kernels: kernel '" << k.getName()
               << "' calls the intrinsic '" << c.getIntrin()
               << "', which has no host equivalent here";
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    for (auto gm : llvm::to_vector(module.getOps<gpu::GPUModuleOp>())) {
      // The generated quantized matmuls (warp shuffles, shared tiles, PTX
      // inline assembly) are computed by the emulating driver from their
      // names; everything else is converted.
      bool qmm = llvm::any_of(gm.getOps<gpu::GPUFuncOp>(), [](auto k) {
        return k.getName().starts_with("loom_qmm_");
      });
      if (!qmm)
        for (auto k : llvm::to_vector(gm.getOps<gpu::GPUFuncOp>()))
          if (failed(emulate(gm, k)))
            return signalPassFailure();
      std::string blob = "LOOMEMU1";
      blob.push_back('\0');
      blob += gm.getName().str();
      blob.push_back('\0');
      OpBuilder b(gm);
      auto object = gpu::ObjectAttr::get(
          ctx, NVVM::NVVMTargetAttr::get(ctx), gpu::CompilationTarget::Binary,
          StringAttr::get(ctx, blob), nullptr, nullptr);
      gpu::BinaryOp::create(b, gm.getLoc(), gm.getName(), Attribute(),
                            ArrayRef<Attribute>{object});
      gm.erase();
    }
  }
};

struct GpuEmulateLaunchersPass
    : loom::impl::GpuEmulateLaunchersPassBase<GpuEmulateLaunchersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    DataLayout layout(module);
    for (auto body : llvm::to_vector(module.getOps<LLVM::LLVMFuncOp>())) {
      if (!body->hasAttr(kEmuKernelAttr))
        continue;
      body->removeAttr(kEmuKernelAttr);
      StringRef name = body.getName();
      if (!name.consume_front(kBodyPrefix))
        continue;
      OpBuilder b(module.getBodyRegion());
      b.setInsertionPointToEnd(module.getBody());
      Location loc = body.getLoc();
      auto type =
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr});
      auto launcher = LLVM::LLVMFuncOp::create(
          b, loc, (kLauncherPrefix + name).str(), type);
      Block *entry = launcher.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      Value params = entry->getArgument(0);
      ArrayRef<Type> argTypes = body.getFunctionType().getParams();
      SmallVector<Value> args;
      // Every argument but the last (the thread's context) is a kernel
      // parameter: params[i] points at its value.
      for (auto [i, t] : llvm::enumerate(argTypes.drop_back())) {
        Value slot = LLVM::GEPOp::create(
            b, loc, ptr, ptr, params,
            ArrayRef<LLVM::GEPArg>{LLVM::GEPArg(int32_t(i))});
        Value at = LLVM::LoadOp::create(b, loc, ptr, slot);
        args.push_back(LLVM::LoadOp::create(b, loc, t, at));
      }
      args.push_back(entry->getArgument(1));
      LLVM::CallOp::create(b, loc, body, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{});

      SmallVector<int64_t> sizes{int64_t(argTypes.size() - 1)};
      for (Type t : argTypes.drop_back())
        sizes.push_back(int64_t(layout.getTypeSize(t).getFixedValue()));
      b.setInsertionPointToEnd(module.getBody());
      auto i64 = IntegerType::get(ctx, 64);
      auto arrayType = LLVM::LLVMArrayType::get(i64, sizes.size());
      LLVM::GlobalOp::create(
          b, loc, arrayType, /*isConstant=*/true, LLVM::Linkage::External,
          (kParamSizesPrefix + name).str(),
          DenseElementsAttr::get(
              RankedTensorType::get({int64_t(sizes.size())}, i64),
              ArrayRef<int64_t>(sizes)));
    }
  }
};

} // namespace
