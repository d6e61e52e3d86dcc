//===- WeightStore.h - Tensors outside the IR, memory-mapped ----*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Every weight that Loom handles lives outside the IR: a TensorRef names a
// byte range of a file together with its element format and logical shape.
// The WeightStore maps each file once (read-only, MAP_PRIVATE, never copied)
// and hands out bounds-checked byte spans for TensorRefs.
//
// Shapes are outermost-first (PyTorch order): a GGUF tensor with ggml dims
// ne = {4096, 11008} (innermost first) has shape {11008, 4096}. Strides are in
// elements; for block formats (q4_0, q4_1, q8_0) they count blocks along the
// innermost dimension, whose extent must be a multiple of the block size.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FORMATS_WEIGHTSTORE_H
#define LOOM_FORMATS_WEIGHTSTORE_H

#include "loom/Formats/Error.h"
#include "loom/Support/DType.h"
#include "loom/Support/MappedFile.h"
#include "loom/Support/QuantFormat.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::fmt {

/// Storage format of one tensor: a plain element type or a block format.
enum class ElementType : uint8_t {
  F32,
  F16,
  BF16,
  F64,
  I8,
  I16,
  I32,
  I64,
  U8,
  Bool,
  Q4_0,
  Q4_1,
  Q8_0,
};

/// The plain element types are the dtypes of the bundle
/// (loom/Support/DType.h) with two differences, stated here once: `bool`
/// is DType's `i1` (one byte per element either way) and `i16` has no
/// DType (a checkpoint may hold it, no bundle passes it). The block formats
/// q4_0, q4_1, q8_0 are storage formats, not dtypes: std::nullopt.
std::optional<DType> toDType(ElementType type);
/// The storage format of a dtype (every DType has one).
ElementType toElementType(DType type);

/// Lower-case name ("f32", "q4_0", ...).
std::string_view elementTypeName(ElementType type);
/// Inverse of elementTypeName.
std::optional<ElementType> parseElementType(std::string_view name);

/// Elements per block: 32 for q4_0/q4_1/q8_0, 1 for every plain type.
uint64_t blockElements(ElementType type);
/// Bytes per block: q4_0 18, q4_1 20, q8_0 34; the element size otherwise.
uint64_t blockBytes(ElementType type);
/// True for q4_0, q4_1 and q8_0.
inline bool isBlockFormat(ElementType type) { return blockElements(type) > 1; }
/// The quantization format of a block format (loom/Support/QuantFormat.h,
/// the one vocabulary); std::nullopt for a plain type.
std::optional<quant::Format> blockFormatOf(ElementType type);
/// The block element type of a GGUF format; std::nullopt for Loom's own
/// int4/int8, which the weight store does not hold.
std::optional<ElementType> blockElementType(quant::Format format);

/// Number of elements of a shape; an Error when a dimension is negative or
/// the product overflows int64. `what` prefixes the message.
Result<uint64_t> numElements(std::span<const int64_t> shape,
                             std::string_view what);
/// Bytes taken by `elements` elements of `type`; an Error when the count is
/// not a whole number of blocks or the size overflows.
Result<uint64_t> storageBytes(ElementType type, uint64_t elements,
                              std::string_view what);
/// Contiguous strides (see the file comment) for a shape.
std::vector<int64_t> contiguousStrides(ElementType type,
                                       std::span<const int64_t> shape);

/// A tensor stored outside the IR.
struct TensorRef {
  std::string name;
  /// Path of the file that holds the bytes.
  std::string file;
  /// Absolute byte offset of the first byte in `file`.
  uint64_t offset = 0;
  uint64_t nbytes = 0;
  ElementType format = ElementType::F32;
  /// Outermost first.
  std::vector<int64_t> shape;
  /// In elements (in blocks along the innermost dim for block formats).
  std::vector<int64_t> strides;

  uint64_t numElements() const;
};

//===----------------------------------------------------------------------===//
// Memory mapping
//===----------------------------------------------------------------------===//

/// The mapping shared with the runtime (loom/Support/MappedFile.h).
using loom::MappedFile;

/// Maps each file once and returns bounds-checked spans of TensorRefs.
/// Thread-safe.
class WeightStore {
public:
  /// The mapping of `path`, opened on first use.
  Result<const MappedFile *> file(const std::string &path);
  /// The bytes of `ref`; an Error when they run past the end of the file.
  Result<std::span<const std::byte>> bytes(const TensorRef &ref);
  /// Adopts an existing mapping (a reader that already mapped the file).
  const MappedFile *adopt(std::shared_ptr<MappedFile> mapping);

private:
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<MappedFile>> files;
};

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

/// IEEE half to float, exact (subnormals, infinities and NaN payloads kept).
float f16ToF32(uint16_t bits);
/// Float to IEEE half, round to nearest even; NaN stays NaN.
uint16_t f32ToF16(float value);
/// bfloat16 to float, exact.
float bf16ToF32(uint16_t bits);
/// Float to bfloat16, round to nearest even; NaN is made quiet (as ggml).
uint16_t f32ToBf16(float value);

/// Decodes `elements` values of `type` from `src` into `dst` as float.
/// Block formats decode bit-exactly as the `gguf` Python package
/// (gguf.quants.dequantize) does. `src` must hold exactly
/// storageBytes(type, elements) bytes and `dst` `elements` floats.
Status dequantizeToF32(ElementType type, std::span<const std::byte> src,
                       std::span<float> dst);

/// 64-bit FNV-1a of a byte range (the checksum loom-inspect prints).
uint64_t fnv1a64(std::span<const std::byte> bytes);

} // namespace loom::fmt

#endif // LOOM_FORMATS_WEIGHTSTORE_H
