//===- loom/Support/DType.h - element types of tensors ----------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The one vocabulary of plain element types that cross the compiler-runtime
// boundary: the bundle's manifest ("dtype": "f32", ...), the tensors the
// runtime allocates and the arrays callers pass in. One enum, its names (the
// manifest's on-disk spelling, unchanged since format version 1) and byte
// sizes. Plain C++ (no LLVM, no MLIR): the compiler's bundle writer and the
// runtime's manifest reader share it.
//
// Not in this vocabulary, on purpose: block-quantized storage formats
// (loom::fmt::ElementType, lib/Quant's formats) and the cost model's compute
// precisions (tf32, fp8), which are not element types of a stored tensor.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SUPPORT_DTYPE_H
#define LOOM_SUPPORT_DTYPE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace loom {

/// Element types of the tensors a bundle passes; i1 is stored one byte per
/// element (0 or 1).
enum class DType : uint8_t { F32, F16, BF16, F64, I8, I32, I64, U8, I1 };

/// Every DType, in enum order.
inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16,
                                       DType::F64, DType::I8,  DType::I32,
                                       DType::I64, DType::U8,  DType::I1};

/// The name as the manifest spells it: "f32", "f16", "bf16", "f64", "i8",
/// "i32", "i64", "u8", "i1".
constexpr const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I8:
    return "i8";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::U8:
    return "u8";
  case DType::I1:
    return "i1";
  }
  return "?";
}

/// Bytes per element.
constexpr int64_t dtypeSize(DType t) {
  switch (t) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I8:
  case DType::U8:
  case DType::I1:
    return 1;
  }
  return 0;
}

/// Inverse of dtypeName; std::nullopt for any other name.
constexpr std::optional<DType> parseDType(std::string_view name) {
  for (DType t : kAllDTypes)
    if (name == dtypeName(t))
      return t;
  return std::nullopt;
}

} // namespace loom

#endif // LOOM_SUPPORT_DTYPE_H
