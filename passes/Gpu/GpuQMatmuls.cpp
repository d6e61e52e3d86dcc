//===- GpuQMatmuls.cpp - quantized matmuls through the generated kernels --===//
//
// loom.qmatmul in the whole-program GPU lowering (docs/GPU.md): the weight
// stays quantized (its GGUF / Loom blocks, device-resident like every
// weight) and the product is one launch of a kernel that
// lib/Target/GpuTarget/QMatmulKernelGen.cpp generates (`<base>_gemv<M>` for
// M <= 8, `<base>_tiled` otherwise: the runtime's loom_cuda_qmatmul choice).
//
// Two passes, so that the kernels' gpu.funcs never meet bufferization and
// the deallocation pipeline:
//  - loom-gpu-qmatmuls (on tensors, before loom-convert-loom-to-linalg):
//    the weight argument takes its storage type (the blocks' bytes) and
//    each qmatmul becomes a destination-style `loom_cpu.kernel` whose body
//    calls a private declaration that carries the kernel's spec;
//  - loom-gpu-qmatmul-launches (on buffers, after kernel outlining): each
//    such call becomes a `gpu.launch_func` on the buffers' addresses, and
//    the kernels of every spec go into `gpu.module @loom_qmatmul_kernels`.
//
//===----------------------------------------------------------------------===//

#include "lib/Target/GpuTarget/GpuTarget.h"
#include "passes/Gpu/Passes.h"
#include "passes/Lowering/KernelCall.h"

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/SetVector.h"

#include <set>

#define DEBUG_TYPE "loom-gpu-qmatmuls"

namespace loom {
#define GEN_PASS_DEF_GPUQMATMULSPASS
#define GEN_PASS_DEF_GPUQMATMULLAUNCHESPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;
namespace lg = loom::gpu;

namespace {

/// The attribute of a qmatmul's placeholder declaration: its kernel spec
/// and batch (rows of x).
constexpr llvm::StringLiteral kSpecAttr = "loom_gpu_qmatmul";

DictionaryAttr specToAttr(Builder &b, const lg::QMatmulSpec &s, int64_t m) {
  auto str = [&](std::string_view v) { return b.getStringAttr(v); };
  return b.getDictionaryAttr({
      b.getNamedAttr("format", str(loom::quant::formatName(s.format))),
      b.getNamedAttr("block", b.getI64IntegerAttr(s.block)),
      b.getNamedAttr("mode", str(loom::quant::modeName(s.mode))),
      b.getNamedAttr("scale", str(lg::elemTypeName(s.scale))),
      b.getNamedAttr("act", str(lg::elemTypeName(s.act))),
      b.getNamedAttr("n", b.getI64IntegerAttr(s.n)),
      b.getNamedAttr("k", b.getI64IntegerAttr(s.k)),
      b.getNamedAttr("m", b.getI64IntegerAttr(m)),
  });
}

bool specFromAttr(DictionaryAttr d, lg::QMatmulSpec &s, int64_t &m) {
  auto str = [&](StringRef key) {
    auto a = d.getAs<StringAttr>(key);
    return a ? a.getValue().str() : std::string();
  };
  auto num = [&](StringRef key, int64_t &out) {
    auto a = d.getAs<IntegerAttr>(key);
    if (a)
      out = a.getInt();
    return bool(a);
  };
  std::optional<loom::quant::Format> format =
      loom::quant::parseFormat(str("format"));
  std::optional<loom::quant::Mode> mode = loom::quant::parseMode(str("mode"));
  if (!format || !mode)
    return false;
  s.format = *format;
  s.mode = *mode;
  return lg::parseElemType(str("scale"), s.scale) &&
         lg::parseElemType(str("act"), s.act) && num("block", s.block) &&
         num("n", s.n) && num("k", s.k) && num("m", m) && m >= 1 &&
         lg::validate(s).empty();
}

//===----------------------------------------------------------------------===//
// loom-gpu-qmatmuls
//===----------------------------------------------------------------------===//

struct GpuQMatmulsPass : loom::impl::GpuQMatmulsPassBase<GpuQMatmulsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<loom::QMatmulOp> ops;
    module.walk([&](loom::QMatmulOp op) { ops.push_back(op); });
    // Every qmatmul checked first: its kernel spec, a static batch, a weight
    // that is an entry's argument read only by qmatmuls.
    struct Planned {
      loom::QMatmulOp op;
      lg::QMatmulSpec spec;
      int64_t m;
    };
    SmallVector<Planned> plan;
    llvm::SetVector<BlockArgument> weights;
    for (loom::QMatmulOp op : ops) {
      std::string why;
      std::optional<lg::QMatmulSpec> spec = lg::specFromQMatmul(op, &why);
      if (!spec) {
        op.emitError() << "--target=cuda: no GPU kernel for this "
                          "'loom.qmatmul': "
                       << why;
        return signalPassFailure();
      }
      auto xt = cast<RankedTensorType>(op.getInput().getType());
      auto yt = cast<RankedTensorType>(op.getResult().getType());
      if (!xt.hasStaticShape() || xt.getRank() < 2 ||
          yt.getElementType() != xt.getElementType()) {
        op.emitError() << "--target=cuda: 'loom.qmatmul' needs a static "
                          "input of rank >= 2 and an output of the input's "
                          "element type (got "
                       << xt << " -> " << yt << ")";
        return signalPassFailure();
      }
      auto arg = dyn_cast<BlockArgument>(op.getWeight());
      auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                    : func::FuncOp();
      if (!fn || !arg.getOwner()->isEntryBlock()) {
        op.emitError() << "--target=cuda: the weight of a 'loom.qmatmul' "
                          "must be a weight of the entry point (run "
                          "loom-prepare-entry-points first)";
        return signalPassFailure();
      }
      for (OpOperand &use : arg.getUses()) {
        auto mm = dyn_cast<loom::QMatmulOp>(use.getOwner());
        // A tied LM head (the embedding's table is the head's weight)
        // would need the argument both as the blocks' bytes and as the
        // !loom.qtensor that the embedding's lowering reads; the CPU
        // conversion leaves the cast between them unresolved.
        if (isa<loom::EmbeddingOp>(use.getOwner())) {
          use.getOwner()->emitError()
              << "--target=cuda: a tied embedding (its quantized table is "
                 "also a 'loom.qmatmul' weight, e.g. an LM head) is not "
                 "built for CUDA yet";
          return signalPassFailure();
        }
        if (!mm || use.get() != mm.getWeight()) {
          use.getOwner()->emitError()
              << "--target=cuda: this '" << use.getOwner()->getName()
              << "' reads a quantized weight that a 'loom.qmatmul' also "
                 "reads; on the GPU quantized weights are read only by "
                 "qmatmuls";
          return signalPassFailure();
        }
      }
      weights.insert(arg);
      int64_t m = xt.getNumElements() / xt.getShape().back();
      plan.push_back({op, *spec, m});
    }
    // The weights as their blocks' bytes.
    for (BlockArgument arg : weights) {
      auto q = cast<loom::QTensorType>(arg.getType());
      arg.setType(q.getStorageType());
      auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      fn.setType(FunctionType::get(fn.getContext(),
                                   fn.getBody().front().getArgumentTypes(),
                                   fn.getResultTypes()));
    }
    OpBuilder b(module.getContext());
    unsigned counter = 0;
    for (Planned &p : plan) {
      Location loc = p.op.getLoc();
      auto yt = cast<RankedTensorType>(p.op.getResult().getType());
      b.setInsertionPoint(p.op);
      Value init =
          tensor::EmptyOp::create(b, loc, yt.getShape(), yt.getElementType());
      auto kernel = loom::lowering::KernelOp::create(
          b, loc, ValueRange{p.op.getWeight(), p.op.getInput()},
          ValueRange{init}, [&](OpBuilder &bb, Location l, ValueRange bufs) {
            // The spec on a private declaration, one per qmatmul.
            OpBuilder::InsertPoint body = bb.saveInsertionPoint();
            bb.setInsertionPointToEnd(module.getBody());
            std::string name;
            do
              name = "loom_gpu_qmatmul_" + std::to_string(counter++);
            while (module.lookupSymbol(name));
            auto decl = func::FuncOp::create(
                bb, l, name, bb.getFunctionType(bufs.getTypes(), {}));
            decl.setPrivate();
            decl->setAttr(kSpecAttr, specToAttr(bb, p.spec, p.m));
            bb.restoreInsertionPoint(body);
            func::CallOp::create(bb, l, decl, bufs);
          });
      p.op.getResult().replaceAllUsesWith(kernel.getResult(0));
      p.op.erase();
    }
  }
};

