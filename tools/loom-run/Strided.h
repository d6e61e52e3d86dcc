//===- Strided.h - strided element copies for loom-run ----------*- C++ -*-===//
//
// Copies between two strided views of the same shape (MLIR memref layout:
// strides in elements, possibly zero or negative). Shared by memrefCopy (the
// symbol generated code calls) and by loom-run's output writer.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUN_STRIDED_H
#define LOOM_RUN_STRIDED_H

#include <cstdint>
#include <vector>

namespace loom::run {

/// Copies every element of a `rank`-d view of `sizes` from `src` (strides
/// `srcStrides`) to `dst` (strides `dstStrides`); both pointers point at the
/// element [0, ..., 0]. Rank 0 copies one element; an empty shape copies
/// nothing.
void copyStrided(int64_t elemSize, int64_t rank, const int64_t *sizes,
                 const char *src, const int64_t *srcStrides, char *dst,
                 const int64_t *dstStrides);

/// The interleaved layout of a quantized weight (docs/QUANTIZE.md): copies
/// the [N, R] bytes of `src` (strides `srcStrides`, in bytes) to the
/// contiguous `dst` with each full group of `rows` rows stored unit by unit
/// (`unitBytes` per unit, R a multiple of it): byte u of unit c of row
/// g * rows + j lands at g * rows * R + (c * rows + j) * unitBytes + u.
/// Rows after the last full group are copied as they are.
void interleaveRows(const char *src, const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &srcStrides, int64_t rows,
                    int64_t unitBytes, char *dst);

/// Row-major contiguous strides of `sizes` into `strides`.
void rowMajorStrides(int64_t rank, const int64_t *sizes, int64_t *strides);

} // namespace loom::run

#endif // LOOM_RUN_STRIDED_H
