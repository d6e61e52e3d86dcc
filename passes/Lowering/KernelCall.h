//===- KernelCall.h - runtime calls on buffers, in destination style -*- C++ -*-===//
//
// `loom_cpu.kernel`: the lowering's one internal op. It stands for runtime
// calls (the GEMM, the quantized kernels) that read and write memory, while
// the program is still on tensors:
//
//   %y = "loom_cpu.kernel"(%a, %b, %init) <{num_inputs = 2}> ({
//   ^bb0(%ma: memref<..>, %mb: memref<..>, %mc: memref<..>):
//     ... func.call @loom_rt_sgemm(..pointers of %ma, %mb, %mc..) ...
//   }) : (tensor<..>, tensor<..>, tensor<..>) -> tensor<..>
//
// The first `num_inputs` operands are read, the others are destinations
// (DestinationStyleOpInterface): fully written, not read, result i is
// destination i. Its BufferizableOpInterface model (loom-bufferize) inlines
// the body on the buffers the one-shot analysis gives (contiguous row-major
// copies of strided ones), so the analysis sees every read and write. It has
// no memory-effect interface, so CSE never merges two of them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_LOWERING_KERNELCALL_H
#define LOOM_PASSES_LOWERING_KERNELCALL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace loom::lowering {

/// The dialect of the lowering's internal op (never in a pass's input).
class LoweringDialect : public mlir::Dialect {
public:
  explicit LoweringDialect(mlir::MLIRContext *ctx);
  static constexpr llvm::StringLiteral getDialectNamespace() {
    return "loom_cpu";
  }
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LoweringDialect)
};

/// Builds the body of a kernel: `bufs` are the memrefs of the inputs, then
/// of the destinations (identity layouts, the tensors' shapes).
using KernelBodyFn = llvm::function_ref<void(mlir::OpBuilder &, mlir::Location,
                                             mlir::ValueRange bufs)>;

class KernelOp
    : public mlir::Op<KernelOp, mlir::OpTrait::OneRegion,
                      mlir::OpTrait::VariadicResults,
                      mlir::OpTrait::ZeroSuccessors,
                      mlir::OpTrait::VariadicOperands,
                      mlir::OpTrait::SingleBlock, mlir::OpTrait::NoTerminator,
                      mlir::DestinationStyleOpInterface::Trait> {
public:
  using Op::Op;
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(KernelOp)
  static constexpr llvm::StringLiteral getOperationName() {
    return "loom_cpu.kernel";
  }
  static constexpr llvm::StringLiteral kNumInputs = "num_inputs";
  static llvm::ArrayRef<llvm::StringRef> getAttributeNames() {
    static llvm::StringRef names[] = {kNumInputs};
    return names;
  }
  /// A kernel reading `inputs` and writing `inits` (each a tensor.empty or
  /// any tensor to overwrite); returns its results, one per init.
  static KernelOp create(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::ValueRange inputs, mlir::ValueRange inits,
                         KernelBodyFn body);
  unsigned getNumInputs();
  mlir::MutableOperandRange getDpsInitsMutable();
  mlir::Block &getBody() { return getOperation()->getRegion(0).front(); }
  mlir::LogicalResult verify();
};

/// Registers the dialect and the kernel's bufferization model.
void registerKernelDialect(mlir::DialectRegistry &registry);

} // namespace loom::lowering

#endif // LOOM_PASSES_LOWERING_KERNELCALL_H
