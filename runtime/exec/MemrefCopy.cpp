//===- MemrefCopy.cpp - memrefCopy for generated code
//------------------------===//
//
// Code lowered from `memref.copy` of non-identity layouts calls
//   void memrefCopy(int64_t elemSize, UnrankedMemRef *src, UnrankedMemRef *dst)
// (the symbol MLIR's CRunnerUtils provides). loom-run exports it from the
// executable so that the bundle's library resolves it at dlopen time; it is
// written here from the documented layout, without any MLIR header:
//   UnrankedMemRef = {int64_t rank; void *descriptor}
//   descriptor     = {T *allocated, T *aligned, int64_t offset,
//                     int64_t sizes[rank], int64_t strides[rank]}
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Strided.h"

#include <cstring>
#include <vector>

namespace loom::run {

void rowMajorStrides(int64_t rank, const int64_t *sizes, int64_t *strides) {
  int64_t s = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= sizes[d];
  }
}

namespace {
/// Piece `p` (N bytes) of each of `rows` rows `rowStride` apart, packed.
template <int64_t N>
void gatherFixed(const char *p, int64_t rowStride, int64_t rows, char *out) {
  for (int64_t j = 0; j < rows; ++j)
    std::memcpy(out + j * N, p + j * rowStride, N);
}
void gather(const char *p, int64_t bytes, int64_t rowStride, int64_t rows,
            char *out) {
  switch (bytes) {
  case 2:
    return gatherFixed<2>(p, rowStride, rows, out);
  case 4:
    return gatherFixed<4>(p, rowStride, rows, out);
  default:
    for (int64_t j = 0; j < rows; ++j)
      std::memcpy(out + j * bytes, p + j * rowStride, size_t(bytes));
  }
}
} // namespace

void interleaveRows(const char *src, const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &srcStrides,
                    const RowInterleave &il, char *dst) {
  const int64_t n = shape[0], r = shape[1];
  int64_t s0 = srcStrides[0];
  std::vector<char> rowMajor;
  if (srcStrides[1] != 1) {
    rowMajor.resize(size_t(n * r));
    const int64_t to[2] = {r, 1};
    copyStrided(1, 2, shape.data(), src, srcStrides.data(), rowMajor.data(),
                to);
    src = rowMajor.data();
    s0 = r;
  }
  const int64_t rows = il.rows, bb = il.blockBytes;
  const int64_t head = il.fields * il.fieldBytes;
  const int64_t units = (bb - head) / il.unitBytes;
  const int64_t groups = n / rows;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < r / bb; ++c) {
      const char *block = src + g * rows * s0 + c * bb;
      char *out = dst + g * rows * r + c * rows * bb;
      for (int64_t f = 0; f < il.fields; ++f)
        gather(block + f * il.fieldBytes, il.fieldBytes, s0, rows,
               out + f * rows * il.fieldBytes);
      for (int64_t u = 0; u < units; ++u)
        gather(block + head + u * il.unitBytes, il.unitBytes, s0, rows,
               out + rows * head + u * rows * il.unitBytes);
    }
  for (int64_t row = groups * rows; row < n; ++row)
    std::memcpy(dst + row * r, src + row * s0, size_t(r));
}

void copyStrided(int64_t elemSize, int64_t rank, const int64_t *sizes,
                 const char *src, const int64_t *srcStrides, char *dst,
                 const int64_t *dstStrides) {
  if (elemSize <= 0)
    return;
  if (rank <= 0) {
    std::memcpy(dst, src, size_t(elemSize));
    return;
  }
  int64_t total = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] <= 0)
      return;
    total *= sizes[d];
  }
  // Both views contiguous row-major (ignoring size-1 dims): one memcpy.
  bool contiguous = true;
  for (int64_t d = rank - 1, expect = 1; d >= 0; --d) {
    if (sizes[d] != 1 && (srcStrides[d] != expect || dstStrides[d] != expect)) {
      contiguous = false;
      break;
    }
    expect *= sizes[d];
  }
  if (contiguous) {
    std::memmove(dst, src, size_t(total * elemSize));
    return;
  }

  // Odometer over the outer dims; the innermost dim is a row.
  const int64_t inner = sizes[rank - 1];
  const int64_t sIn = srcStrides[rank - 1] * elemSize;
  const int64_t dIn = dstStrides[rank - 1] * elemSize;
  const bool rowContiguous = sIn == elemSize && dIn == elemSize;
  int64_t small[16] = {0};
  std::vector<int64_t> big;
  int64_t *index = small;
  if (rank > 16) {
    big.assign(size_t(rank), 0);
    index = big.data();
  }
  int64_t rows = total / inner;
  const char *s = src;
  char *d = dst;
  for (int64_t row = 0; row < rows; ++row) {
    if (rowContiguous) {
      std::memcpy(d, s, size_t(inner * elemSize));
    } else {
      const char *sp = s;
      char *dp = d;
      for (int64_t i = 0; i < inner; ++i, sp += sIn, dp += dIn)
        std::memcpy(dp, sp, size_t(elemSize));
    }
    // Advance the odometer over dims [0, rank-1).
    for (int64_t dim = rank - 2; dim >= 0; --dim) {
      if (++index[dim] < sizes[dim]) {
        s += srcStrides[dim] * elemSize;
        d += dstStrides[dim] * elemSize;
        break;
      }
      s -= (sizes[dim] - 1) * srcStrides[dim] * elemSize;
      d -= (sizes[dim] - 1) * dstStrides[dim] * elemSize;
      index[dim] = 0;
    }
  }
}

} // namespace loom::run

namespace {
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};
// The ranked descriptor as 8-byte words.
struct DescriptorView {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
};
DescriptorView view(const UnrankedMemRef &m) {
  auto *words = static_cast<int64_t *>(m.descriptor);
  DescriptorView v;
  std::memcpy(&v.aligned, &words[1], sizeof(void *));
  v.offset = words[2];
  v.sizes = words + 3;
  v.strides = words + 3 + m.rank;
  return v;
}
} // namespace

extern "C" __attribute__((visibility("default"), used)) void
memrefCopy(int64_t elemSize, UnrankedMemRef *srcArg, UnrankedMemRef *dstArg) {
  DescriptorView src = view(*srcArg);
  DescriptorView dst = view(*dstArg);
  loom::run::copyStrided(elemSize, srcArg->rank, src.sizes,
                         src.aligned + src.offset * elemSize, src.strides,
                         dst.aligned + dst.offset * elemSize, dst.strides);
}
