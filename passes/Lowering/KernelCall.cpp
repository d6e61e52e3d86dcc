//===- KernelCall.cpp - loom_cpu.kernel and its bufferization -------------===//
//
// See KernelCall.td. The model: inputs are read, destinations written (not
// read) and equivalent to the results; bufferize inlines the body on the
// operands' buffers, through a contiguous copy where a buffer is a strided
// view (a destination's copy is written back after the body).
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/KernelCall.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace loom::lowering;

#include "passes/Lowering/KernelCallDialect.cpp.inc"

#define GET_OP_CLASSES
#include "passes/Lowering/KernelCall.cpp.inc"

void LoomCpuDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "passes/Lowering/KernelCall.cpp.inc"
      >();
}

/// The identity-layout buffer type of a tensor.
static MemRefType bufferTypeOf(Type tensor) {
  auto t = cast<RankedTensorType>(tensor);
  return MemRefType::get(t.getShape(), t.getElementType());
}

void KernelOp::build(OpBuilder &b, OperationState &state, ValueRange inputs,
                     ValueRange inits, KernelBodyFn body) {
  build(b, state, inits.getTypes(), inputs, inits);
  SmallVector<Type> types;
  SmallVector<Location> locs;
  for (Value v : state.operands) {
    types.push_back(bufferTypeOf(v.getType()));
    locs.push_back(state.location);
  }
  OpBuilder::InsertionGuard guard(b);
  Block *block = b.createBlock(state.regions.front().get(), {}, types, locs);
  body(b, state.location, block->getArguments());
}

LogicalResult KernelOp::verify() {
  if (getNumResults() != getInits().size())
    return emitOpError() << "needs one result per destination";
  for (auto [init, r] : llvm::zip(getInits(), getResults()))
    if (init.getType() != r.getType())
      return emitOpError() << "results must have their destinations' types";
  Block &body = *getBody();
  if (body.getNumArguments() != getNumOperands())
    return emitOpError() << "needs one body argument per operand";
  for (auto [v, arg] : llvm::zip(getOperands(), body.getArguments()))
    if (arg.getType() != bufferTypeOf(v.getType()))
      return emitOpError() << "body arguments must be the operands' "
                              "identity-layout memrefs";
  return success();
}

namespace {

struct KernelModel
    : BufferizableOpInterface::ExternalModel<KernelModel, KernelOp> {
  static bool isInit(Operation *op, OpOperand &o) {
    return cast<KernelOp>(op).isDpsInit(&o);
  }
  bool bufferizesToMemoryRead(Operation *op, OpOperand &o,
                              const AnalysisState &) const {
    return !isInit(op, o);
  }
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &o,
                               const AnalysisState &) const {
    return isInit(op, o);
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &o,
                                      const AnalysisState &) const {
    if (!isInit(op, o))
      return {};
    return {{cast<KernelOp>(op).getTiedOpResult(&o), BufferRelation::Equivalent,
             /*isDefinite=*/true}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto k = cast<KernelOp>(op);
    Location loc = op->getLoc();
    rewriter.setInsertionPoint(op);
    SmallVector<Value> bufs, results;
    SmallVector<std::pair<Value, Value>> writeBack; // (contiguous, buffer)
    for (OpOperand &o : op->getOpOperands()) {
      FailureOr<Value> buf = getBuffer(rewriter, o.get(), options, state);
      if (failed(buf))
        return failure();
      Value v = *buf;
      Type want = k.getBody()->getArgument(o.getOperandNumber()).getType();
      if (v.getType() != want) {
        // A strided view: the calls take row-major buffers.
        auto mt = cast<MemRefType>(want);
        SmallVector<Value> dyn;
        for (int64_t d = 0; d < mt.getRank(); ++d)
          if (mt.isDynamicDim(d))
            dyn.push_back(memref::DimOp::create(rewriter, loc, v, d));
        Value tmp = memref::AllocOp::create(rewriter, loc, mt, dyn);
        if (isInit(op, o))
          writeBack.push_back({tmp, v});
        else
          memref::CopyOp::create(rewriter, loc, v, tmp);
        v = tmp;
      }
      if (isInit(op, o))
        results.push_back(*buf);
      bufs.push_back(v);
    }
    rewriter.inlineBlockBefore(k.getBody(), op, bufs);
    for (auto [tmp, buf] : writeBack)
      memref::CopyOp::create(rewriter, loc, tmp, buf);
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

} // namespace

void loom::lowering::registerKernelDialect(DialectRegistry &registry) {
  registry.insert<LoomCpuDialect>();
  registry.addExtension(+[](MLIRContext *ctx, LoomCpuDialect *) {
    KernelOp::attachInterface<KernelModel>(*ctx);
  });
}
