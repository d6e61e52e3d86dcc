//===- ManifestTest.cpp - manifest.json validation
//-------------------------===//

#include "loom/runtime/Manifest.h"
#include "ManifestTestUtil.h"
#include "loom/runtime/NpyName.h"

#include <gtest/gtest.h>

#include <string>

using namespace loom::run;
using namespace loom::run::test;

namespace {

const char *kGood = R"({
  "format": "loom-bundle", "version": 1, "abi_version": 1, "model": "mlp",
  "mesh": {"axes": ["dp", "tp"], "shape": [1, 2]}, "num_ranks": 2,
  "library": "mlp.so",
  "entries": [{"name": "main", "symbol": "loom_entry_main",
    "inputs": [{"name": "x", "dtype": "f32", "shape": [-1, 4]}],
    "outputs": [{"name": "y", "dtype": "f32", "rank": 2}],
    "weights": [{"name": "w", "dtype": "f32", "shape": [4]}]}],
  "ranks": [
    {"rank": 0, "coords": [0, 0], "ir": "ir/rank0.mlir",
     "weights": {"main": [{"name": "w", "file": "/w.bin", "offset": 0,
                           "nbytes": 16, "shape": [4], "strides": [1]}]}},
    {"rank": 1, "coords": [0, 1], "ir": "ir/rank1.mlir",
     "weights": {"main": [{"name": "w", "file": "/w.bin", "offset": 16,
                           "nbytes": 16, "shape": [4], "strides": [1]}]}}]
})";

TEST(Manifest, Good) {
  Manifest m;
  std::string err;
  ASSERT_TRUE(parseManifest(kGood, 1, m, &err)) << err;
  EXPECT_EQ(m.numRanks, 2);
  EXPECT_EQ(m.meshString(), "dp=1 x tp=2");
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_EQ(m.entries[0].inputs[0].shape, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(m.ranks[1].weights["main"][0].offset, 16);
  EXPECT_EQ(m.findEntry("main"), &m.entries[0]);
  EXPECT_EQ(m.findEntry("nope"), nullptr);
}

TEST(Manifest, Interleave) {
  // A quantized weight's interleaved layout: 2-D i8, rows of whole units.
  std::string q = replaced(
      replaced(replaced(kGood, R"("dtype": "f32", "shape": [4]})",
                        R"("dtype": "i8", "shape": [16, 36],
                           "interleave": {"rows": 8, "block_bytes": 18,
                                          "fields": 1, "field_bytes": 2,
                                          "unit_bytes": 4}})"),
               R"("offset": 0,
                           "nbytes": 16, "shape": [4], "strides": [1])",
               R"("offset": 0, "nbytes": 576, "shape": [16, 36],
                  "strides": [36, 1])"),
      R"("offset": 16,
                           "nbytes": 16, "shape": [4], "strides": [1])",
      R"("offset": 0, "nbytes": 576, "shape": [16, 36], "strides": [36, 1])");
  Manifest m;
  std::string err;
  ASSERT_TRUE(parseManifest(q, 1, m, &err)) << err;
  ASSERT_EQ(m.entries[0].interleave.size(), 1u);
  const Interleave &il = m.entries[0].interleave[0];
  EXPECT_EQ(il.rows, 8);
  EXPECT_EQ(il.blockBytes, 18);
  EXPECT_EQ(il.fields, 1);
  EXPECT_EQ(il.fieldBytes, 2);
  EXPECT_EQ(il.unitBytes, 4);
  const std::string bad = "entries[0].weights[0].interleave: not a layout of "
                          "a 2-D i8 weight";
  // Blocks that do not divide the row, values not in whole units, no rows.
  EXPECT_NE(
      parseError(replaced(q, "\"block_bytes\": 18", "\"block_bytes\": 20"))
          .find(bad),
      std::string::npos);
  EXPECT_NE(parseError(replaced(q, "\"unit_bytes\": 4", "\"unit_bytes\": 3"))
                .find(bad),
            std::string::npos);
  EXPECT_NE(parseError(replaced(q, "\"rows\": 8", "\"rows\": 0")).find(bad),
            std::string::npos);
  EXPECT_EQ(parseError(replaced(q, "\"fields\": 1,", "")),
            "manifest.json: entries[0].weights[0].interleave.fields: missing");
  // Weights without the key keep their rows as stored.
  Manifest plain;
  ASSERT_TRUE(parseManifest(kGood, 1, plain, &err)) << err;
  EXPECT_EQ(plain.entries[0].interleave[0].rows, 0);
}

