//===- RaiseUtils.h - matchers shared by the raise passes -------*- C++ -*-===//
//
// Small structural matchers over loom ops: scalar constants, products
// flattened across nested multiplications, reductions over the last axis.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_RAISE_RAISEUTILS_H
#define LOOM_PASSES_RAISE_RAISEUTILS_H

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <optional>

namespace loom::raise {

/// The value of a constant whose elements are all equal (a splat or a
/// one-element tensor), as a double.
inline std::optional<double> scalarOf(mlir::Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto attr = llvm::dyn_cast<mlir::DenseElementsAttr>(c.getValue());
  if (!attr || !(attr.isSplat() || attr.getNumElements() == 1))
    return std::nullopt;
  if (llvm::isa<mlir::FloatType>(attr.getElementType()))
    return (*attr.getValues<llvm::APFloat>().begin()).convertToDouble();
  if (attr.getElementType().isInteger(64) ||
      attr.getElementType().isInteger(32))
    return double((*attr.getValues<llvm::APInt>().begin()).getSExtValue());
  return std::nullopt;
}

inline bool isScalar(mlir::Value v, double want, double tol = 1e-4) {
  std::optional<double> s = scalarOf(v);
  return s && std::fabs(*s - want) <= tol * std::max(1.0, std::fabs(want));
}

/// The factors of a product: nested loom.mul operands (each used only by
/// the product) are expanded.
inline void collectFactors(mlir::Value v,
                           llvm::SmallVectorImpl<mlir::Value> &out,
                           bool root = true) {
  auto mul = v.getDefiningOp<MulOp>();
  if (mul && (root || v.hasOneUse())) {
    collectFactors(mul.getLhs(), out, false);
    collectFactors(mul.getRhs(), out, false);
    return;
  }
  out.push_back(v);
}

/// Whether `r` is `reduce <kind> x axes = [last] keep_dims` and then its x.
inline mlir::Value lastAxisReduce(mlir::Value r, ReduceKind kind) {
  auto red = r.getDefiningOp<ReduceOp>();
  if (!red || red.getKind() != kind || !red.getKeepDims())
    return {};
  auto inType =
      llvm::dyn_cast<mlir::RankedTensorType>(red.getInput().getType());
  if (!inType || inType.getRank() < 1)
    return {};
  int64_t rank = inType.getRank();
  auto axes = red.getAxes();
  if (axes.size() != 1 || (axes[0] != rank - 1 && axes[0] != -1))
    return {};
  return red.getInput();
}

/// Whether `v` is x*x or x^2, and then its x.
inline mlir::Value squareOf(mlir::Value v) {
  if (auto m = v.getDefiningOp<MulOp>())
    if (m.getLhs() == m.getRhs())
      return m.getLhs();
  if (auto p = v.getDefiningOp<PowOp>())
    if (isScalar(p.getRhs(), 2.0))
      return p.getLhs();
  return {};
}

/// The rank of a ranked tensor value, or nullopt (unranked, not a tensor).
/// Patterns ask this before they index shapes: IR from a file can hold any
/// rank where a formula usually has a 4-D one.
inline std::optional<int64_t> rankOf(mlir::Value v) {
  if (auto t = llvm::dyn_cast<mlir::RankedTensorType>(v.getType()))
    return t.getRank();
  return std::nullopt;
}

/// For `a + b` (commutative), returns the operand that is not `other`.
inline mlir::Value otherOperand(mlir::Operation *op, mlir::Value other) {
  if (op->getOperand(0) == other)
    return op->getOperand(1);
  if (op->getOperand(1) == other)
    return op->getOperand(0);
  return {};
}

} // namespace loom::raise

#endif // LOOM_PASSES_RAISE_RAISEUTILS_H
