//===- loom/Support/QuantFormat.h - block quantization formats --*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The one vocabulary of block-quantized weight formats: GGUF's q4_0, q4_1,
// q8_0 (blocks kept as the file stores them) and Loom's own int4, int8
// (docs/QUANTIZE.md). One enum, its names (the spelling of `#loom.quant<...>`,
// of `loomc --quantize` and of the weight store, "q4_0", ...), bits per
// value and the fixed layout of the GGUF blocks. Plain C++ (no LLVM, no
// MLIR), header-only: the reference quantizer (lib/Quant), the weight store
// (lib/Formats) and the dialect share it. The others are conversions, each
// in one place: the dialect's ODS enum `loom::QuantFormat`
// (dialects/Loom/IR/LoomEnums.h, toQuantFormat / fromQuantFormat) and the
// weight store's block element types (loom/Formats/WeightStore.h,
// blockFormatOf / blockElementType); test/unit/Dialect and
// test/Formats/WeightStoreTest.cpp check that they agree.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SUPPORT_QUANTFORMAT_H
#define LOOM_SUPPORT_QUANTFORMAT_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace loom::quant {

/// Block quantization formats; the values are those of the ODS enum
/// QuantFormat (LoomEnums.td), checked where the two meet.
enum class Format : uint8_t { Q4_0, Q4_1, Q8_0, Int4, Int8 };

/// Every Format, in enum order.
inline constexpr Format kAllFormats[] = {
    Format::Q4_0, Format::Q4_1, Format::Q8_0, Format::Int4, Format::Int8};

/// The name as `#loom.quant<...>` and the weight store spell it.
constexpr std::string_view formatName(Format f) {
  switch (f) {
  case Format::Q4_0:
    return "q4_0";
  case Format::Q4_1:
    return "q4_1";
  case Format::Q8_0:
    return "q8_0";
  case Format::Int4:
    return "int4";
  case Format::Int8:
    return "int8";
  }
  return "?";
}

/// Inverse of formatName; std::nullopt for any other name.
constexpr std::optional<Format> parseFormat(std::string_view name) {
  for (Format f : kAllFormats)
    if (name == formatName(f))
      return f;
  return std::nullopt;
}

/// Bits per quantized value: 4 or 8.
constexpr unsigned formatBits(Format f) {
  return f == Format::Q8_0 || f == Format::Int8 ? 8 : 4;
}

/// True for the GGUF formats, whose layout the file format fixes.
constexpr bool isGgufFormat(Format f) {
  return f == Format::Q4_0 || f == Format::Q4_1 || f == Format::Q8_0;
}

/// The fixed layout of a GGUF block (ggml-common.h): q4_0 = f16 scale + 16
/// nibble bytes, q4_1 = f16 scale + f16 min + 16 nibble bytes, q8_0 = f16
/// scale + 32 int8.
struct GgufBlock {
  int64_t elements; ///< values per block
  int64_t bytes;    ///< bytes per block
};
constexpr std::optional<GgufBlock> ggufBlock(Format f) {
  switch (f) {
  case Format::Q4_0:
    return GgufBlock{32, 18};
  case Format::Q4_1:
    return GgufBlock{32, 20};
  case Format::Q8_0:
    return GgufBlock{32, 34};
  case Format::Int4:
  case Format::Int8:
    break;
  }
  return std::nullopt;
}

} // namespace loom::quant

#endif // LOOM_SUPPORT_QUANTFORMAT_H