//===----------------------------------------------------------------------===//
// loom-gpu-qmatmul-launches
//===----------------------------------------------------------------------===//

struct GpuQMatmulLaunchesPass
    : loom::impl::GpuQMatmulLaunchesPassBase<GpuQMatmulLaunchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      auto fn = module.lookupSymbol<func::FuncOp>(call.getCallee());
      if (fn && fn->hasAttr(kSpecAttr))
        calls.push_back(call);
    });
    if (calls.empty())
      return;
    // One kernel family per spec, in first-use order.
    std::vector<lg::QMatmulSpec> specs;
    std::set<std::string> seen;
    OpBuilder b(ctx);
    Type ptr1 = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/1);
    for (func::CallOp call : calls) {
      auto fn = module.lookupSymbol<func::FuncOp>(call.getCallee());
      lg::QMatmulSpec spec;
      int64_t m = 0;
      if (!specFromAttr(fn->getAttrOfType<DictionaryAttr>(kSpecAttr), spec,
                        m) ||
          call.getNumOperands() != 3) {
        call.emitError() << "internal error: '" << call.getCallee()
                         << "' is not a qmatmul of loom-gpu-qmatmuls";
        return signalPassFailure();
      }
      if (seen.insert(lg::kernelBaseName(spec)).second)
        specs.push_back(spec);
      lg::QMatmulLaunch launch = lg::qmatmulLaunch(spec, m);
      Location loc = call.getLoc();
      b.setInsertionPoint(call);
      // (w, x, y) as global-memory pointers: the kernels' ABI.
      SmallVector<Value> args;
      for (Value buf : call.getOperands()) {
        Value idx = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf);
        Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
        args.push_back(LLVM::IntToPtrOp::create(b, loc, ptr1, i64));
      }
      args.push_back(arith::ConstantIntOp::create(b, loc, b.getI32Type(), m));
      auto c = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      auto kernel =
          SymbolRefAttr::get(ctx, lg::kQMatmulModuleName,
                             {FlatSymbolRefAttr::get(ctx, launch.kernel)});
      gpu::LaunchFuncOp::create(
          b, loc, kernel,
          gpu::KernelDim3{c(launch.gridX), c(launch.gridY), c(1)},
          gpu::KernelDim3{c(launch.threads), c(1), c(1)},
          /*dynamicSharedMemorySize=*/Value(), args);
      call.erase();
    }
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (fn->hasAttr(kSpecAttr) && fn.symbolKnownUseEmpty(module))
        fn.erase();
    if (failed(lg::appendQMatmulKernels(module, specs, lg::kQMatmulModuleName)))
      return signalPassFailure();
  }
};

} // namespace
