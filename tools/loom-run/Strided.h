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

namespace loom::run {

/// Copies every element of a `rank`-d view of `sizes` from `src` (strides
/// `srcStrides`) to `dst` (strides `dstStrides`); both pointers point at the
/// element [0, ..., 0]. Rank 0 copies one element; an empty shape copies
/// nothing.
void copyStrided(int64_t elemSize, int64_t rank, const int64_t *sizes,
                 const char *src, const int64_t *srcStrides, char *dst,
                 const int64_t *dstStrides);

/// Row-major contiguous strides of `sizes` into `strides`.
void rowMajorStrides(int64_t rank, const int64_t *sizes, int64_t *strides);

} // namespace loom::run

#endif // LOOM_RUN_STRIDED_H
