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

#include <optional>

namespace loom {

/// The activations named `name`: the enum's own spelling (`int8_portable`)
/// or the pass options' and older IR's, with a dash (`int8-portable`,
/// `loom-quantize{activations=...}`, `quant_activations = "int8-portable"`).
/// std::nullopt for any other name.
std::optional<QuantActivations> parseQuantActivations(llvm::StringRef name);

} // namespace loom

#endif // LOOM_DIALECT_LOOM_IR_LOOMENUMS_H
