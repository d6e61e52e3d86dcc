//===- loom/Support/QuantFormat.h - block quantization formats --*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The one vocabulary of block-quantized weights: the formats (GGUF's q4_0,
// q4_1, q8_0, blocks kept as the file stores them, and Loom's own int4,
// int8; docs/QUANTIZE.md), the modes (how a block's values are recovered),
// their names (the spelling of `#loom.quant<...>`, of `loomc --quant` and
// of the weight store, "q4_0", ...), bits per value, the fixed layout of the
// GGUF blocks and the bytes of a block. Plain C++ (no LLVM, no MLIR),
// header-only: the reference quantizer (lib/Quant), the weight store
// (lib/Formats), the dialect and the GPU kernel generator
// (lib/Target/GpuTarget/QMatmulKernelGen.h) share it. The others are
// conversions, each in one place: the dialect's ODS enums `loom::QuantFormat`
// and `loom::QuantMode` (dialects/Loom/IR/LoomEnums.h, toQuantFormat /
// fromQuantFormat, toQuantMode / fromQuantMode) and the weight store's block
// element types (loom/Formats/WeightStore.h, blockFormatOf /
// blockElementType); test/unit/Dialect and test/Formats/WeightStoreTest.cpp
// check that they agree.
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

/// How a block's values are recovered: x = s*q (Symmetric), x = s*q + m
/// (Min), x = s*(q - z) (ZeroPoint); the values are those of the ODS enum
/// QuantMode (LoomEnums.td), checked where the two meet.
enum class Mode : uint8_t { Symmetric, Min, ZeroPoint };

/// Every Mode, in enum order, with its names: as `#loom.quant<...>` prints
/// it ("symmetric", "min", "zero_point") and short ("sym", "min", "zp": in
/// `loomc --quant` schemes and the GPU kernels' symbols,
/// `loom_qmm_int4_b32_sym_f16_...`).
struct ModeInfo {
  Mode mode;
  std::string_view name, shortName;
};
inline constexpr ModeInfo kModes[] = {{Mode::Symmetric, "symmetric", "sym"},
                                      {Mode::Min, "min", "min"},
                                      {Mode::ZeroPoint, "zero_point", "zp"}};

constexpr std::string_view modeName(Mode m) {
  return kModes[static_cast<int>(m)].name;
}
constexpr std::string_view modeShortName(Mode m) {
  return kModes[static_cast<int>(m)].shortName;
}
static_assert(kModes[0].mode == Mode::Symmetric &&
                  kModes[1].mode == Mode::Min &&
                  kModes[2].mode == Mode::ZeroPoint,
              "kModes is in enum order");

/// Inverse of modeName and modeShortName; std::nullopt for any other name.
constexpr std::optional<Mode> parseMode(std::string_view name) {
  for (const ModeInfo &m : kModes)
    if (name == m.name || name == m.shortName)
      return m.mode;
  return std::nullopt;
}

/// The mode of a GGUF format's blocks (q4_0: zero point with the implicit
/// 8, q4_1: min, q8_0: symmetric), and the default of Loom's own int4/int8
/// (symmetric).
constexpr Mode defaultMode(Format f) {
  return f == Format::Q4_0   ? Mode::ZeroPoint
         : f == Format::Q4_1 ? Mode::Min
                             : Mode::Symmetric;
}

/// Bytes before the values in a block: the scale, then the minimum (Min,
/// stored like the scale) or one integer zero point (ZeroPoint, but for
/// q4_0's implicit 8).
constexpr int64_t blockValueOffset(Format f, Mode m, int64_t scaleBytes) {
  if (m == Mode::Min)
    return 2 * scaleBytes;
  if (m == Mode::ZeroPoint && !isGgufFormat(f))
    return scaleBytes + 1;
  return scaleBytes;
}

/// Bytes of a block of `block` values: `scale | [min] | [zero point] |
/// values` (GGUF's ggufBlock for its formats).
constexpr int64_t blockBytes(Format f, Mode m, int64_t block,
                             int64_t scaleBytes) {
  return blockValueOffset(f, m, scaleBytes) + block * formatBits(f) / 8;
}
static_assert(blockBytes(Format::Q4_0, defaultMode(Format::Q4_0), 32, 2) ==
                      ggufBlock(Format::Q4_0)->bytes &&
                  blockBytes(Format::Q4_1, defaultMode(Format::Q4_1), 32, 2) ==
                      ggufBlock(Format::Q4_1)->bytes &&
                  blockBytes(Format::Q8_0, defaultMode(Format::Q8_0), 32, 2) ==
                      ggufBlock(Format::Q8_0)->bytes,
              "blockBytes and the GGUF block layout disagree");

} // namespace loom::quant

#endif // LOOM_SUPPORT_QUANTFORMAT_H
