//===- WeightStore.cpp - Memory-mapped tensors and conversions ------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/WeightStore.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace loom::fmt;

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

namespace {
struct TypeInfo {
  ElementType type;
  std::string_view name;
  uint64_t blockElems;
  uint64_t blockBytes;
};
/// A block format's row of the table: its name, block and bytes are those
/// of the one vocabulary (loom/Support/QuantFormat.h).
constexpr TypeInfo blockInfo(ElementType type, loom::quant::Format format) {
  return {type, loom::quant::formatName(format),
          static_cast<uint64_t>(loom::quant::ggufBlock(format)->elements),
          static_cast<uint64_t>(loom::quant::ggufBlock(format)->bytes)};
}
constexpr TypeInfo kTypes[] = {
    {ElementType::F32, "f32", 1, 4},
    {ElementType::F16, "f16", 1, 2},
    {ElementType::BF16, "bf16", 1, 2},
    {ElementType::F64, "f64", 1, 8},
    {ElementType::I8, "i8", 1, 1},
    {ElementType::I16, "i16", 1, 2},
    {ElementType::I32, "i32", 1, 4},
    {ElementType::I64, "i64", 1, 8},
    {ElementType::U8, "u8", 1, 1},
    {ElementType::Bool, "bool", 1, 1},
    blockInfo(ElementType::Q4_0, loom::quant::Format::Q4_0),
    blockInfo(ElementType::Q4_1, loom::quant::Format::Q4_1),
    blockInfo(ElementType::Q8_0, loom::quant::Format::Q8_0),
};
const TypeInfo &info(ElementType type) {
  return kTypes[static_cast<size_t>(type)];
}
} // namespace

std::optional<loom::DType> loom::fmt::toDType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return loom::DType::F32;
  case ElementType::F16:
    return loom::DType::F16;
  case ElementType::BF16:
    return loom::DType::BF16;
  case ElementType::F64:
    return loom::DType::F64;
  case ElementType::I8:
    return loom::DType::I8;
  case ElementType::I32:
    return loom::DType::I32;
  case ElementType::I64:
    return loom::DType::I64;
  case ElementType::U8:
    return loom::DType::U8;
  case ElementType::Bool:
    return loom::DType::I1;
  case ElementType::I16:
  case ElementType::Q4_0:
  case ElementType::Q4_1:
  case ElementType::Q8_0:
    return std::nullopt;
  }
  return std::nullopt;
}

ElementType loom::fmt::toElementType(loom::DType type) {
  // The inverse of toDType: each DType is exactly one plain format.
  for (const TypeInfo &t : kTypes)
    if (toDType(t.type) == type)
      return t.type;
  return ElementType::F32; // not reached (WeightStore.DTypes checks each)
}

std::optional<loom::quant::Format> loom::fmt::blockFormatOf(ElementType type) {
  switch (type) {
  case ElementType::Q4_0:
    return loom::quant::Format::Q4_0;
  case ElementType::Q4_1:
    return loom::quant::Format::Q4_1;
  case ElementType::Q8_0:
    return loom::quant::Format::Q8_0;
  default:
    return std::nullopt;
  }
}

std::optional<ElementType>
loom::fmt::blockElementType(loom::quant::Format format) {
  for (const TypeInfo &t : kTypes)
    if (blockFormatOf(t.type) == format)
      return t.type;
  return std::nullopt;
}

std::string_view loom::fmt::elementTypeName(ElementType type) {
  return info(type).name;
}

std::optional<ElementType> loom::fmt::parseElementType(std::string_view name) {
  for (const TypeInfo &t : kTypes)
    if (t.name == name)
      return t.type;
  return std::nullopt;
}

uint64_t loom::fmt::blockElements(ElementType type) {
  return info(type).blockElems;
}
uint64_t loom::fmt::blockBytes(ElementType type) {
  return info(type).blockBytes;
}

