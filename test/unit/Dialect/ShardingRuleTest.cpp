//===- ShardingRuleTest.cpp - units of the ops' sharding rules ------------===//
//
// The rules the planner enumerates strategies from (ShardingRules.cpp),
// checked op by op on parsed IR: loops, kinds, granules, and which loops
// make up each operand and result dimension.

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace loom;

namespace {

class ShardingRuleTest : public ::testing::Test {
protected:
  ShardingRuleTest() { context.loadDialect<LoomDialect, func::FuncDialect>(); }

  /// The rule of the first op named `name` in `body` (a function body).
  FailureOr<ShardingRule> ruleOf(StringRef body, StringRef name) {
    module = parseSourceString<ModuleOp>(body, &context);
    if (!module)
      return failure();
    Operation *found = nullptr;
    module->walk([&](Operation *op) {
      if (!found && op->getName().getStringRef() == name)
        found = op;
    });
    auto iface = dyn_cast_or_null<ShardingRuleOpInterface>(found);
    if (!iface)
      return failure();
    return iface.getShardingRule();
  }

  static std::vector<std::vector<int>> dims(const TensorLoops &t) {
    std::vector<std::vector<int>> out;
    for (auto &d : t.dims)
      out.emplace_back(d.begin(), d.end());
    return out;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

using V = std::vector<std::vector<int>>;

TEST_F(ShardingRuleTest, MatmulTransposedWeight) {
  auto r = ruleOf(R"(
    func.func @f(%x: tensor<2x8x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x8x32xf32> {
      %y = loom.matmul %x, %w transpose_b : tensor<2x8x64xf32>, tensor<32x64xf32> -> tensor<2x8x32xf32>
      return %y : tensor<2x8x32xf32>
    })",
                  "loom.matmul");
  ASSERT_TRUE(succeeded(r));
  // loops: batch 0, M 1, N 2, K 3 (a sum)
  ASSERT_EQ(r->loops.size(), 4u);
  EXPECT_EQ(r->loops[3].kind, LoopKind::Sum);
  EXPECT_EQ(r->loops[3].size, 64);
  EXPECT_EQ(dims(r->operands[0]), (V{{0}, {1}, {3}}));
  EXPECT_EQ(dims(r->operands[1]), (V{{2}, {3}})); // [N, K]
  EXPECT_EQ(dims(r->results[0]), (V{{0}, {1}, {2}}));
  EXPECT_DOUBLE_EQ(r->flops, 2.0 * 2 * 8 * 32 * 64);
}

TEST_F(ShardingRuleTest, ReshapeSplitsHeads) {
  auto r = ruleOf(R"(
    func.func @f(%x: tensor<1x?x256xf32>) -> tensor<1x?x8x32xf32> {
      %y = loom.reshape %x : tensor<1x?x256xf32> -> tensor<1x?x8x32xf32>
      return %y : tensor<1x?x8x32xf32>
    })",
                  "loom.reshape");
  ASSERT_TRUE(succeeded(r));
  // [1, S, 256] -> [1, S, 8, 32]: the 256 dim is made of (heads, head_dim).
  EXPECT_EQ(dims(r->operands[0]), (V{{0}, {1}, {2, 3}}));
  EXPECT_EQ(dims(r->results[0]), (V{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(r->loops[2].size, 8);
  EXPECT_TRUE(ShapedType::isDynamic(r->loops[1].size));
}

TEST_F(ShardingRuleTest, GroupedQueryAttention) {
  auto r = ruleOf(R"(
    func.func @f(%q: tensor<1x8x16x32xf32>, %kv: tensor<1x2x16x32xf32>) -> tensor<1x8x16x32xf32> {
      %o = loom.attention %q, %kv, %kv causal : tensor<1x8x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32> -> tensor<1x8x16x32xf32>
      return %o : tensor<1x8x16x32xf32>
    })",
                  "loom.attention");
  ASSERT_TRUE(succeeded(r));
  // loops: B 0, KV heads 1, group 2, S 3 (causal: opaque), T 4, D 5, Dv 6
  EXPECT_EQ(r->loops[1].size, 2);
  EXPECT_EQ(r->loops[2].size, 4);
  EXPECT_EQ(r->loops[3].kind, LoopKind::Opaque);
  EXPECT_EQ(dims(r->operands[0])[1], (std::vector<int>{1, 2}));
  EXPECT_EQ(dims(r->operands[1])[1], (std::vector<int>{1}));
  EXPECT_EQ(dims(r->results[0])[1], (std::vector<int>{1, 2}));
}

TEST_F(ShardingRuleTest, QuantizedMatmulKeepsBlocks) {
  auto r = ruleOf(R"(
    func.func @f(%x: tensor<4x256xf32>, %w: !loom.qtensor<64x256, #loom.quant<q4_0>>) -> tensor<4x64xf32> {
      %y = loom.qmatmul %x, %w : tensor<4x256xf32>, !loom.qtensor<64x256, #loom.quant<q4_0>> -> tensor<4x64xf32>
      return %y : tensor<4x64xf32>
    })",
                  "loom.qmatmul");
  ASSERT_TRUE(succeeded(r));
  // K is a sum whose shards hold whole Q4_0 blocks of 32.
  EXPECT_EQ(r->loops[2].kind, LoopKind::Sum);
  EXPECT_EQ(r->loops[2].granule, 32);
  EXPECT_EQ(dims(r->operands[1]), (V{{1}, {2}}));
}

TEST_F(ShardingRuleTest, NormsAndSoftmaxReadTheirAxisWhole) {
  auto r = ruleOf(R"(
    func.func @f(%x: tensor<4x64xf32>, %g: tensor<64xf32>) -> tensor<4x64xf32> {
      %y = loom.rms_norm %x scale(%g : tensor<64xf32>) epsilon = 1.0e-05 : tensor<4x64xf32> -> tensor<4x64xf32>
      return %y : tensor<4x64xf32>
    })",
                  "loom.rms_norm");
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->loops[0].kind, LoopKind::Parallel);
  EXPECT_EQ(r->loops[1].kind, LoopKind::Opaque);
  EXPECT_EQ(dims(r->operands[1]), (V{{1}}));
}

TEST_F(ShardingRuleTest, MeanIsNotASum) {
  auto r = ruleOf(R"(
    func.func @f(%x: tensor<4x64xf32>) -> tensor<4xf32> {
      %y = loom.reduce mean %x axes = [1] : tensor<4x64xf32> -> tensor<4xf32>
      %z = loom.reduce sum %x axes = [1] : tensor<4x64xf32> -> tensor<4xf32>
      return %y : tensor<4xf32>
    })",
                  "loom.reduce");
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->loops[1].kind, LoopKind::Opaque);
  EXPECT_EQ(dims(r->results[0]), (V{{0}}));
}

TEST_F(ShardingRuleTest, BroadcastOperandsNeverSplitSizeOne) {
  auto r = ruleOf(R"(
    func.func @f(%x: tensor<4x64xf32>, %b: tensor<1x64xf32>) -> tensor<4x64xf32> {
      %y = loom.add %x, %b : tensor<4x64xf32>, tensor<1x64xf32> -> tensor<4x64xf32>
      return %y : tensor<4x64xf32>
    })",
                  "loom.add");
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(dims(r->operands[1]), (V{{}, {1}}));
}

} // namespace