TEST(Manifest, GemmB) {
  // A 2-D f32 weight read by the f32 GEMM as B [K, N] or [N, K].
  auto with = [](const std::string &field, const std::string &shape) {
    return replaced(kGood, R"("dtype": "f32", "shape": [4]})",
                    R"("dtype": "f32", "shape": )" + shape + R"(, "gemm_b": )" +
                        field + "}");
  };
  Manifest m;
  std::string err;
  EXPECT_FALSE(parseManifest(with("\"nk\"", "[4]"), 1, m, &err));
  EXPECT_NE(parseError(with("\"nk\"", "[4]"))
                .find("entries[0].weights[0].gemm_b: only a 2-D f32 weight"),
            std::string::npos);
  EXPECT_NE(parseError(with("\"kk\"", "[4]"))
                .find("entries[0].weights[0].gemm_b: expected \"kn\" or "
                      "\"nk\""),
            std::string::npos);
  // Without the key: not a GEMM operand (bundles of older loomc).
  Manifest plain;
  ASSERT_TRUE(parseManifest(kGood, 1, plain, &err)) << err;
  ASSERT_EQ(plain.entries[0].gemmB.size(), 1u);
  EXPECT_EQ(plain.entries[0].gemmB[0], GemmB::None);
}

TEST(Manifest, Versions) {
  EXPECT_NE(parseError(replaced(kGood, "\"version\": 1", "\"version\": 2"))
                .find("bundle format version 2 is not supported: this "
                      "Loom runtime (loom-run, the loom Python package) "
                      "reads version 1"),
            std::string::npos);
  EXPECT_NE(
      parseError(replaced(kGood, "\"abi_version\": 1", "\"abi_version\": 7"))
          .find("ABI version 7, but this Loom runtime has ABI "
                "version 1"),
      std::string::npos);
  EXPECT_NE(parseError(replaced(kGood, "loom-bundle", "other"))
                .find("'other' is not a Loom bundle"),
            std::string::npos);
}

TEST(Manifest, MissingKeysAndWrongTypes) {
  EXPECT_EQ(parseError(replaced(kGood, "\"model\": \"mlp\",", "")),
            "manifest.json: model: missing");
  EXPECT_EQ(parseError(replaced(kGood, "\"num_ranks\": 2",
                                "\"num_ranks\": "
                                "\"2\"")),
            "manifest.json: num_ranks: expected an integer");
  EXPECT_EQ(parseError(replaced(kGood, "[-1, 4]", "[-1, 4.5]")),
            "manifest.json: entries[0].inputs[0].shape[1]: expected an "
            "integer");
  EXPECT_EQ(parseError(replaced(kGood, "\"dtype\": \"f32\", \"rank\"",
                                "\"dtype\": \"f8\", \"rank\"")),
            "manifest.json: entries[0].outputs[0].dtype: unknown dtype 'f8' "
            "(expected f32 f16 bf16 f64 i8 i32 i64 u8 i1)");
  EXPECT_EQ(parseError("[1, 2]"),
            "manifest.json: expected a JSON object at the top level");
  EXPECT_EQ(parseError("{"), "manifest.json: not valid JSON");
}

// A weight's name may repeat (one tensor loaded in two layouts: a tied LM
// head's vocabulary slice next to the embedding's whole table), an input's
// may not (inputs are given by name).
TEST(Manifest, WeightNamesMayRepeatInputNamesMayNot) {
  std::string two = replaced(
      replaced(
          replaced(
              kGood,
              R"("weights": [{"name": "w", "dtype": "f32", "shape": [4]}])",
              R"("weights": [{"name": "w", "dtype": "f32", "shape": [4]},
                                       {"name": "w", "dtype": "f32", "shape": [8]}])"),
          R"("offset": 0,
                           "nbytes": 16, "shape": [4], "strides": [1]}]}},)",
          R"("offset": 0, "nbytes": 16, "shape": [4], "strides": [1]},
                  {"name": "w", "file": "/w.bin", "offset": 0, "nbytes": 32,
                   "shape": [8], "strides": [1]}]}},)"),
      R"("offset": 16,
                           "nbytes": 16, "shape": [4], "strides": [1]}]}}])",
      R"("offset": 16, "nbytes": 16, "shape": [4], "strides": [1]},
         {"name": "w", "file": "/w.bin", "offset": 0, "nbytes": 32,
          "shape": [8], "strides": [1]}]}}])");
  Manifest m;
  std::string err;
  ASSERT_TRUE(parseManifest(two, 1, m, &err)) << err;
  ASSERT_EQ(m.entries[0].weights.size(), 2u);
  EXPECT_EQ(m.ranks[1].weights["main"][1].shape, (std::vector<int64_t>{8}));
  EXPECT_EQ(
      parseError(replaced(
          kGood,
          R"("inputs": [{"name": "x", "dtype": "f32", "shape": [-1, 4]}])",
          R"("inputs": [{"name": "x", "dtype": "f32", "shape": [-1, 4]},
                              {"name": "x", "dtype": "f32", "shape": [4]}])")),
      "manifest.json: entries[0].inputs[1].name: duplicate name 'x'");
}

