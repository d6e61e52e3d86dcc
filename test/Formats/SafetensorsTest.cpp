//===- SafetensorsTest.cpp - safetensors reader on hand-built files -------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/Safetensors.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <random>

using namespace loom::fmt;
using namespace loom::fmt::test;

namespace {

/// header length + JSON header + `data` bytes of a counting pattern.
Bytes buildSt(const std::string &header, size_t data) {
  Bytes b;
  b.u64(header.size()).raw(header);
  for (size_t i = 0; i < data; ++i)
    b.u8(static_cast<uint8_t>(i));
  return b;
}

const char *kHeader =
    R"({"__metadata__":{"format":"pt"},)"
    R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},)"
    R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
    R"("m":{"dtype":"BOOL","shape":[3],"data_offsets":[28,31]},)"
    R"("s":{"dtype":"I64","shape":[],"data_offsets":[31,39]}})";

std::string errorOf(const Bytes &b) {
  auto r = parseSafetensors(b.span(), "m.safetensors");
  return r ? std::string("<no error>") : r.error().message;
}

std::string errorOf(const std::string &header, size_t data) {
  return errorOf(buildSt(header, data));
}

bool contains(const std::string &s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

TEST(Safetensors, ParsesSmallFile) {
  Bytes b = buildSt(kHeader, 39);
  auto r = parseSafetensors(b.span(), "m.safetensors");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->tensors().size(), 4u);
  // File order (by data offset), absolute offsets.
  const uint64_t start = 8 + std::string(kHeader).size();
  EXPECT_EQ(r->dataOffset(), start);
  EXPECT_EQ(r->tensors()[0].name, "a");
  EXPECT_EQ(r->tensors()[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r->tensors()[0].strides, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(r->tensors()[0].offset, start);
  EXPECT_EQ(r->tensors()[1].format, ElementType::BF16);
  EXPECT_EQ(r->tensors()[2].format, ElementType::Bool);
  const TensorRef *s = r->findTensor("s");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->nbytes, 8u);
  EXPECT_EQ(r->metadata().at("format"), "pt");
  auto bytes = r->tensorBytes(*r->findTensor("b"));
  ASSERT_TRUE(bytes);
  EXPECT_EQ(static_cast<uint8_t>((*bytes)[0]), 24);
  TensorRef other = *s;
  other.file = "elsewhere";
  EXPECT_FALSE(r->tensorBytes(other));
}

TEST(Safetensors, TruncationAtEveryByte) {
  Bytes b = buildSt(kHeader, 39);
  for (size_t n = 0; n < b.size(); ++n) {
    auto r = parseSafetensors(b.span().first(n), "m.safetensors");
    ASSERT_FALSE(r) << "prefix of " << n << " bytes parsed";
    EXPECT_TRUE(contains(r.error().message, "m.safetensors: "));
  }
}

TEST(Safetensors, MutationsNeverCrash) {
  Bytes base = buildSt(kHeader, 39);
  std::mt19937 rng(99);
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes b = base;
    int flips = 1 + rng() % 3;
    for (int k = 0; k < flips; ++k)
      b.data[rng() % b.size()] = static_cast<std::byte>(rng());
    (void)parseSafetensors(b.span(), "m.safetensors");
  }
}

TEST(Safetensors, Errors) {
  EXPECT_TRUE(contains(errorOf(Bytes().raw("abc")),
                       "m.safetensors: byte 0: the 8-byte header length"));
  Bytes longHeader;
  longHeader.u64(1000).raw("{}");
  EXPECT_TRUE(contains(errorOf(longHeader), "header length 1000 runs past"));
  EXPECT_TRUE(contains(errorOf("[]", 0), "does not start with '{'"));
  std::string e = errorOf(R"({"a":{"dtype":"F32",})", 0);
  EXPECT_TRUE(contains(e, "m.safetensors: byte 28: invalid JSON")) << e;
  EXPECT_TRUE(contains(errorOf(R"({"a":1})", 0), "tensor 'a' at byte 9: the "
                                                 "entry is an integer"));
  EXPECT_TRUE(
      contains(errorOf(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4),
               "'dtype' is missing"));
  e = errorOf(R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})",
              1);
  EXPECT_TRUE(contains(e, "dtype 'F8_E4M3' is not supported")) << e;
  EXPECT_TRUE(contains(
      errorOf(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
      "shape[0] is not a non-negative"));
  EXPECT_TRUE(contains(
      errorOf(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4),
      "shape[0] is not a non-negative"));
  EXPECT_TRUE(contains(
      errorOf(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4),
      "hold 4 bytes but shape x F32 needs 8"));
  EXPECT_TRUE(contains(
      errorOf(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
      "runs past the end of the file"));
  EXPECT_TRUE(contains(
      errorOf(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4),
      "end before they begin"));
  EXPECT_TRUE(contains(
      errorOf(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4),
      "'data_offsets' is missing or not an array of two"));
  EXPECT_TRUE(
      contains(errorOf(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],)"
                       R"("data_offsets":[0,4]}})",
                       4),
               "overflows int64"));
  EXPECT_TRUE(contains(
      errorOf(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
              6),
      "overlaps the previous tensor's"));
  EXPECT_TRUE(contains(
      errorOf(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
      "gap of 4 bytes"));
  EXPECT_TRUE(contains(
      errorOf(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 6),
      "2 bytes after the last tensor"));
  EXPECT_TRUE(contains(errorOf(R"({"__metadata__":{"a":1}})", 0),
                       "'__metadata__' entry 'a' is an integer"));
  EXPECT_TRUE(contains(errorOf(R"({"a":{"dtype":"F32","shape":[1],)"
                               R"("data_offsets":[0,18446744073709551616]}})",
                               4),
                       "'data_offsets' are not non-negative 64-bit"));
  // Invalid UTF-8 in the header is a JSON error, not a crash.
  EXPECT_TRUE(contains(errorOf("{\"\xff\":1}", 0), "invalid JSON"));
  // An empty model is valid.
  EXPECT_EQ(errorOf("{}", 0), "<no error>");
}

