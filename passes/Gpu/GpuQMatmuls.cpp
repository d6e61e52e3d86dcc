//===- GpuQMatmuls.cpp - quantized matmuls through the generated kernels --===//
//
// loom.qmatmul in the whole-program GPU lowering (docs/GPU.md): the weight
// stays quantized (its GGUF / Loom blocks, device-resident like every
// weight) and the product is one launch of a kernel that
// lib/Target/GpuTarget/QMatmulKernelGen.cpp generates (`<base>_gemv<M>` for
// M <= 8, `<base>_tiled` otherwise: the runtime's loom_cuda_qmatmul choice;
// a run-time M, a dynamic leading dimension of x, launches `<base>_gemv1`
// and `<base>_tiled`, the one not chosen by M (1: the GEMV) given 0 rows
// with its grid and `m` computed from the buffer's sizes at run time).
//
// Two passes, so that the kernels' gpu.funcs never meet bufferization and
// the deallocation pipeline:
//  - loom-gpu-qmatmuls (on tensors, before loom-convert-loom-to-linalg):
//    the weight argument takes its storage type (the blocks' bytes) and
//    each qmatmul becomes a destination-style `loom_cpu.kernel` whose body
//    calls a private declaration that carries the kernel's spec (an
//    embedding whose table is such a weight, a tied LM head, reads a
//    !loom.qtensor view of the same bytes);
//  - loom-gpu-qmatmul-launches (on buffers, after kernel outlining): each
//    such call becomes a `gpu.launch_func` on the buffers' addresses, and
//    the kernels of every spec go into `gpu.module @loom_qmatmul_kernels`.
//
//===----------------------------------------------------------------------===//