// Output names need not be file names (ONNX's gpu_0/softmax_1): they map
// to .npy stems (NpyName.h); two that map to one file are refused.
TEST(Manifest, OutputNamesMapToDistinctFileNames) {
  EXPECT_EQ(loom::npyFileStem("gpu_0/softmax_1"), "gpu_0_softmax_1");
  EXPECT_EQ(loom::npyFileStem("out:0"), "out_0");
  EXPECT_EQ(loom::npyFileStem("y.rank-1"), "y.rank-1");
  EXPECT_EQ(loom::npyFileStem(".."), "_..");
  EXPECT_EQ(loom::npyFileStem(""), "_");
  Manifest m;
  std::string err;
  ASSERT_TRUE(parseManifest(
      replaced(kGood, "\"name\": \"y\"", "\"name\": \"gpu_0/y\""), 1, m, &err))
      << err;
  EXPECT_EQ(m.entries[0].outputs[0].name, "gpu_0/y");
  std::string two = replaced(
      kGood, R"("outputs": [{"name": "y", "dtype": "f32", "rank": 2}])",
      R"("outputs": [{"name": "a/b", "dtype": "f32", "rank": 2},
                     {"name": "a_b", "dtype": "f32", "rank": 2}])");
  EXPECT_EQ(parseError(two),
            "manifest.json: entries[0].outputs: outputs 'a/b' and 'a_b' "
            "would both be written to 'a_b.npy' (names are mapped to file "
            "names: bytes outside [A-Za-z0-9._-] become '_'); rename one of "
            "them in the model");
}

TEST(Manifest, RanksAndMesh) {
  EXPECT_NE(parseError(replaced(kGood, "\"num_ranks\": 2", "\"num_ranks\": 3"))
                .find("num_ranks: 3 is not the product of mesh.shape"),
            std::string::npos);
  EXPECT_NE(
      parseError(replaced(kGood, "\"coords\": [0, 1]", "\"coords\": [1, 0]"))
          .find("ranks[1].coords: do not match"),
      std::string::npos);
  EXPECT_NE(parseError(replaced(kGood,
                                "\"nbytes\": 16, \"shape\": [4], "
                                "\"strides\": [1]}]}}]",
                                "\"nbytes\": 8, \"shape\": [4], "
                                "\"strides\": [1]}]}}]"))
                .find("ranks[1].weights.main[0]: shape and strides reach 16 "
                      "bytes but nbytes is 8"),
            std::string::npos);
}

// Slices are checked against the entry's argument types, with overflow
// checks on every offset and stride product (issue 13: edits that led to
// segfaults or reads past the file).
TEST(Manifest, SlicesMatchTheirWeightAndNeverOverflow) {
  const std::string last = "\"offset\": 16,\n                           "
                           "\"nbytes\": 16, \"shape\": [4], \"strides\": [1]";
  auto slice = [&](const std::string &body) {
    return parseError(replaced(kGood, last, body));
  };
  // A slice of another shape than the weight's.
  EXPECT_NE(slice("\"offset\": 16, \"nbytes\": 32, \"shape\": [8], "
                  "\"strides\": [1]")
                .find("ranks[1].weights.main[0].shape: [8] is not the shape "
                      "[4] of weight 'w' of entry 'main'; the manifest does "
                      "not match its library (recompile with loomc)"),
            std::string::npos);
  // A stride whose reach overflows int64 (wrapped to a small or negative
  // extent before).
  EXPECT_NE(slice("\"offset\": 16, \"nbytes\": 16, \"shape\": [4], "
                  "\"strides\": [4611686018427387904]")
                .find("overflow 64-bit byte offsets"),
            std::string::npos);
  EXPECT_NE(slice("\"offset\": 16, \"nbytes\": 16, \"shape\": [4], "
                  "\"strides\": [3074457345618258603]")
                .find("overflow 64-bit byte offsets"),
            std::string::npos);
  // offset + nbytes past INT64_MAX.
  EXPECT_NE(slice("\"offset\": 9223372036854775800, \"nbytes\": 16, "
                  "\"shape\": [4], \"strides\": [1]")
                .find("offset 9223372036854775800 + nbytes 16 overflows"),
            std::string::npos);
}

