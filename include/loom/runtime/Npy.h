//===- Npy.h - minimal .npy reader/writer for loom-run ----------*- C++ -*-===//
//
// NPY format versions 1.0, 2.0 (and 3.0, same as 2.0 with a UTF-8 header),
// little-endian scalar dtypes only, C order only.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_NPY_H
#define LOOM_RUNTIME_NPY_H

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace loom::run {

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, FreeDeleter>;

/// Allocates `bytes` (at least 1) aligned to 64 bytes, zero-filled when
/// `zero`. Returns null when out of memory.
Buffer allocBuffer(int64_t bytes, bool zero = false);

struct NpyArray {
  /// Normalised descr: '<f4', '|i1', '|b1', ... (byte order '=' becomes '<',
  /// one-byte types get '|').
  std::string descr;
  int64_t itemSize = 0;
  std::vector<int64_t> shape;
  int64_t numElements() const;
  int64_t numBytes() const { return numElements() * itemSize; }
  Buffer data; ///< 64-byte aligned, numBytes() bytes (at least 1 allocated)
};

/// Reads `path` (a regular file: a FIFO or device is refused without
/// blocking). The data size the header promises is checked against the
/// file (every size product with overflow checks) before anything is
/// allocated. On failure returns false with a message in *error that says
/// what is wrong (the caller names the file) (Fortran order, big-endian,
/// structured or object dtypes, truncated data, ...).
bool readNpy(const std::string &path, NpyArray &out, std::string *error);

/// The same from an in-memory image (the fuzzer's entry point).
bool readNpyBytes(const void *data, size_t size, NpyArray &out,
                  std::string *error);

/// bytes = prod(shape) * itemSize; false with a message naming the shape if
/// a dimension is negative or a product overflows 64 bits.
bool npyByteCount(const std::vector<int64_t> &shape, int64_t itemSize,
                  int64_t &bytes, std::string *error);

/// "(2, 3)", "(5,)", "()": a shape as numpy writes it.
std::string npyShapeString(const std::vector<int64_t> &shape);

/// Parses only the header of an in-memory .npy image (for tests).
bool parseNpyHeader(const std::string &header, std::string &descr,
                    bool &fortran, std::vector<int64_t> &shape,
                    std::string *error);

/// Writes a C-order array as NPY 1.0 (2.0 if the header needs it) to `path`
/// through a temporary file in the same directory that is renamed over
/// `path` once complete.
bool writeNpy(const std::string &path, const std::string &descr,
              const std::vector<int64_t> &shape, const void *data,
              int64_t nbytes, std::string *error);

/// The first half of writeNpy: writes the array to a new temporary file in
/// the directory of `path` and returns its name in *tmp; the caller renames
/// it over `path` (or unlinks it). loom-run writes every output this way and
/// renames them all only once every one is written (all or nothing).
bool writeNpyTemp(const std::string &path, const std::string &descr,
                  const std::vector<int64_t> &shape, const void *data,
                  int64_t nbytes, std::string *tmp, std::string *error);

/// Item size of a normalised descr ('<f4' -> 4), 0 if not one we support.
int64_t npyItemSize(const std::string &descr);

} // namespace loom::run

#endif // LOOM_RUNTIME_NPY_H
