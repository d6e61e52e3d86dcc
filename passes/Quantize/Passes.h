//===- Passes.h - the quantize phase's passes -------------------*- C++ -*-===//

#ifndef LOOM_PASSES_QUANTIZE_PASSES_H
#define LOOM_PASSES_QUANTIZE_PASSES_H

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace loom {

#define GEN_PASS_DECL
#include "passes/Quantize/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Quantize/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_QUANTIZE_PASSES_H
