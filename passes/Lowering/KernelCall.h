//===- KernelCall.h - runtime calls on buffers, in destination style -*- C++
//-*-===//
//
// `loom_cpu.kernel` (KernelCall.td): the lowering's one internal op. It
// stands for runtime calls (the GEMM, the quantized kernels) that read and
// write memory, while the program is still on tensors:
//
//   %y = loom_cpu.kernel ins(%a, %b : tensor<..>, tensor<..>)
//                        outs(%init : tensor<..>) {
//   ^bb0(%ma: memref<..>, %mb: memref<..>, %mc: memref<..>):
//     ... func.call @loom_rt_sgemm(..pointers of %ma, %mb, %mc..) ...
//   } -> tensor<..>
//
// The `ins` operands are read, the `outs` are destinations
// (DestinationStyleOpInterface): fully written, not read, result i is
// destination i. Its BufferizableOpInterface model (loom-bufferize) inlines
// the body on the buffers the one-shot analysis gives (contiguous row-major
// copies of strided ones), so the analysis sees every read and write. It has
// no memory-effect interface, so CSE never merges two of them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_LOWERING_KERNELCALL_H
#define LOOM_PASSES_LOWERING_KERNELCALL_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace loom::lowering {

/// Builds the body of a kernel: `bufs` are the memrefs of the inputs, then
/// of the destinations (identity layouts, the tensors' shapes).
using KernelBodyFn = llvm::function_ref<void(mlir::OpBuilder &, mlir::Location,
                                             mlir::ValueRange bufs)>;

/// Registers the dialect and the kernel's bufferization model.
void registerKernelDialect(mlir::DialectRegistry &registry);

} // namespace loom::lowering

#include "passes/Lowering/KernelCallDialect.h.inc"

#define GET_OP_CLASSES
#include "passes/Lowering/KernelCall.h.inc"

#endif // LOOM_PASSES_LOWERING_KERNELCALL_H