#include "lib/Target/GpuTarget/GpuTarget.h"
#include "passes/Gpu/Passes.h"
#include "passes/Lowering/KernelCall.h"

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/runtime/cuda.h"

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
/// and batch (rows of x; kRunTimeM when they are a run-time size).
constexpr llvm::StringLiteral kSpecAttr = "loom_gpu_qmatmul";
constexpr int64_t kRunTimeM = -1;

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
         num("n", s.n) && num("k", s.k) && num("m", m) &&
         (m >= 1 || m == kRunTimeM) && lg::validate(s).empty();
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
    // that is an entry's argument read only by qmatmuls and embeddings.
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
      // The rows (every dimension but the last) may be run-time sizes.
      if (xt.getRank() < 2 || xt.isDynamicDim(xt.getRank() - 1) ||
          yt.getElementType() != xt.getElementType()) {
        op.emitError() << "--target=cuda: 'loom.qmatmul' needs an input of "
                          "rank >= 2 with a static last dimension and an "
                          "output of the input's element type (got "
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
        // A tied LM head (the embedding's table is the head's weight):
        // the embedding reads the same resident blocks through a
        // !loom.qtensor view of them (below).
        if (isa<loom::EmbeddingOp>(use.getOwner()))
          continue;
        if (!mm || use.get() != mm.getWeight()) {
          use.getOwner()->emitError()
              << "--target=cuda: this '" << use.getOwner()->getName()
              << "' reads a quantized weight that a 'loom.qmatmul' also "
                 "reads; on the GPU quantized weights are read only by "
                 "qmatmuls and embeddings";
          return signalPassFailure();
        }
      }
      weights.insert(arg);
      int64_t m = xt.hasStaticShape()
                      ? xt.getNumElements() / xt.getShape().back()
                      : kRunTimeM;
      plan.push_back({op, *spec, m});
    }
    // The weights as their blocks' bytes. A tied embedding's table (the
    // same argument) is a !loom.qtensor view of those bytes, a cast at the
    // entry that loom-convert-loom-to-linalg's embedding lowering reads
    // through (quantizedWeight): both read the one resident allocation.
    OpBuilder b(module.getContext());
    for (BlockArgument arg : weights) {
      auto q = cast<loom::QTensorType>(arg.getType());
      SmallVector<OpOperand *> tables;
      for (OpOperand &use : arg.getUses())
        if (isa<loom::EmbeddingOp>(use.getOwner()))
          tables.push_back(&use);
      arg.setType(q.getStorageType());
      if (!tables.empty()) {
        b.setInsertionPointToStart(arg.getOwner());
        Value view = UnrealizedConversionCastOp::create(b, arg.getLoc(),
                                                        TypeRange{q}, arg)
                         .getResult(0);
        for (OpOperand *use : tables)
          use->set(view);
      }
      auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      fn.setType(FunctionType::get(fn.getContext(),
                                   fn.getBody().front().getArgumentTypes(),
                                   fn.getResultTypes()));
    }
    unsigned counter = 0;
    for (Planned &p : plan) {
      Location loc = p.op.getLoc();
      auto yt = cast<RankedTensorType>(p.op.getResult().getType());
      b.setInsertionPoint(p.op);
      // y's rows are x's (run-time sizes read from x).
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < yt.getRank(); ++d)
        if (yt.isDynamicDim(d))
          sizes.push_back(tensor::DimOp::create(b, loc, p.op.getInput(), d));
      Value init = tensor::EmptyOp::create(b, loc, yt.getShape(),
                                           yt.getElementType(), sizes);
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
  /// A batch that takes the tiled kernel, and the rows of its tile
  /// (include/loom/runtime/cuda.h).
  static constexpr int64_t kTiledM = LOOM_CUDA_QMM_GEMV_MAX_BATCH + 1;
  static constexpr int64_t kTileRows = LOOM_CUDA_QMM_TILE;

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
      Location loc = call.getLoc();
      b.setInsertionPoint(call);
      auto c = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      auto i32 = [&](Value index) -> Value {
        return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
      };
      // (w, x, y) as global-memory pointers: the kernels' ABI.
      SmallVector<Value> ptrs;
      for (Value buf : call.getOperands()) {
        Value idx = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf);
        Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
        ptrs.push_back(LLVM::IntToPtrOp::create(b, loc, ptr1, i64));
      }
      auto launchKernel = [&](const lg::QMatmulLaunch &launch, Value gridY,
                              Value rows) {
        SmallVector<Value> args(ptrs);
        args.push_back(rows);
        auto kernel =
            SymbolRefAttr::get(ctx, lg::kQMatmulModuleName,
                               {FlatSymbolRefAttr::get(ctx, launch.kernel)});
        Value gridX = c(launch.gridX);
        if (!gridY)
          gridY = c(launch.gridY);
        gpu::LaunchFuncOp::create(
            b, loc, kernel, gpu::KernelDim3{gridX, gridY, c(1)},
            gpu::KernelDim3{c(launch.threads), c(1), c(1)},
            /*dynamicSharedMemorySize=*/Value(), args);
      };
      if (m != kRunTimeM) {
        lg::QMatmulLaunch launch = lg::qmatmulLaunch(spec, m);
        launchKernel(launch, Value(),
                     arith::ConstantIntOp::create(b, loc, b.getI32Type(), m));
        call.erase();
        continue;
      }
      // A run-time M (the rows of x: every dimension but the last). A
      // decode step's M = 1 takes the GEMV, any other M the tiled kernel:
      // both are launched (host code is straight-line) and the one not
      // chosen gets 0 rows, for which a kernel returns at once.
      Value x = call.getOperand(1);
      auto xt = cast<MemRefType>(x.getType());
      Value rows = memref::DimOp::create(b, loc, x, 0);
      for (int64_t d = 1; d + 1 < xt.getRank(); ++d)
        rows = arith::MulIOp::create(b, loc, rows,
                                     memref::DimOp::create(b, loc, x, d));
      Value one =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rows, c(1));
      Value gemvRows = arith::SelectOp::create(b, loc, one, c(1), c(0));
      Value tiledRows = arith::SelectOp::create(b, loc, one, c(0), rows);
      lg::QMatmulLaunch gemv = lg::qmatmulLaunch(spec, 1);
      launchKernel(gemv, Value(), i32(gemvRows));
      // (At least one block: a launch of an empty grid is an error.)
      Value gridY = arith::MaxUIOp::create(
          b, loc, arith::CeilDivUIOp::create(b, loc, tiledRows, c(kTileRows)),
          c(1));
      launchKernel(lg::qmatmulLaunch(spec, kTiledM), gridY, i32(tiledRows));
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