TEST(Manifest, IntegrityAndTargetAreRead) {
  std::string text =
      replaced(kGood, "\"library\": \"mlp.so\",",
               "\"library\": \"mlp.so\", \"integrity\": {\"library\": "
               "\"fnv1a64:0123456789abcdef\", \"entries\": \"fnv1a64:00\"}, "
               "\"target\": {\"cpu\": \"skylake\", \"features\": [\"avx2\", "
               "\"fma\"]},");
  Manifest m;
  std::string err;
  ASSERT_TRUE(parseManifest(text, 1, m, &err)) << err;
  EXPECT_TRUE(m.integrity.present);
  EXPECT_EQ(m.integrity.library, "fnv1a64:0123456789abcdef");
  EXPECT_EQ(m.target.cpu, "skylake");
  EXPECT_EQ(m.target.features, (std::vector<std::string>{"avx2", "fma"}));
  EXPECT_EQ(m.entriesHash.rfind("fnv1a64:", 0), 0u);
  EXPECT_EQ(m.entriesHash.size(), 8u + 16u);
  EXPECT_EQ(parseError(replaced(text, "[\"avx2\", \"fma\"]", "[1]")),
            "manifest.json: target.features[0]: expected a string");
}

TEST(Manifest, ResolveBundlePath) {
  // Files inside the bundle are named relative to it; others absolutely.
  EXPECT_EQ(resolveBundlePath("/b", "weights/quant.bin"),
            "/b/weights/quant.bin");
  EXPECT_EQ(resolveBundlePath("out/", "mlp.so"), "out/mlp.so");
  EXPECT_EQ(resolveBundlePath("/b", "/models/m.gguf"), "/models/m.gguf");
}

TEST(DTypes, NpyMapping) {
  std::optional<DType> t = parseDType("i1");
  ASSERT_TRUE(t);
  EXPECT_STREQ(npyDescr(*t), "|b1");
  EXPECT_EQ(dtypeSize(*t), 1);
  t = parseDType("bf16");
  ASSERT_TRUE(t);
  EXPECT_TRUE(npyAccepts(*t, "<u2"));
  EXPECT_TRUE(npyAccepts(*t, "|V2"));
  EXPECT_FALSE(npyAccepts(*t, "<f2"));
  EXPECT_FALSE(parseDType("f8"));
}

} // namespace

namespace {

/// kGood as a CUDA bundle whose entry's memory plan is `plan`.
std::string cudaManifest(const std::string &plan) {
  return replaced(kGood, "\"library\": \"mlp.so\",",
                  "\"library\": \"mlp.so\", \"target\": {\"cpu\": \"x86-64\", "
                  "\"features\": [], \"device\": \"cuda\", \"chips\": "
                  "[\"sm_90\"], \"format\": \"fatbin\", \"memory_plan\": "
                  "{\"main\": " +
                      plan + "}},");
}

TEST(Manifest, CudaMemoryPlanWorkspace) {
  Manifest m = parsed(cudaManifest(
      R"({"peak_bytes": 1792, "resident_bytes": 1024, "upload_bytes": 256,
          "workspace_bytes": 768})"));
  EXPECT_TRUE(m.target.isCuda());
  EXPECT_EQ(m.target.peakBytes["main"], 1792);
  EXPECT_EQ(m.target.workspaceBytes["main"], 768);
  // Optional (a bundle of an older loomc): none recorded.
  Manifest old = parsed(cudaManifest(R"({"peak_bytes": 1792})"));
  EXPECT_EQ(old.target.workspaceBytes.count("main"), 0u);
  EXPECT_NE(parseError(cudaManifest(R"({"workspace_bytes": -1})"))
                .find("target.memory_plan.main.workspace_bytes: expected a "
                      "non-negative integer"),
            std::string::npos);
}

TEST(Manifest, CudaAbiVersion) {
  auto withAbi = [](const std::string &v) {
    std::string text = cudaManifest(R"({"peak_bytes": 1792})");
    std::string format = "\"format\": \"fatbin\"";
    text.replace(text.find(format), format.size(),
                 format + ", \"cuda_abi_version\": " + v);
    return text;
  };
  EXPECT_EQ(parsed(withAbi("2")).target.cudaAbiVersion, 2);
  // Optional (a bundle of an older loomc): 0, not checked at load.
  EXPECT_EQ(
      parsed(cudaManifest(R"({"peak_bytes": 1792})")).target.cudaAbiVersion, 0);
  EXPECT_NE(parseError(withAbi("0"))
                .find("target.cuda_abi_version: expected a positive integer"),
            std::string::npos);
}

} // namespace
