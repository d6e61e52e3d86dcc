//===- Gguf.h - GGUF v2/v3 reader -------------------------------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Reads a GGUF file (ggml-org/ggml docs/gguf.md): the header, every metadata
// key/value (arrays and nested arrays included), the tensor infos and the data
// section. Nothing is copied out of the file except tensor names and shapes:
// metadata values are views into the mapping, and arrays are decoded lazily
// (a 49152-entry tokenizer vocabulary costs nothing until it is read).
//
// The whole file is validated when it is opened, so that every view handed
// out afterwards is in bounds; a malformed file gives an Error that names the
// file, the key or tensor, and the byte offset.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FORMATS_GGUF_H
#define LOOM_FORMATS_GGUF_H

#include "loom/Formats/Error.h"
#include "loom/Formats/WeightStore.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace loom::fmt {

/// Metadata value types (gguf_type).
enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

/// "u8", "string", "array", ...
std::string_view ggufValueTypeName(GgufValueType type);

/// The ggml tensor type name for a type number ("Q4_K" for 12), or an empty
/// view for a number ggml does not define.
std::string_view ggmlTypeName(uint32_t ggmlType);
/// The weight-store format of a ggml type number, if Loom supports it
/// (F32, F16, Q4_0, Q4_1, Q8_0, BF16, I8, I16, I32, I64, F64).
std::optional<ElementType> ggmlTypeToElementType(uint32_t ggmlType);

/// A metadata value: a view into the (validated) file bytes.
class GgufValue {
public:
  GgufValueType type() const { return ty; }
  /// Absolute byte offset of the value's payload in the file.
  uint64_t offset() const { return off; }

  bool isArray() const { return ty == GgufValueType::Array; }
  bool isString() const { return ty == GgufValueType::String; }

  /// Any integer type whose value is non-negative (bools are not integers).
  std::optional<uint64_t> asUInt() const;
  /// Any integer type whose value fits int64.
  std::optional<int64_t> asInt() const;
  /// f32 or f64 (integers are not converted).
  std::optional<double> asFloat() const;
  std::optional<bool> asBool() const;
  std::optional<std::string_view> asString() const;

  /// For arrays: the element type and the number of elements.
  GgufValueType elementType() const { return elemTy; }
  uint64_t size() const { return isArray() ? count : 0; }
  /// Element `i` of an array: O(1) for fixed-size element types, O(i) for
  /// strings and nested arrays. `i` must be < size().
  GgufValue operator[](uint64_t i) const;

  /// Iterates over the elements of an array in order, O(1) per step.
  class iterator {
  public:
    GgufValue operator*() const;
    iterator &operator++();
    bool operator!=(const iterator &o) const { return index != o.index; }
    bool operator==(const iterator &o) const { return index == o.index; }

  private:
    friend class GgufValue;
    const GgufValue *array = nullptr;
    const std::byte *pos = nullptr;
    uint64_t index = 0;
  };
  iterator begin() const;
  iterator end() const;

  /// The raw little-endian payload of an array of fixed-size elements
  /// (empty for strings and nested arrays); for scalars, their bytes.
  std::span<const std::byte> rawBytes() const;

private:
  friend class GgufParser;
  GgufValueType ty = GgufValueType::U8;
  GgufValueType elemTy = GgufValueType::U8;
  // Scalars: the value bytes. Strings: the characters. Arrays: the first
  // element.
  const std::byte *data = nullptr;
  // Payload size in bytes (strings: length; arrays: bytes of all elements).
  uint64_t len = 0;
  uint64_t count = 0;
  uint64_t off = 0;
};

/// One metadata key/value.
struct GgufKeyValue {
  std::string_view key;
  GgufValue value;
  /// Absolute byte offset of the key's length prefix.
  uint64_t offset = 0;
};

/// A parsed GGUF file.
class GgufFile {
public:
  const std::string &fileName() const { return name; }
  uint32_t version() const { return fileVersion; }
  uint64_t alignment() const { return align; }
  /// Absolute offset of the data section.
  uint64_t dataOffset() const { return dataStart; }
  uint64_t fileSize() const { return bytes.size(); }

  /// Metadata in file order.
  const std::vector<GgufKeyValue> &metadata() const { return kvs; }
  /// The value of `key`, or null.
  const GgufValue *find(std::string_view key) const;

  /// Tensors in file order; offsets are absolute, shapes outermost-first.
  const std::vector<TensorRef> &tensors() const { return refs; }
  /// ggml dims (innermost first) of tensor `i`, as stored.
  const std::vector<int64_t> &ggmlDims(size_t i) const { return dims[i]; }
  /// The tensor called `name`, or null.
  const TensorRef *findTensor(std::string_view name) const;

  /// Empty when every tensor's data lies in the file. A file opened with
  /// `dataOptional` whose header is whole but whose tensor data is absent
  /// or truncated: why (the first tensor that runs past the end); its
  /// tensors then have shapes, types and offsets but no bytes to read.
  const std::string &missingData() const { return missing; }

  /// The bytes of a tensor of this file (already bounds-checked; not to be
  /// called when missingData() is set).
  std::span<const std::byte> tensorBytes(const TensorRef &ref) const {
    return bytes.subspan(ref.offset, ref.nbytes);
  }
  /// The mapping, when the file was opened with openGguf (null when parsed
  /// from a caller's buffer). Hand it to WeightStore::adopt to share it.
  std::shared_ptr<MappedFile> mapping() const { return mapped; }

private:
  friend class GgufParser;
  std::string name;
  uint32_t fileVersion = 0;
  uint64_t align = 32;
  uint64_t dataStart = 0;
  std::span<const std::byte> bytes;
  std::vector<GgufKeyValue> kvs;
  std::unordered_map<std::string_view, size_t> kvIndex;
  std::vector<TensorRef> refs;
  std::vector<std::vector<int64_t>> dims;
  std::unordered_map<std::string_view, size_t> tensorIndex;
  std::shared_ptr<MappedFile> mapped;
  std::string missing;
};

/// Parses GGUF bytes owned by the caller (they must outlive the result).
/// `fileName` is used in messages and as TensorRef::file.
/// With `dataOptional`, a file whose header (metadata and tensor infos) is
/// whole parses even when the tensor data is absent or truncated
/// (GgufFile::missingData says so): planning reads only the header.
Result<GgufFile> parseGguf(std::span<const std::byte> bytes,
                           std::string fileName, bool dataOptional = false);
/// Maps `path` and parses it; the result keeps the mapping alive.
Result<GgufFile> openGguf(const std::string &path, bool dataOptional = false);

} // namespace loom::fmt

#endif // LOOM_FORMATS_GGUF_H