TEST(Safetensors, ShardedIndex) {
  TempDir dir;
  Bytes s1 =
      buildSt(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  Bytes s2 = buildSt(R"({"b":{"dtype":"I8","shape":[3],"data_offsets":[0,3]},)"
                     R"("c":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}})",
                     4);
  dir.write("model-00001-of-00002.safetensors", s1.span());
  dir.write("model-00002-of-00002.safetensors", s2.span());
  std::string index = dir.write(
      "model.safetensors.index.json",
      std::string_view(R"({"metadata":{"total_size":12},"weight_map":{)"
                       R"("a":"model-00001-of-00002.safetensors",)"
                       R"("b":"model-00002-of-00002.safetensors",)"
                       R"("c":"model-00002-of-00002.safetensors"}})"));
  auto r = openSafetensorsModel(dir.path);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->tensors().size(), 3u);
  EXPECT_EQ(r->files().size(), 2u);
  const TensorRef *c = r->findTensor("c");
  ASSERT_TRUE(c);
  EXPECT_TRUE(contains(c->file, "model-00002-of-00002.safetensors"));
  WeightStore store;
  auto bytes = store.bytes(*c);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(static_cast<uint8_t>((*bytes)[0]), 3);
  EXPECT_TRUE(r->tensorBytes(*c));

  // A tensor of the map missing from its shard.
  std::string bad =
      dir.write("missing.index.json",
                std::string_view(
                    R"({"weight_map":{"a":"model-00001-of-00002.safetensors",)"
                    R"("z":"model-00001-of-00002.safetensors"}})"));
  auto e = openSafetensorsIndex(bad);
  ASSERT_FALSE(e);
  EXPECT_TRUE(contains(e.error().message, "tensor 'z' of the weight_map is "
                                          "not in shard"))
      << e.error().message;
  // A shard tensor that the map puts elsewhere (or nowhere).
  std::string wrong =
      dir.write("wrong.index.json",
                std::string_view(
                    R"({"weight_map":{"a":"model-00002-of-00002.safetensors",)"
                    R"("b":"model-00002-of-00002.safetensors"}})"));
  e = openSafetensorsIndex(wrong);
  ASSERT_FALSE(e);
  EXPECT_TRUE(contains(e.error().message, "not in the weight_map"));
  std::string missingShard =
      dir.write("noshard.index.json",
                std::string_view(R"({"weight_map":{"a":"nope.safetensors"}})"));
  e = openSafetensorsIndex(missingShard);
  ASSERT_FALSE(e);
  EXPECT_TRUE(contains(e.error().message, "shard 'nope.safetensors'"));
  std::string escape =
      dir.write("escape.index.json",
                std::string_view(R"({"weight_map":{"a":"../etc/passwd"}})"));
  e = openSafetensorsIndex(escape);
  ASSERT_FALSE(e);
  EXPECT_TRUE(contains(e.error().message, "not a file name relative"));
  std::string noMap =
      dir.write("nomap.index.json", std::string_view(R"({"metadata":{}})"));
  EXPECT_FALSE(openSafetensorsIndex(noMap));
  std::string badJson =
      dir.write("bad.index.json", std::string_view(R"({"weight_map":)"));
  e = openSafetensorsIndex(badJson);
  ASSERT_FALSE(e);
  EXPECT_TRUE(contains(e.error().message, "bad.index.json: byte 14: invalid "
                                          "JSON"))
      << e.error().message;
  (void)index;
}

} // namespace
