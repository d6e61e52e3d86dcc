//===- QMatmulKernelGen.h - gpu.func kernels for loom.qmatmul ---*- C++ -*-===//
//
// Generates the GPU kernels of a quantized matmul `y[m, n] = sum_k x[m, k] *
// dequant(W)[n, k]` as MLIR text (`gpu.func` ops in the gpu, arith, scf,
// memref and llvm dialects), specialised for one weight format and one static
// [N, K]. Plain C++ with no MLIR dependency: GpuTarget.cpp parses the text
// into a module and compiles it through NVVM to PTX and a cubin.
//
// Every kernel takes the same arguments (the launch ABI the runtime uses,
// include/loom/runtime/cuda.h):
//   (ptr<1> w, ptr<1> x, ptr<1> y, i32 m)
// w: the weight as stored: N rows of K / block blocks, each block
// `scale | [min] | [zero point] | values` (GGUF's q4_0/q4_1/q8_0 blocks, and
// Loom's int4/int8 as include/loom/Quant/Quant.h defines them), x: [m, K]
// activations, y: [m, N] outputs, row-major.
//
// Variants (docs/GPU.md):
//   <base>_gemv<B>, B = 1..8: batch B, two rows per warp, 128 threads;
//   <base>_tiled: any batch, 64x64 output tiles, 256 threads.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_LIB_TARGET_GPUTARGET_QMATMULKERNELGEN_H
#define LOOM_LIB_TARGET_GPUTARGET_QMATMULKERNELGEN_H

#include "loom/Support/DType.h"
#include "loom/Support/QuantFormat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::gpu {

// The weight formats and modes are the one vocabulary of quant formats,
// quant::Format and quant::Mode (loom/Support/QuantFormat.h), with their
// names, bits and block bytes.

/// Element types of activations, outputs and scales: the one dtype
/// vocabulary (loom/Support/DType.h), of which the kernels take the float
/// types f32, f16 and bf16 (isKernelElemType).
using ElemType = DType;

/// Whether the kernels are generated for `t`: f32, f16, bf16.
constexpr bool isKernelElemType(ElemType t) {
  return t == ElemType::F32 || t == ElemType::F16 || t == ElemType::BF16;
}

/// One quantized matmul shape and weight format.
struct QMatmulSpec {
  quant::Format format = quant::Format::Q4_0;
  int64_t block = 32;                        ///< elements per block along K
  quant::Mode mode = quant::Mode::ZeroPoint; ///< q4_0: zero point 8 (implicit)
  ElemType scale = ElemType::F16; ///< scale (and min) type of int4/int8
  ElemType act = ElemType::F32;   ///< x and y element type (f32 or f16)
  int64_t n = 0;                  ///< output features (weight rows)
  int64_t k = 0;                  ///< input features (weight columns)
};

/// The spec of a GGUF format (block, mode and scale fixed by the format).
QMatmulSpec ggufSpec(quant::Format format, int64_t n, int64_t k,
                     ElemType act = ElemType::F32);

/// Parses "f32", "f16", "bf16" (DType's names of the kernel types).
bool parseElemType(const std::string &s, ElemType &out);
/// DType's name: "f32", "f16", "bf16".
const char *elemTypeName(ElemType t);

/// Empty when the spec can be generated, else what is wrong and what to do.
std::string validate(const QMatmulSpec &spec);

/// "loom_qmm_<format>[_b<block>_<mode>_<scale>]_n<N>_k<K>_<act>".
std::string kernelBaseName(const QMatmulSpec &spec);
std::string gemvKernelName(const QMatmulSpec &spec, int batch);
std::string tiledKernelName(const QMatmulSpec &spec);

/// Bytes of the [N, K] weight: N rows of K / block blocks.
int64_t weightBytes(const QMatmulSpec &spec);

/// How the GEMV kernels turn 4-bit codes into numbers (docs/GPU.md,
/// "Kernels"). 8-bit formats and the tiled kernel always use Scalar.
enum class GemvDequant {
  /// Two codes per `lop3` as the f16 pair 1024 + q (`(w & 0x000F000F) |
  /// 0x64006400`), centred to q - 8 by one hsub2/hfma2 per pair. With f16
  /// activations the products are f16x2 FMAs (runs of 8 per f16 lane, then
  /// f32); with f32 activations each code is converted to f32.
  Packed,
  /// One code per f32: `bitcast(u | 0x4B000000) - 2^23` (the first
  /// generator; kept for A/B measurements on a GPU).
  Scalar,
};

/// Parses "packed", "scalar" (false if unknown).
bool parseGemvDequant(const std::string &s, GemvDequant &out);

struct KernelOptions {
  bool gemv = true; ///< emit <base>_gemv1 .. _gemv<maxGemvBatch>
  int maxGemvBatch = 8;
  GemvDequant gemvDequant = GemvDequant::Packed;
  bool tiled = true; ///< emit <base>_tiled
  /// Emit host functions instead of kernels, for testing the kernels'
  /// arithmetic on a CPU (test/gpu/QMatmulEmulationTest.cpp): each is a
  /// `func.func` taking (w, x, y, m, thread id, block id x, block id y,
  /// shared x tile, shared w tile), barriers call @loom_emu_barrier, and
  /// the GEMV kernels store each lane's partial sums to
  /// y[((b * N + row) * 32 + lane)] instead of reducing across the warp.
  bool hostEmulation = false;
};

/// The `gpu.func` ops of `spec` (no enclosing gpu.module). `validate(spec)`
/// must be empty.
std::string emitQMatmulKernels(const QMatmulSpec &spec,
                               const KernelOptions &options = {});

/// A whole MLIR module: `module attributes {gpu.container_module} {
/// gpu.module @<moduleName> { kernels of every spec } }`. Duplicate specs
/// are emitted once.
std::string emitQMatmulModule(const std::string &moduleName,
                              const std::vector<QMatmulSpec> &specs,
                              const KernelOptions &options = {});

/// The kernel of a batch of `m` rows and its launch geometry, as the
/// runtime's loom_cuda_qmatmul picks them (include/loom/runtime/cuda.h,
/// LOOM_CUDA_QMM_*): `<base>_gemv<m>` for m <= 8 (128 threads, 8 rows per
/// block), else `<base>_tiled` (256 threads, 64x64 outputs per block). No
/// dynamic shared memory.
struct QMatmulLaunch {
  std::string kernel;
  int64_t gridX = 1, gridY = 1;
  int64_t threads = 1;
};
QMatmulLaunch qmatmulLaunch(const QMatmulSpec &spec, int64_t m,
                            const KernelOptions &options = {});

} // namespace loom::gpu

#endif // LOOM_LIB_TARGET_GPUTARGET_QMATMULKERNELGEN_H
