//===- Passes.h - the lower phase's passes ----------------------*- C++ -*-===//

#ifndef LOOM_PASSES_LOWERING_PASSES_H
#define LOOM_PASSES_LOWERING_PASSES_H

#include "dialects/Loom/IR/LoomDialect.h"
#include "passes/Lowering/KernelCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace loom {

#define GEN_PASS_DECL
#include "passes/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Lowering/Passes.h.inc"

/// Options of the lower phase (loom-lower-pipeline; loomc's flags).
struct LowerPipelineOptions {
  /// loom-prepare-entry-points{interleave}.
  bool interleave = true;
  /// How every loom.qmatmul lowers (f32, i8, i8x3, dequant; empty: each
  /// op's quant_activations).
  std::string qmatmul;
  /// loom-convert-loom-to-linalg's tuning knobs.
  bool gemm = true;
  std::string qmmTile;
  std::string qmmPrefetch;
  /// Run loom-outline-repeated-layers first (one function per distinct
  /// repeated layer).
  bool outlineLayers = true;
};

/// Appends the lower phase: entry points prepared and recorded for the
/// bundle, then loom -> linalg -> buffers -> loops -> the LLVM dialect with
/// the loom_entry_<name> wrappers and checked allocations.
void buildLowerPassPipeline(mlir::OpPassManager &pm,
                            const LowerPipelineOptions &options = {});

/// Name of the argument attribute that describes an outlined weight.
constexpr llvm::StringLiteral kWeightArgAttrName = "loom.weight";

/// On an entry point whose repeated layers loom-loop-repeated-layers made
/// a loop: the slot of each argument in the launcher's `void **args`
/// array (-1: the array itself), read by loom-pack-entry-points.
constexpr llvm::StringLiteral kArgSlotsAttrName = "loom.arg_slots";

/// The fewest iterations of an scf.parallel worth a thread, when its
/// producer knows better than loom-outline-parallel-loops' estimate.
constexpr llvm::StringLiteral kParallelGrainAttrName = "loom.parallel_grain";

} // namespace loom

#endif // LOOM_PASSES_LOWERING_PASSES_H
