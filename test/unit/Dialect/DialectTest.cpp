//===- DialectTest.cpp - units of the loom dialect's C++ API --------------===//

#include "dialects/Loom/IR/LoomDialect.h"
#include "dialects/Loom/IR/LoomEnums.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace loom;

namespace {

class LoomDialectTest : public ::testing::Test {
protected:
  LoomDialectTest() { context.loadDialect<LoomDialect, func::FuncDialect>(); }
  MLIRContext context;
};

TEST_F(LoomDialectTest, BroadcastShapes) {
  constexpr int64_t d = ShapedType::kDynamic;
  EXPECT_EQ(*broadcastShapes({2, 1, 4}, {3, 1}),
            (SmallVector<int64_t>{2, 3, 4}));
  EXPECT_EQ(*broadcastShapes({d, 576}, {576}), (SmallVector<int64_t>{d, 576}));
  EXPECT_EQ(*broadcastShapes({d}, {1}), (SmallVector<int64_t>{d}));
  EXPECT_EQ(*broadcastShapes({d}, {8}), (SmallVector<int64_t>{8}));
  EXPECT_EQ(*broadcastShapes({}, {}), (SmallVector<int64_t>{}));
  EXPECT_FALSE(broadcastShapes({3}, {4}).has_value());
}

// The activations read as the enum spells them and as the options (and
// older IR) do, with a dash; nothing else.
TEST(LoomEnums, QuantActivationsSpellings) {
  EXPECT_EQ(parseQuantActivations("f32"), QuantActivations::f32);
  EXPECT_EQ(parseQuantActivations("int8x3"), QuantActivations::int8x3);
  EXPECT_EQ(parseQuantActivations("int8_portable"),
            QuantActivations::int8_portable);
  EXPECT_EQ(parseQuantActivations("int8-portable"),
            QuantActivations::int8_portable);
  EXPECT_EQ(parseQuantActivations("int8x3-portable"),
            QuantActivations::int8x3_portable);
  EXPECT_EQ(parseQuantActivations("auto"), std::nullopt);
  EXPECT_EQ(parseQuantActivations("int4"), std::nullopt);
  EXPECT_EQ(parseQuantActivations(""), std::nullopt);
}

// The ODS enum QuantFormat is a conversion of the one vocabulary of quant
// formats (loom/Support/QuantFormat.h): same names, both ways, and the
// facts #loom.quant derives from it (bits, GGUF, GGUF's fixed block).
TEST_F(LoomDialectTest, QuantFormatVocabulary) {
  for (loom::quant::Format f : loom::quant::kAllFormats) {
    QuantFormat q = toQuantFormat(f);
    EXPECT_EQ(fromQuantFormat(q), f);
    EXPECT_EQ(stringifyQuantFormat(q).str(), loom::quant::formatName(f));
    EXPECT_EQ(symbolizeQuantFormat(loom::quant::formatName(f)), q);
    EXPECT_EQ(loom::quant::parseFormat(stringifyQuantFormat(q).str()), f);
    auto attr = QuantAttr::get(&context, q, 32, getDefaultQuantMode(q),
                               Float16Type::get(&context));
    EXPECT_EQ(attr.getBits(), loom::quant::formatBits(f));
    EXPECT_EQ(attr.isGguf(), loom::quant::isGgufFormat(f));
    if (std::optional<loom::quant::GgufBlock> g = loom::quant::ggufBlock(f)) {
      EXPECT_EQ(attr.getBlockSize(), g->elements);
      EXPECT_EQ(attr.getBlockBytes(), g->bytes) << loom::quant::formatName(f);
    }
  }
  EXPECT_EQ(loom::quant::parseFormat("q4_k"), std::nullopt);
}

TEST_F(LoomDialectTest, MeshAttr) {
  auto dp = StringAttr::get(&context, "dp");
  auto tp = StringAttr::get(&context, "tp");
  auto mesh = MeshAttr::get(&context, {dp, tp}, {2, 4});
  EXPECT_EQ(mesh.getNumDevices(), 8);
  EXPECT_EQ(mesh.getAxisIndex("tp"), 1u);
  EXPECT_FALSE(mesh.getAxisIndex("pp").has_value());
  EXPECT_EQ(mesh.getAxisSize("dp"), 2);
  auto axes = ArrayAttr::get(&context, {tp});
  EXPECT_EQ(getGroupSize(mesh, axes), 4);
}

TEST_F(LoomDialectTest, QuantBlockBytes) {
  Type f16 = Float16Type::get(&context);
  // GGUF sizes: Q4_0 18 bytes, Q4_1 20 bytes, Q8_0 34 bytes per 32 values.
  EXPECT_EQ(QuantAttr::get(&context, QuantFormat::q4_0, 32,
                           QuantMode::zero_point, f16)
                .getBlockBytes(),
            18);
  EXPECT_EQ(QuantAttr::get(&context, QuantFormat::q4_1, 32, QuantMode::min, f16)
                .getBlockBytes(),
            20);
  EXPECT_EQ(
      QuantAttr::get(&context, QuantFormat::q8_0, 32, QuantMode::symmetric, f16)
          .getBlockBytes(),
      34);
  auto int4 = QuantAttr::get(&context, QuantFormat::int4, 128,
                             QuantMode::symmetric, Float32Type::get(&context));
  EXPECT_EQ(int4.getBits(), 4u);
  EXPECT_EQ(int4.getBlockBytes(), 64 + 4);
  EXPECT_FALSE(int4.isGguf());
}

TEST_F(LoomDialectTest, ShardingVerification) {
  const char *ir = R"mlir(
    loom.mesh @mesh = <dp = 2, tp = 4>
    func.func @f(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
      %0 = loom.shard %x to <@mesh, [{dp}, {tp}]> : tensor<8x64xf32>
      return %0 : tensor<8x64xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(ir, &context);
  ASSERT_TRUE(module);
  ShardOp shard;
  module->walk([&](ShardOp op) { shard = op; });
  ASSERT_TRUE(shard);
  MeshOp mesh = lookupMesh(shard, shard.getSharding().getMesh());
  ASSERT_TRUE(mesh);
  EXPECT_EQ(shard.getSharding().getDimAxes(1), (SmallVector<StringRef>{"tp"}));
  EXPECT_FALSE(shard.getSharding().isReplicated());

  // 10 rows do not divide over dp = 2 x tp = 4.
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto bad = ShardingAttr::get(
      &context, FlatSymbolRefAttr::get(&context, "mesh"),
      ArrayAttr::get(
          &context,
          {ArrayAttr::get(&context, {StringAttr::get(&context, "dp"),
                                     StringAttr::get(&context, "tp")})}),
      ArrayAttr::get(&context, {}));
  auto type = RankedTensorType::get({10}, Float32Type::get(&context));
  EXPECT_TRUE(failed(
      verifySharding([&] { return emitError(UnknownLoc::get(&context)); }, bad,
                     mesh.getMesh(), type)));
  EXPECT_NE(message.find("does not divide over 8 devices"), std::string::npos)
      << message;
}

TEST_F(LoomDialectTest, CollectiveBytes) {
  const char *ir = R"mlir(
    loom.mesh @mesh = <tp = 4>
    func.func @f(%x: tensor<256xf32>) -> tensor<256xf32> {
      %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<256xf32>
      return %0 : tensor<256xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(ir, &context);
  ASSERT_TRUE(module);
  int64_t bytes = -1;
  module->walk([&](CollectiveOpInterface op) { bytes = op.getBytesSent(4); });
  // Ring all-reduce: 2 (p-1)/p of 1 KiB.
  EXPECT_EQ(bytes, 2 * 3 * 1024 / 4);
}

} // namespace