Result<uint64_t> loom::fmt::numElements(std::span<const int64_t> shape,
                                        std::string_view what) {
  // The product of the non-zero dimensions must fit int64 even when another
  // dimension is 0: strides are products of the same dimensions, and they
  // must be representable whatever the element count.
  uint64_t nonZero = 1;
  bool anyZero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d < 0)
      return makeError(what, ": dimension ", i, " is negative (", d, ")");
    if (d == 0) {
      anyZero = true;
      continue;
    }
    if (nonZero > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) /
                      static_cast<uint64_t>(d))
      return makeError(what,
                       ": the number of elements overflows int64 at "
                       "dimension ",
                       i, " (", d, ")");
    nonZero *= static_cast<uint64_t>(d);
  }
  return anyZero ? 0 : nonZero;
}

Result<uint64_t> loom::fmt::storageBytes(ElementType type, uint64_t elements,
                                         std::string_view what) {
  const TypeInfo &t = info(type);
  if (elements % t.blockElems != 0)
    return makeError(what, ": ", elements,
                     " elements are not a whole number "
                     "of ",
                     t.name, " blocks of ", t.blockElems);
  uint64_t blocks = elements / t.blockElems;
  if (blocks > std::numeric_limits<uint64_t>::max() / t.blockBytes)
    return makeError(what, ": the byte size of ", elements, " ", t.name,
                     " elements overflows 64 bits");
  return blocks * t.blockBytes;
}

std::vector<int64_t>
loom::fmt::contiguousStrides(ElementType type, std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    int64_t extent = shape[i];
    if (i + 1 == shape.size())
      extent /= static_cast<int64_t>(blockElements(type));
    // Callers validate the shape with numElements, so this does not
    // overflow; saturate anyway rather than wrap on an unvalidated shape.
    if (__builtin_mul_overflow(running, extent, &running))
      running = std::numeric_limits<int64_t>::max();
  }
  return strides;
}

uint64_t TensorRef::numElements() const {
  auto n = loom::fmt::numElements(shape, name);
  return n ? *n : 0;
}

//===----------------------------------------------------------------------===//
// WeightStore
//===----------------------------------------------------------------------===//

Result<const MappedFile *> WeightStore::file(const std::string &path) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = files.find(path);
  if (it != files.end())
    return static_cast<const MappedFile *>(it->second.get());
  auto mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.takeError();
  auto shared = std::make_shared<MappedFile>(mapped.take());
  const MappedFile *raw = shared.get();
  files.emplace(path, std::move(shared));
  return raw;
}

const MappedFile *WeightStore::adopt(std::shared_ptr<MappedFile> mapping) {
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = files.emplace(mapping->path(), mapping);
  return it->second.get();
}

Result<std::span<const std::byte>> WeightStore::bytes(const TensorRef &ref) {
  auto mapped = file(ref.file);
  if (!mapped)
    return mapped.takeError();
  uint64_t size = (*mapped)->fileSize();
  if (ref.offset > size || ref.nbytes > size - ref.offset)
    return makeError(ref.file, ": tensor '", ref.name, "' at byte ", ref.offset,
                     ": data [offset ", ref.offset, ", size ", ref.nbytes,
                     ") runs past the end of the file (size ", size, ")");
  return (*mapped)->bytes().subspan(ref.offset, ref.nbytes);
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

float loom::fmt::f16ToF32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    // Infinity or NaN; the payload is kept (as numpy does).
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: normalise the mantissa.
    uint32_t e = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t loom::fmt::f32ToF16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) // NaN: keep it quiet and keep the top payload bits.
    return sign | 0x7e00u | static_cast<uint16_t>((absx >> 13) & 0x3ffu);
  if (absx >= 0x477ff000u) // Rounds to infinity (>= 65520).
    return sign | 0x7c00u;
  if (absx < 0x38800000u) { // Below the smallest normal half: subnormal.
    if (absx < 0x33000000u) // Below half of the smallest subnormal.
      return sign;
    uint32_t exp = absx >> 23;
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp; // 14..24
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = ((absx >> 23) - 112) << 10 | ((absx >> 13) & 0x3ffu);
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
    ++half; // May carry into the exponent, which is the right result.
  return sign | static_cast<uint16_t>(half);
}

