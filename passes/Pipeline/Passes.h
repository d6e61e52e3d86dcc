//===- Passes.h - the pipeline phase's passes -------------------*- C++ -*-===//

#ifndef LOOM_PASSES_PIPELINE_PASSES_H
#define LOOM_PASSES_PIPELINE_PASSES_H

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace loom {

#define GEN_PASS_DECL
#include "passes/Pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Pipeline/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_PIPELINE_PASSES_H
