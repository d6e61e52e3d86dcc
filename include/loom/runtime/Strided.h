//===- Strided.h - strided element copies for loom-run ----------*- C++ -*-===//
//
// Copies between two strided views of the same shape (MLIR memref layout:
// strides in elements, possibly zero or negative). Shared by memrefCopy (the
// symbol generated code calls) and by loom-run's output writer.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_STRIDED_H
#define LOOM_RUNTIME_STRIDED_H

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

/// The interleaved layout of a quantized weight's [N, R] bytes
/// (docs/QUANTIZE.md): each full group of `rows` rows is stored block
/// position by block position (`blockBytes` per block, R a multiple of
/// it); for each, the `fields` header fields of `fieldBytes` bytes (scale,
/// min) of the group's rows, field by field, then the block's values in
/// units of `unitBytes`, the group's rows' unit u next to each other. The
/// rows after the last full group stay as they are.
struct RowInterleave {
  int64_t rows = 0, blockBytes = 0, fields = 0, fieldBytes = 0, unitBytes = 0;
};

/// Copies the [N, R] bytes of `src` (strides `srcStrides`, in bytes) to the
/// contiguous `dst` in the layout `il` (validated by the caller).
void interleaveRows(const char *src, const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &srcStrides,
                    const RowInterleave &il, char *dst);

/// Row-major contiguous strides of `sizes` into `strides`.
void rowMajorStrides(int64_t rank, const int64_t *sizes, int64_t *strides);

} // namespace loom::run

#endif // LOOM_RUNTIME_STRIDED_H