float loom::fmt::bf16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t loom::fmt::f32ToBf16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 64);
  return static_cast<uint16_t>((x + (0x7fffu + ((x >> 16) & 1))) >> 16);
}

namespace {
template <typename T> T load(const std::byte *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
} // namespace

Status loom::fmt::dequantizeToF32(ElementType type,
                                  std::span<const std::byte> src,
                                  std::span<float> dst) {
  auto bytes = storageBytes(type, dst.size(), "dequantize");
  if (!bytes)
    return bytes.takeError();
  if (*bytes != src.size())
    return makeError("dequantize: ", dst.size(), " ", elementTypeName(type),
                     " elements need ", *bytes, " bytes, got ", src.size());
  const std::byte *p = src.data();
  float *out = dst.data();
  const size_t n = dst.size();
  switch (type) {
  case ElementType::F32:
    if (n)
      std::memcpy(out, p, n * sizeof(float));
    break;
  case ElementType::F16:
    for (size_t i = 0; i < n; ++i)
      out[i] = f16ToF32(load<uint16_t>(p + 2 * i));
    break;
  case ElementType::BF16:
    for (size_t i = 0; i < n; ++i)
      out[i] = bf16ToF32(load<uint16_t>(p + 2 * i));
    break;
  case ElementType::F64:
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(load<double>(p + 8 * i));
    break;
  case ElementType::I8:
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(load<int8_t>(p + i));
    break;
  case ElementType::I16:
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(load<int16_t>(p + 2 * i));
    break;
  case ElementType::I32:
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(load<int32_t>(p + 4 * i));
    break;
  case ElementType::I64:
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(load<int64_t>(p + 8 * i));
    break;
  case ElementType::U8:
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(load<uint8_t>(p + i));
    break;
  case ElementType::Bool:
    for (size_t i = 0; i < n; ++i)
      out[i] = load<uint8_t>(p + i) != 0 ? 1.0f : 0.0f;
    break;
  // The block formats below compute in float exactly as gguf.quants does
  // (one multiply, then for q4_1 one add); the library is built with
  // -ffp-contract=off so that d * q + m never becomes a fused multiply-add.
  case ElementType::Q4_0:
    for (size_t b = 0; b < n / 32; ++b, p += 18, out += 32) {
      float d = f16ToF32(load<uint16_t>(p));
      for (int j = 0; j < 16; ++j) {
        uint8_t q = load<uint8_t>(p + 2 + j);
        out[j] = d * static_cast<float>(static_cast<int>(q & 0x0f) - 8);
        out[j + 16] = d * static_cast<float>(static_cast<int>(q >> 4) - 8);
      }
    }
    break;
  case ElementType::Q4_1:
    for (size_t b = 0; b < n / 32; ++b, p += 20, out += 32) {
      float d = f16ToF32(load<uint16_t>(p));
      float m = f16ToF32(load<uint16_t>(p + 2));
      for (int j = 0; j < 16; ++j) {
        uint8_t q = load<uint8_t>(p + 4 + j);
        float lo = d * static_cast<float>(q & 0x0f);
        float hi = d * static_cast<float>(q >> 4);
        out[j] = lo + m;
        out[j + 16] = hi + m;
      }
    }
    break;
  case ElementType::Q8_0:
    for (size_t b = 0; b < n / 32; ++b, p += 34, out += 32) {
      float d = f16ToF32(load<uint16_t>(p));
      for (int j = 0; j < 32; ++j)
        out[j] = static_cast<float>(load<int8_t>(p + 2 + j)) * d;
    }
    break;
  }
  return success();
}

uint64_t loom::fmt::fnv1a64(std::span<const std::byte> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) {
    h ^= static_cast<uint8_t>(b);
    h *= 0x100000001b3ull;
  }
  return h;
}
