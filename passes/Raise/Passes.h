//===- Passes.h - the raise phase's passes ----------------------*- C++ -*-===//

#ifndef LOOM_PASSES_RAISE_PASSES_H
#define LOOM_PASSES_RAISE_PASSES_H

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace loom {

#define GEN_PASS_DECL
#include "passes/Raise/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Raise/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_RAISE_PASSES_H
