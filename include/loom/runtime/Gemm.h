//===- loom/runtime/Gemm.h - f32 GEMM on packed weights ---------*- C++ -*-===//
//
// The runtime's own f32 GEMM for products whose right operand is a weight
// (docs/RUNTIME.md, "GEMM"): the weight is packed once into column panels
// of kGemmPanel columns (K rows of kGemmPanel floats per panel, the last
// panel padded with zeros) and a register-tiled micro-kernel chosen from
// the CPU's features (AVX-512F, AVX2 + FMA; never from a model name) runs
// over the panels. Each C element is summed in the same order whatever the
// split over threads, so results do not depend on the thread count. No
// LLVM, no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_GEMM_H
#define LOOM_RUNTIME_GEMM_H

#include <cstdint>
#include <memory>

struct loom_rt_ctx;

namespace loom::rt {

/// Columns per packed panel (one AVX-512 vector, two AVX2 vectors).
constexpr int64_t kGemmPanel = 16;

enum class GemmKernel {
  None,    ///< no packed kernel on this CPU (OpenBLAS or the blocked loop)
  Avx2Fma, ///< 6 x 16 tile, AVX2 + FMA
  Avx512,  ///< 12 x 16 tile, AVX-512F
};

/// The best kernel this CPU's features allow (cpuid).
GemmKernel bestGemmKernel();
/// Whether this CPU can run `k` (None: always).
bool gemmKernelSupported(GemmKernel k);
/// "avx2+fma 6x16", "avx512f 12x16", "none".
const char *gemmKernelName(GemmKernel k);

/// A right operand B [K, N] packed into ceil(N / kGemmPanel) panels.
struct PackedB {
  int64_t k = 0, n = 0;
  std::unique_ptr<float, void (*)(float *)> data{nullptr, nullptr};
  int64_t panels() const { return (n + kGemmPanel - 1) / kGemmPanel; }
};

/// Packs B (`transB`: b is [N, K] row-major, else [K, N]); null data when
/// out of memory.
PackedB packGemmB(bool transB, int64_t k, int64_t n, const float *b);

/// The floats a packed B [K, N] takes.
int64_t packedGemmBFloats(int64_t k, int64_t n);
/// Packs B as packGemmB does into `dst` (packedGemmBFloats(k, n) floats,
/// 64-byte aligned) and returns a PackedB that borrows it.
PackedB packGemmBInto(bool transB, int64_t k, int64_t n, const float *b,
                      float *dst);

/// C[m, n] = A[m, k] B with A row-major (leading dimension `lda`) and C
/// row-major (`ldc`), on kernel `kernel` (not None, supported by this CPU),
/// split over ctx's thread pool (null: the calling rank's, or serial).
void gemmPacked(loom_rt_ctx *ctx, GemmKernel kernel, int64_t m, const float *a,
                int64_t lda, const PackedB &b, float *c, int64_t ldc);

/// A weight packed at load (packWeightAtLoad) for the GEMMs that read it as
/// their right operand in orientation `transB`.
struct LoadPackedWeight {
  bool transB = false;
  std::shared_ptr<const PackedB> packed;
};

/// Packs weight B (`transB`: [N, K] row-major, else [K, N]) for the packed
/// kernel when this process runs weight products on it (null otherwise:
/// $LOOM_GEMM=openblas, no kernel for the CPU, or out of memory; the
/// products then take the path they took before). Counted in
/// gemmPackStats().atLoad. `mapped`: b is a mapped slice, whose packed
/// copy is shared with every later call for the same slice while it lives
/// (not for a temporary contiguous copy).
std::shared_ptr<const PackedB> packWeightAtLoad(bool transB, int64_t k,
                                                int64_t n, const float *b,
                                                bool mapped = false);

/// Registers on the rank's context that the weight at `b` (the pointer its
/// generated code passes to loom_rt_sgemm) has the packed form `w`: the
/// calls with that B, orientation, K and N take it without packing.
void registerLoadPackedWeight(loom_rt_ctx *ctx, const float *b,
                              LoadPackedWeight w);

/// Process-wide packing counters (tests, `loom-run --bench`): weights packed
/// at load, their packed bytes, and weights packed on their first use
/// (bundles without "gemm_b" in their manifest, weights mapped by hand).
struct GemmPackStats {
  int64_t atLoad = 0, atLoadBytes = 0, onFirstUse = 0;
};
GemmPackStats gemmPackStats();

} // namespace loom::rt

#endif // LOOM_RUNTIME_GEMM_H
