//===- QuantKernels.h - generated quantized matmul kernels ------*- C++ -*-===//
//
// Vector-dialect kernels for loom.qmatmul on CPU (docs/QUANTIZE.md): the
// weight stays in its blocks (GGUF q4_0/q4_1/q8_0 or Loom int4/int8) and is
// unpacked in registers, block by block, next to the activations.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_LOWERING_QUANTKERNELS_H
#define LOOM_PASSES_LOWERING_QUANTKERNELS_H

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace loom {

/// Activations of the generated kernels.
enum class QKernelActivations {
  F32, ///< f32 activations times unpacked weights (the accurate path)
  I8,  ///< activations quantized to int8 per weight block, integer dots
  /// activations as three int8 levels per block, x = d (a + b / 254 +
  /// c / 254^2) up to d / 2 / 254^2: integer dots, about f32's accuracy
  I8x3,
};

/// The int8 levels of the activations of `act` (0: f32 activations). The
/// int8 kernels take, after y, scratch for M rows of x: codes
/// [M, levels K] i8, scales [M, K / block] f32, code offsets
/// [M, levels K / block] i32 and sums of x [M, K / block] f32.
inline int64_t activationLevels(QKernelActivations act) {
  return act == QKernelActivations::I8x3 ? 3
         : act == QKernelActivations::I8 ? 1
                                         : 0;
}

/// Whether a generated kernel exists for `q` (and the reason when not).
bool hasQMatmulKernel(QuantAttr q, std::string *why = nullptr);

/// Rows per group of the interleaved weight layout: the 8 lanes of a
/// 256-bit integer dot product.
constexpr int64_t kQWeightInterleaveRows = 8;

/// The interleaved layout of a quantized weight's [N, R] bytes
/// (docs/QUANTIZE.md), which the launcher makes at load: each full group
/// of `rows` rows is stored block position by block position; for each,
/// the `fields` header fields of `fieldBytes` (scale, min) of the group's
/// rows, field by field, then the values in units of `unitBytes`, the
/// group's rows' unit u next to each other. The rows after the last full
/// group stay as they are.
struct QWeightInterleave {
  int64_t rows = 0, blockBytes = 0, fields = 0, fieldBytes = 0, unitBytes = 0;
};
QWeightInterleave interleaveOf(QuantAttr q);

/// How a loom.qmatmul lowers on the CPU.
struct QMatmulLowering {
  bool kernel = false; ///< a generated kernel; else dequantize + GEMM
  QKernelActivations act = QKernelActivations::F32;
  /// The instruction-set extensions of the module's loom.target may be used
  /// (off for activations recorded as "int8-portable"/"int8x3-portable").
  bool targetIsa = true;
};

/// Whether `mode` is a value of the passes' `qmatmul` option: empty (as
/// recorded on the op), f32, i8, i8x3 or dequant.
bool isQMatmulMode(llvm::StringRef mode);

/// The lowering of `op`: a generated kernel for f32 activations of rank >= 2,
/// an f32 result and a format with a kernel, with the activations that
/// `loomc --quant-act` recorded (`quant_activations`), unless `mode` (the
/// passes' `qmatmul` option: f32, i8, i8x3 or dequant) overrides it.
/// `weight` is the weight's type (the operand's, before the lowering turns
/// it into bytes).
QMatmulLowering chooseQMatmulLowering(QMatmulOp op, QTensorType weight,
                                      llvm::StringRef mode = "");

/// Tuning of the generated kernels (pass options; unset: their choice).
struct QKernelTuning {
  int64_t mr = 0, nr2 = 0, nr1 = 0; ///< register tile MRxNR2xNR1; 0: unset
  /// Software prefetch: bytes ahead in the weight row, 0: none, -N: N
  /// tiles ahead.
  std::optional<int64_t> prefetchBytes;
};

/// Parses the options `tile` ("MRxNR2xNR1", each 1 to 64) and `prefetch`
/// (an integer) into `tuning`, empty ones leaving the kernels' choice;
/// false with `error` set on anything else.
bool parseQKernelTuning(llvm::StringRef tile, llvm::StringRef prefetch,
                        QKernelTuning &tuning, std::string &error);

/// The private function (created in `module` on first use, one per scheme,
/// K and activation kind)
///   func @__loom_qmm_...(%x: memref<?xKxf32>, %w: memref<?xRxi8>,
///                        %y: memref<?x?xf32>)
/// computing y[m, n] = sum_k x[m, k] * dequant(w)[n, k], where w holds N
/// rows of R = K / block * blockBytes bytes. With int8 activations the
/// kernel takes four scratch buffers after y, allocated by the caller for M
/// rows: codes memref<?xKxi8>, scales, code offsets (i32) and sums of x
/// (memref<?x(K/block)x...>). Its instructions follow the module's
/// `loom.target` (#loom.cpu_target): AVX512-VNNI (vpdpbusd) when it has
/// avx512vnni and avx512vl, AVX2 byte dot products when it has avx2, generic
/// vector code otherwise or without the attribute (never the host's).
/// `targetIsa`: off, generic code whatever the target.
/// `interleaved`: the weight is in the interleaved layout (interleaveOf;
/// int8 activations only). A new kernel is built through `b` (the calling
/// pattern's rewriter) at the end of `module`.
mlir::func::FuncOp getOrCreateQMatmulKernel(mlir::OpBuilder &b,
                                            mlir::ModuleOp module, QuantAttr q,
                                            int64_t k, QKernelActivations act,
                                            bool targetIsa = true,
                                            bool interleaved = false,
                                            const QKernelTuning &tuning = {});

} // namespace loom

#endif // LOOM_PASSES_LOWERING_QUANTKERNELS_H
