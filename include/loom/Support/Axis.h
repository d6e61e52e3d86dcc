//===- loom/Support/Axis.h - signed axes ------------------------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The one normalisation of signed axes (numpy, ONNX and the loom dialect's
// `axis`/`*_dim` attributes): a negative axis counts from the end, so -1 is
// the last dimension. Plain C++ (no LLVM, no MLIR): the dialect's verifiers,
// the passes and the importers share it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SUPPORT_AXIS_H
#define LOOM_SUPPORT_AXIS_H

#include <cstdint>

namespace loom {

/// Whether `axis` names a dimension of a rank-`rank` value: -rank..rank-1.
constexpr bool isValidAxis(int64_t axis, int64_t rank) {
  return axis >= -rank && axis < rank;
}

/// `axis` in [0, rank): negative axes count from the end. Callers check
/// isValidAxis first where the axis is not verified yet (verified ops'
/// attributes are).
constexpr int64_t normAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

} // namespace loom

#endif // LOOM_SUPPORT_AXIS_H
