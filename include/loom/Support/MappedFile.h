//===- loom/Support/MappedFile.h - a whole file, memory-mapped --*- C++ -*-===//
//
// The one memory mapping of the plain C++ libraries: the model-file readers
// (lib/Formats) and the runtime (weights of a bundle) both use it. A file is
// mapped read-only and MAP_PRIVATE, never copied; a FIFO or device is
// refused without blocking. `share` maps each path once per process while
// anybody holds it (the ranks of a threads job share one mapping). No LLVM,
// no MLIR (the runtime links it).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_SUPPORT_MAPPEDFILE_H
#define LOOM_SUPPORT_MAPPEDFILE_H

#include "loom/Support/Result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace loom {

/// A whole file mapped read-only (MAP_PRIVATE). Move-only; unmaps on
/// destruction. An empty file maps to an empty span.
class MappedFile {
public:
  /// Maps `path`. Errors read "<label>: <reason>", the label being `label`
  /// or else the path (e.g. "w.bin: cannot open: No such file or
  /// directory"); slice() names the file the same way.
  static Result<MappedFile> open(const std::string &path,
                                 std::string_view label = {});
  /// The mapping of `path` shared by the whole process (mapped on first use,
  /// kept while anybody holds it).
  static Result<std::shared_ptr<const MappedFile>>
  share(const std::string &path, std::string_view label = {});

  MappedFile() = default;
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  const std::string &path() const { return filePath; }
  std::span<const std::byte> bytes() const { return {bytesPtr, length}; }
  const void *data() const { return bytesPtr; }
  int64_t size() const { return static_cast<int64_t>(length); }
  uint64_t fileSize() const { return length; }

  /// [offset, offset + size), or an Error naming the file, the offset, the
  /// size and the file's size when it does not fit.
  Result<const void *> slice(int64_t offset, int64_t size) const;

private:
  std::string filePath, fileLabel;
  const std::byte *bytesPtr = nullptr;
  size_t length = 0;
};

} // namespace loom

#endif // LOOM_SUPPORT_MAPPEDFILE_H
