//===- OpCostTest.cpp - units of the one price of an op -------------------===//
//
// loom::opTime (passes/Sharding/OpCost.h), the price the sharding planner
// and the pipeline phase share, on ops parsed from IR: an embedding gather
// moves the rows it reads, not its table; a tied LM head moves its whole
// weight and does its FLOPs at the assumed size of a dynamic dimension.
//
//===----------------------------------------------------------------------===//

#include "passes/Sharding/OpCost.h"

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Cost/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace loom;

namespace {

// SmolLM2-135M's tied table: 49152 x 576 in q8_0 (34 bytes per 32).
constexpr double kVocab = 49152, kDim = 576;
constexpr double kTableBytes = kVocab * kDim / 32 * 34;

class OpCostTest : public ::testing::Test {
protected:
  OpCostTest() {
    context.loadDialect<LoomDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(R"(
      func.func @f(%tok: tensor<1x?xi64>, %t: !loom.qtensor<49152x576, #loom.quant<q8_0>>) -> tensor<1x?x49152xf32> {
        %e = loom.embedding %t, %tok : !loom.qtensor<49152x576, #loom.quant<q8_0>>, tensor<1x?xi64> -> tensor<1x?x576xf32>
        %y = loom.qmatmul %e, %t : tensor<1x?x576xf32>, !loom.qtensor<49152x576, #loom.quant<q8_0>> -> tensor<1x?x49152xf32>
        return %y : tensor<1x?x49152xf32>
      })",
                                         &context);
    auto d = cost::deviceByName("cpu");
    EXPECT_TRUE(bool(d));
    dev = *d;
  }

  Operation *opNamed(StringRef name) {
    Operation *found = nullptr;
    module->walk([&](Operation *op) {
      if (!found && op->getName().getStringRef() == name)
        found = op;
    });
    return found;
  }
  ShardingRule ruleOf(Operation *op) {
    auto r = cast<ShardingRuleOpInterface>(op).getShardingRule();
    EXPECT_TRUE(succeeded(r));
    return *r;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  cost::DeviceSpec dev;
};

TEST_F(OpCostTest, EmbeddingMovesTheRowsItReads) {
  Operation *op = opNamed("loom.embedding");
  ShardingRule rule = ruleOf(op);
  const double tokens = 32;
  LocalTensor table{kTableBytes, kVocab * kDim};
  LocalTensor ids{tokens * 8, tokens};
  LocalTensor out{tokens * kDim * 4, tokens * kDim};
  double rows = kTableBytes * tokens / kVocab; // 32 rows of q8_0
  double t = opTime(dev, op, &rule, {table, ids}, {out}, 1,
                    /*dynamicSize=*/32);
  EXPECT_DOUBLE_EQ(t,
                   cost::rooflineTime(dev, cost::ElemType::F32, tokens * kDim,
                                      rows + ids.bytes + out.bytes));
  // The whole table (30 MB) would cost ~300x more.
  double whole = cost::rooflineTime(dev, cost::ElemType::F32, tokens * kDim,
                                    kTableBytes + ids.bytes + out.bytes);
  EXPECT_GT(whole, 100 * t);
  // More ids than rows: at most the whole table.
  LocalTensor many{1e6 * kDim * 4, 1e6 * kDim};
  double capped = opTime(dev, op, &rule, {table, ids}, {many}, 1, 32);
  EXPECT_DOUBLE_EQ(capped,
                   cost::rooflineTime(dev, cost::ElemType::F32, many.elements,
                                      kTableBytes + ids.bytes + many.bytes));
}

TEST_F(OpCostTest, TiedHeadMovesItsWholeWeightAndCountsDynamicTokens) {
  Operation *op = opNamed("loom.qmatmul");
  ShardingRule rule = ruleOf(op);
  // The rule counts the dynamic token dimension as 1 ...
  EXPECT_DOUBLE_EQ(rule.flops, 2 * kVocab * kDim);
  // ... and the cost at the assumed size.
  EXPECT_DOUBLE_EQ(ruleFlops(rule, 32), 2 * 32 * kVocab * kDim);
  const double tokens = 32;
  LocalTensor x{tokens * kDim * 4, tokens * kDim};
  LocalTensor w{kTableBytes, kVocab * kDim};
  LocalTensor y{tokens * kVocab * 4, tokens * kVocab};
  double t = opTime(dev, op, &rule, {x, w}, {y}, 1, 32);
  EXPECT_DOUBLE_EQ(t, cost::rooflineTime(dev, cost::ElemType::F32,
                                         2 * tokens * kVocab * kDim,
                                         x.bytes + w.bytes + y.bytes));
  // 1.8 GFLOP on the 2-core CPU's 134 GFLOP/s: compute-bound, ~14 ms.
  EXPECT_NEAR(t, 2 * tokens * kVocab * kDim / (dev.peakF32 * 0.70), 1e-9);
  // Split over 4 devices (the vocabulary over tp): a quarter of the FLOPs.
  double t4 = opTime(dev, op, &rule, {x, {w.bytes / 4, w.elements / 4}},
                     {{y.bytes / 4, y.elements / 4}}, 4, 32);
  EXPECT_NEAR(t4, t / 4, t * 1e-12);
}

TEST_F(OpCostTest, NoRuleFlopsCountsOnePerResultElement) {
  LocalTensor in{4096, 1024}, out{4096, 1024};
  Operation *op = opNamed("loom.qmatmul");
  EXPECT_DOUBLE_EQ(opTime(dev, op, nullptr, {in}, {out}, 1, 128),
                   cost::rooflineTime(dev, cost::ElemType::F32, 1024, 8192));
}

} // namespace
