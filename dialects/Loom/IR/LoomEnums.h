//===- LoomEnums.h - spellings of the loom dialect's enums ------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The spellings of the ODS enums (LoomEnums.td) that reach the dialect from
// outside the IR: pass options and the string forms of older IR. One place
// each, beside the enums they name (the enums themselves come from
// LoomDialect.h, generated).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMENUMS_H
#define LOOM_DIALECT_LOOM_IR_LOOMENUMS_H

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Support/QuantFormat.h"

#include <iterator>
#include <optional>

namespace loom {

/// The ODS enum QuantFormat is a conversion of the one vocabulary of quant
/// formats, quant::Format (loom/Support/QuantFormat.h): the same cases, the
/// same values (asserted here) and the same names (test/unit/Dialect).
constexpr QuantFormat toQuantFormat(quant::Format format) {
  return static_cast<QuantFormat>(format);
}
constexpr quant::Format fromQuantFormat(QuantFormat format) {
  return static_cast<quant::Format>(format);
}
static_assert(toQuantFormat(quant::Format::Q4_0) == QuantFormat::q4_0 &&
                  toQuantFormat(quant::Format::Q4_1) == QuantFormat::q4_1 &&
                  toQuantFormat(quant::Format::Q8_0) == QuantFormat::q8_0 &&
                  toQuantFormat(quant::Format::Int4) == QuantFormat::int4 &&
                  toQuantFormat(quant::Format::Int8) == QuantFormat::int8,
              "QuantFormat (LoomEnums.td) and quant::Format disagree");

/// The ODS enum QuantMode likewise converts quant::Mode (same cases,
/// values and names).
constexpr QuantMode toQuantMode(quant::Mode m) { return QuantMode(m); }
constexpr quant::Mode fromQuantMode(QuantMode m) { return quant::Mode(m); }
static_assert(toQuantMode(quant::Mode::Symmetric) == QuantMode::symmetric &&
                  toQuantMode(quant::Mode::Min) == QuantMode::min &&
                  toQuantMode(quant::Mode::ZeroPoint) == QuantMode::zero_point,
              "QuantMode (LoomEnums.td) and quant::Mode disagree");
static_assert(std::size(quant::kModes) ==
                  static_cast<size_t>(getMaxEnumValForQuantMode()) + 1,
              "QuantMode (LoomEnums.td) and quant::Mode disagree");

/// The mode a GGUF format's blocks have in the IR (`#loom.quant<q4_0>` is
/// zero_point with the implicit 8, q4_1 min, q8_0 symmetric), and the
/// default of Loom's own int4/int8 (symmetric).
QuantMode getDefaultQuantMode(QuantFormat format);
static_assert(std::size(quant::kAllFormats) ==
                  static_cast<size_t>(getMaxEnumValForQuantFormat()) + 1,
              "QuantFormat (LoomEnums.td) and quant::Format disagree");

/// The activations named `name`: the enum's own spelling (`int8_portable`)
/// or the pass options' and older IR's, with a dash (`int8-portable`,
/// `loom-quantize{activations=...}`, `quant_activations = "int8-portable"`).
/// std::nullopt for any other name.
std::optional<QuantActivations> parseQuantActivations(llvm::StringRef name);

} // namespace loom

#endif // LOOM_DIALECT_LOOM_IR_LOOMENUMS_H
