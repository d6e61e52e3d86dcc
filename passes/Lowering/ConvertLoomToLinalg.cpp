//===- ConvertLoomToLinalg.cpp - loom ops to linalg on tensors ------------===//
//
// The pass: a dialect conversion with every loom op but loom.mesh and the
// collectives illegal (those become runtime calls in loom-bufferize),
// the patterns of the op families (LoweringUtils.h lists the files), a
// TypeConverter that turns !loom.qtensor into its storage tensor, and the
// upstream function-signature, call and return conversions. Composite ops
// become short sequences of generics; fusion and bufferization run
// afterwards.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/GemmWeights.h"
#include "passes/Lowering/LoweringUtils.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"

#define DEBUG_TYPE "loom-convert-loom-to-linalg"

namespace loom {
#define GEN_PASS_DEF_CONVERTLOOMTOLINALGPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::lowering;

namespace {

/// loom.weight must have been outlined by loom-prepare-entry-points.
struct WeightRefusal : OpConversionPattern<WeightOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(WeightOp op, OpAdaptor,
                                ConversionPatternRewriter &) const override {
    return op.emitOpError() << "weights must be outlined to arguments first "
                               "(loom-prepare-entry-points)";
  }
};

/// Any other loom op without a pattern: refused by name.
struct NoLowering : ConversionPattern {
  NoLowering(MLIRContext *ctx, llvm::DenseSet<OperationName> covered)
      : ConversionPattern(MatchAnyOpTypeTag(), /*benefit=*/0, ctx),
        covered(std::move(covered)) {}
  LogicalResult matchAndRewrite(Operation *op, ArrayRef<Value>,
                                ConversionPatternRewriter &) const override {
    if (!isa<LoomDialect>(op->getDialect()) || isa<MeshOp>(op) ||
        covered.contains(op->getName()))
      return failure();
    return op->emitOpError() << "has no CPU lowering";
  }
  llvm::DenseSet<OperationName> covered;
};

/// Discardable loom.* attributes of arguments and results have no meaning
/// below (and LLVM translation warns about each): drop them all.
void dropLoomAttributes(ModuleOp module) {
  auto withoutLoom = [](DictionaryAttr attrs) {
    SmallVector<NamedAttribute> kept;
    if (attrs)
      for (NamedAttribute a : attrs)
        if (!a.getName().getValue().starts_with("loom."))
          kept.push_back(a);
    return kept;
  };
  module.walk([&](func::FuncOp fn) {
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.setArgAttrs(i, withoutLoom(fn.getArgAttrDict(i)));
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.setResultAttrs(i, withoutLoom(fn.getResultAttrDict(i)));
  });
}

struct ConvertLoomToLinalgPass
    : loom::impl::ConvertLoomToLinalgPassBase<ConvertLoomToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    LoweringOptions opts;
    opts.qmatmul = qmatmul;
    opts.gemm = gemm;
    opts.fusedAttention = fusedAttention;
    std::string error;
    if (!isQMatmulMode(qmatmul))
      error = "qmatmul=" + qmatmul + ": expected f32, i8, i8x3 or dequant";
    else
      parseQKernelTuning(qmmTile, qmmPrefetch, opts.tuning, error);
    if (!error.empty()) {
      module.emitError() << "loom-convert-loom-to-linalg: " << error;
      return signalPassFailure();
    }
    if (failed(verifyQuantizedArguments(module)) ||
        failed(verifyCollectives(module)))
      return signalPassFailure();

    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    addQuantizedTypeConversion(converter);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<LoomDialect>();
    // Collectives stay: they become runtime calls on the buffers that
    // loom-bufferize gives them (CollectivePatterns.cpp).
    target.addLegalOp<MeshOp, AllReduceOp, AllGatherOp, ReduceScatterOp, SendOp,
                      RecvOp>();
    target.addDynamicallyLegalOp<AllToAllOp>(isContiguousAllToAll);
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp fn) {
      return converter.isSignatureLegal(fn.getFunctionType()) &&
             converter.isLegal(&fn.getBody());
    });
    target.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });

    RewritePatternSet patterns(ctx);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateElementwisePatterns(converter, patterns, opts);
    populateContractionPatterns(converter, patterns, opts);
    populateDataMovementPatterns(converter, patterns, opts);
    populateAttentionPatterns(converter, patterns, opts);
    populateConvPatterns(converter, patterns, opts);
    populateQuantizedPatterns(converter, patterns, opts);
    populateCollectivePatterns(converter, patterns, opts);
    patterns.add<WeightRefusal>(converter, ctx);
    llvm::DenseSet<OperationName> covered;
    for (const auto &p : patterns.getNativePatterns())
      if (std::optional<OperationName> root = p->getRootKind())
        covered.insert(*root);
    patterns.add<NoLowering>(ctx, std::move(covered));

    // A pattern that refuses an op says why; the driver's own "failed to
    // legalize" that follows would only repeat it.
    bool refused = false;
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      if (refused && StringRef(diag.str()).starts_with("failed to legalize"))
        return success();
      refused = true;
      return failure();
    });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // The !loom.qtensor views of blocks that loom-gpu-qmatmuls gives a tied
    // embedding: its lowering reads the blocks (quantizedWeight), the view
    // is left unused.
    module.walk([](UnrealizedConversionCastOp cast) {
      if (cast->use_empty() &&
          llvm::any_of(cast->getResultTypes(), llvm::IsaPred<QTensorType>))
        cast.erase();
    });

    // Meshes no collective refers to any more are consumed (loom-bufferize
    // erases the others once their collectives are runtime calls).
    for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
      if (SymbolTable::symbolKnownUseEmpty(mesh, module))
        mesh.erase();
    // Which weights the GEMM calls read (manifest "gemm_b": packed at
    // load), while the weight arguments still say they are weights.
    recordGemmWeights(module);
    dropLoomAttributes(module);
  }
};

} // namespace
