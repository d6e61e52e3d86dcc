//===- GemmWeights.h - weights that are GEMM right operands -----*- C++ -*-===//
//
// The runtime packs a weight into the f32 GEMM's panels when it loads it,
// rather than on the first call, when the manifest says the weight is a
// right operand of `loom_rt_sgemm` and how it is stored ("gemm_b",
// docs/BUNDLE.md). Only the lowering knows which matmuls became GEMM calls
// (small products stay generated loops): matmulByGemm marks its kernels,
// and loom-convert-loom-to-linalg records the weights they read before it
// drops the loom argument attributes.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_PASSES_LOWERING_GEMMWEIGHTS_H
#define LOOM_PASSES_LOWERING_GEMMWEIGHTS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace loom::lowering {

/// On a loom_cpu.kernel that calls loom_rt_sgemm: its trans_b (BoolAttr).
constexpr llvm::StringLiteral kGemmRhsAttrName = "loom_cpu.gemm_b";

/// Follows the right operand of every marked kernel back to the entry
/// point's weight argument (through the calls of outlined layers: a layer's
/// argument is what each call passes in its place), adds `gemm_b = "kn"`
/// ([K, N], trans_b 0) or `"nk"` ([N, K], trans_b 1) to that weight's
/// dictionary in the module's `loom.entry_points` (which the bundle writer
/// reads), and removes the marks. A weight read in both orientations is
/// not marked (it is then packed on its first use).
void recordGemmWeights(mlir::ModuleOp module);

} // namespace loom::lowering

#endif // LOOM_PASSES_LOWERING_GEMMWEIGHTS_H
