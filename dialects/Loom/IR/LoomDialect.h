//===- LoomDialect.h - the loom dialect -------------------------*- C++ -*-===//
//
// Umbrella header of the loom dialect: enums, dialect, attributes, types,
// interfaces and ops, in the order the generated code needs them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMDIALECT_H
#define LOOM_DIALECT_LOOM_IR_LOOMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Loom/IR/LoomEnums.h.inc"

#include "dialects/Loom/IR/LoomOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Loom/IR/LoomAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Loom/IR/LoomOpsTypes.h.inc"

// ShardingRule.h first: the interface's methods return it.
#include "dialects/Loom/IR/ShardingRule.h"

#include "dialects/Loom/IR/LoomInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/Loom/IR/LoomOps.h.inc"

namespace loom {

/// Resolves the loom.mesh named `mesh` from `from`, or returns null.
MeshOp lookupMesh(mlir::Operation *from, mlir::FlatSymbolRefAttr mesh,
                  mlir::SymbolTableCollection *tables = nullptr);

/// Checks `sharding` against `mesh` and the annotated `type`: rank, known
/// axes, divisibility of static dimensions. Emits through `emitError`.
mlir::LogicalResult
verifySharding(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
               ShardingAttr sharding, MeshAttr mesh, mlir::Type type);

/// Product of the sizes of `axes` (names of axes of `mesh`).
int64_t getGroupSize(MeshAttr mesh, mlir::ArrayAttr axes);

/// The shape of a ranked tensor, or the logical shape of a qtensor;
/// std::nullopt for any other type.
std::optional<llvm::ArrayRef<int64_t>> getTensorShape(mlir::Type type);

/// Numpy broadcast of two shapes; std::nullopt when they do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// The output size of one spatial dimension of a window op (loom.conv,
/// loom.pool): floor((size + padBegin + padEnd - dilation*(kernel-1) - 1) /
/// stride) + 1, or with `ceilMode` the ceiling, less one when the last
/// window would start past the input and its begin pad (ONNX Runtime and
/// PyTorch). At most 0 when no window fits.
int64_t windowOutputSize(int64_t size, int64_t kernel, int64_t stride,
                         int64_t dilation, int64_t padBegin, int64_t padEnd,
                         bool ceilMode = false);

/// Attaches ShardingRuleOpInterface to the loom ops (ShardingRules.cpp);
/// called by LoomDialect::initialize.
void attachShardingRules(mlir::MLIRContext *context);

} // namespace loom

#endif // LOOM_DIALECT_LOOM_IR_LOOMDIALECT_H
