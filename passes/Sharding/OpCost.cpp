//===- OpCost.cpp - the predicted time of one op on one device ------------===//
//
// See OpCost.h.
//
//===----------------------------------------------------------------------===//

#include "passes/Sharding/OpCost.h"

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Cost/CostModel.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

namespace loom {

double ruleFlops(const ShardingRule &rule, int64_t dynamicSize) {
  double f = rule.flops;
  for (const LoopDim &l : rule.loops)
    if (mlir::ShapedType::isDynamic(l.size))
      f *= static_cast<double>(dynamicSize);
  return f;
}

static cost::ElemType elemTypeOf(mlir::Operation *op) {
  if (!op || op->getNumResults() == 0)
    return cost::ElemType::F32;
  if (auto t = llvm::dyn_cast<mlir::ShapedType>(op->getResult(0).getType())) {
    if (t.getElementType().isBF16())
      return cost::ElemType::BF16;
    if (t.getElementType().isF16())
      return cost::ElemType::F16;
  }
  return cost::ElemType::F32;
}

double opTime(const cost::DeviceSpec &dev, mlir::Operation *op,
              const ShardingRule *rule, llvm::ArrayRef<LocalTensor> operands,
              llvm::ArrayRef<LocalTensor> results, double split,
              int64_t dynamicSize) {
  // The table of a gather: only the rows the ids name are read.
  int gathered = llvm::isa_and_nonnull<EmbeddingOp>(op) ? 0 : -1;
  double bytes = 0;
  for (auto [i, t] : llvm::enumerate(operands)) {
    double b = t.bytes;
    if (static_cast<int>(i) == gathered && !results.empty() && t.elements > 0)
      b *= std::min(1.0, results.front().elements / t.elements);
    bytes += b;
  }
  for (const LocalTensor &t : results)
    bytes += t.bytes;
  double flops = rule && rule->flops > 0
                     ? ruleFlops(*rule, dynamicSize) / std::max(1.0, split)
                 : results.empty() ? 0
                                   : results.front().elements;
  return cost::rooflineTime(dev, elemTypeOf(op), flops, bytes);
}

} // namespace loom
