//===- GgufTest.cpp - GGUF reader on hand-built files
//----------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/Gguf.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <random>

using namespace loom::fmt;
using namespace loom::fmt::test;

namespace {

constexpr uint32_t kString = 8, kArray = 9, kU32 = 4, kBool = 7, kF32 = 6,
                   kI64 = 11;

/// One tensor info of a hand-built file.
struct Info {
  std::string name;
  std::vector<int64_t> ne; // innermost first
  uint32_t type;
  uint64_t offset;
};

/// Writes a GGUF header + `kvs` (already encoded) + tensor infos, pads to
/// `align`, then `dataBytes` bytes of data (a counting pattern).
Bytes buildGguf(uint64_t nKv, const Bytes &kvs, const std::vector<Info> &infos,
                size_t dataBytes, size_t align = 32, uint32_t version = 3) {
  Bytes b;
  b.raw("GGUF").u32(version).u64(infos.size()).u64(nKv);
  b.data.insert(b.data.end(), kvs.data.begin(), kvs.data.end());
  for (const Info &i : infos) {
    b.str(i.name).u32(static_cast<uint32_t>(i.ne.size()));
    for (int64_t d : i.ne)
      b.i64(d);
    b.u32(i.type).u64(i.offset);
  }
  b.padTo(align);
  for (size_t i = 0; i < dataBytes; ++i)
    b.u8(static_cast<uint8_t>(i * 7));
  return b;
}

/// The metadata of the small valid file: strings, an alignment, arrays of
/// strings, a nested array, a float, a bool and an i64.
Bytes smallKvs() {
  Bytes kv;
  kv.str("general.architecture").u32(kString).str("llama");
  kv.str("general.alignment").u32(kU32).u32(32);
  kv.str("tokenizer.ggml.tokens").u32(kArray).u32(kString).u64(3);
  kv.str("<s>").str("hello").str("");
  kv.str("test.nested").u32(kArray).u32(kArray).u64(2);
  kv.u32(kU32).u64(2).u32(10).u32(11);
  kv.u32(kString).u64(1).str("x");
  kv.str("test.eps").u32(kF32).put<float>(1e-5f);
  kv.str("test.flag").u32(kBool).u8(1);
  kv.str("test.neg").u32(kI64).i64(-5);
  return kv;
}

/// A small valid file whose last tensor ends exactly at the end of the file,
/// so that every proper prefix of it is invalid.
Bytes smallGguf() {
  // f32 [2, 3] (24 bytes, padded to 32), q8_0 [2, 32] (68 bytes, padded to
  // 96), q4_0 [64] (36 bytes).
  std::vector<Info> infos = {{"tok_embd.weight", {3, 2}, 0, 0},
                             {"blk.0.attn_q.weight", {32, 2}, 8, 32},
                             {"blk.0.ffn.weight", {64}, 2, 128}};
  return buildGguf(7, smallKvs(), infos, 128 + 36);
}

std::string errorOf(const Bytes &b) {
  auto r = parseGguf(b.span(), "m.gguf");
  return r ? std::string("<no error>") : r.error().message;
}

bool contains(const std::string &s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

TEST(Gguf, ParsesSmallFile) {
  Bytes b = smallGguf();
  auto r = parseGguf(b.span(), "m.gguf");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version(), 3u);
  EXPECT_EQ(r->alignment(), 32u);
  EXPECT_EQ(r->dataOffset() % 32, 0u);
  EXPECT_EQ(r->dataOffset() + 128 + 36, b.size());
  ASSERT_EQ(r->metadata().size(), 7u);
  EXPECT_EQ(*r->find("general.architecture")->asString(), "llama");
  EXPECT_EQ(*r->find("test.eps")->asFloat(), 1e-5f);
  EXPECT_EQ(*r->find("test.flag")->asBool(), true);
  EXPECT_EQ(*r->find("test.neg")->asInt(), -5);
  EXPECT_FALSE(r->find("test.neg")->asUInt());
  EXPECT_EQ(r->find("missing"), nullptr);

  const GgufValue *tokens = r->find("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens && tokens->isArray());
  EXPECT_EQ(tokens->elementType(), GgufValueType::String);
  ASSERT_EQ(tokens->size(), 3u);
  EXPECT_EQ(*(*tokens)[1].asString(), "hello");
  EXPECT_EQ(*(*tokens)[2].asString(), "");
  std::vector<std::string_view> all;
  for (GgufValue v : *tokens)
    all.push_back(*v.asString());
  EXPECT_EQ(all, (std::vector<std::string_view>{"<s>", "hello", ""}));

  const GgufValue *nested = r->find("test.nested");
  ASSERT_EQ(nested->size(), 2u);
  GgufValue first = (*nested)[0];
  ASSERT_TRUE(first.isArray());
  EXPECT_EQ(first.elementType(), GgufValueType::U32);
  EXPECT_EQ(*first[1].asUInt(), 11u);
  EXPECT_EQ(first.rawBytes().size(), 8u);
  EXPECT_EQ(*(*nested)[1][0].asString(), "x");

  ASSERT_EQ(r->tensors().size(), 3u);
  const TensorRef &emb = r->tensors()[0];
  EXPECT_EQ(emb.name, "tok_embd.weight");
  EXPECT_EQ(emb.format, ElementType::F32);
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{2, 3})); // outermost first
  EXPECT_EQ(r->ggmlDims(0), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(emb.strides, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(emb.offset, r->dataOffset());
  EXPECT_EQ(emb.nbytes, 24u);
  const TensorRef *q = r->findTensor("blk.0.attn_q.weight");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->format, ElementType::Q8_0);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(q->strides, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(q->offset, r->dataOffset() + 32);
  EXPECT_EQ(q->nbytes, 68u);
  EXPECT_EQ(r->tensorBytes(*q).size(), 68u);
  EXPECT_EQ(r->tensors()[2].nbytes, 36u);
}

TEST(Gguf, OpensFromDiskAndSharesMapping) {
  TempDir dir;
  Bytes b = smallGguf();
  std::string path = dir.write("m.gguf", b.span());
  auto r = openGguf(path);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->mapping());
  WeightStore store;
  store.adopt(r->mapping());
  auto bytes = store.bytes(r->tensors()[1]);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->data(), r->tensorBytes(r->tensors()[1]).data());
  // A copy of the file object stays valid after the original goes away.
  GgufFile copy = *r;
  r = Error{"gone"};
  EXPECT_EQ(*copy.find("general.architecture")->asString(), "llama");
  EXPECT_TRUE(copy.findTensor("blk.0.ffn.weight"));
  auto missing = openGguf(dir.path + "/none.gguf");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(contains(missing.error().message, "none.gguf: cannot open"));
}

// Every proper prefix of a valid file is an error, never a crash.
TEST(Gguf, TruncationAtEveryByte) {
  Bytes b = smallGguf();
  for (size_t n = 0; n < b.size(); ++n) {
    auto r = parseGguf(b.span().first(n), "m.gguf");
    ASSERT_FALSE(r) << "prefix of " << n << " bytes parsed";
    EXPECT_TRUE(contains(r.error().message, "m.gguf")) << r.error().message;
  }
}

// With dataOptional (planning from the header), a prefix that holds the
// whole header parses, says which tensor's data is missing, and keeps every
// tensor's shape, type and absolute offset; a shorter prefix is an error.
TEST(Gguf, HeaderAloneWithDataOptional) {
  Bytes b = smallGguf();
  auto whole = parseGguf(b.span(), "m.gguf");
  ASSERT_TRUE(whole);
  EXPECT_TRUE(whole->missingData().empty());
  size_t dataStart = whole->dataOffset();
  for (size_t n = 0; n < b.size(); ++n) {
    auto r = parseGguf(b.span().first(n), "m.gguf", /*dataOptional=*/true);
    if (n < dataStart) {
      // The infos end before the padding; a cut in the padding still
      // leaves the header whole.
      if (!r)
        continue;
    }
    ASSERT_TRUE(r) << "prefix of " << n << " bytes: " << r.error().message;
    EXPECT_TRUE(contains(r->missingData(), "the file is truncated"))
        << r->missingData();
    ASSERT_EQ(r->tensors().size(), whole->tensors().size());
    for (size_t i = 0; i < r->tensors().size(); ++i) {
      EXPECT_EQ(r->tensors()[i].offset, whole->tensors()[i].offset);
      EXPECT_EQ(r->tensors()[i].shape, whole->tensors()[i].shape);
      EXPECT_EQ(r->tensors()[i].format, whole->tensors()[i].format);
    }
  }
  EXPECT_FALSE(parseGguf(b.span().first(20), "m.gguf", true));
}
// Random byte flips: any outcome but a crash (ASan/UBSan builds check more).
TEST(Gguf, MutationsNeverCrash) {
  Bytes base = smallGguf();
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes b = base;
    int flips = 1 + rng() % 4;
    for (int k = 0; k < flips; ++k)
      b.data[rng() % b.size()] = static_cast<std::byte>(rng());
    auto r = parseGguf(b.span(), "m.gguf");
    if (r)
      for (const GgufKeyValue &kv : r->metadata())
        for (GgufValue v : kv.value)
          (void)v.asString();
  }
}

TEST(Gguf, HeaderErrors) {
  Bytes b = smallGguf();
  Bytes magic = b;
  magic.data[0] = std::byte{'X'};
  EXPECT_TRUE(contains(errorOf(magic), "m.gguf: byte 0: wrong magic"));
  EXPECT_TRUE(contains(errorOf(buildGguf(0, {}, {}, 0, 32, 1)),
                       "version 1 (32-bit counts) is not supported"));
  EXPECT_TRUE(contains(errorOf(buildGguf(0, {}, {}, 0, 32, 4)),
                       "byte 4: unsupported GGUF version 4"));
  EXPECT_TRUE(
      contains(errorOf(buildGguf(0, {}, {}, 0, 32, 0x03000000)), "big-endian"));
  // Version 2 has the same layout.
  EXPECT_EQ(errorOf(buildGguf(0, {}, {}, 0, 32, 2)), "<no error>");
  // Huge counts are rejected before any allocation.
  Bytes counts;
  counts.raw("GGUF").u32(3).u64(1ull << 60).u64(0);
  EXPECT_TRUE(contains(errorOf(counts), "tensor count 1152921504606846976"));
  Bytes kvCount;
  kvCount.raw("GGUF").u32(3).u64(0).u64(~0ull).zeros(64);
  EXPECT_TRUE(contains(errorOf(kvCount), "byte 16: metadata count"));
}

TEST(Gguf, MetadataErrors) {
  // A string whose length runs past the end of the file.
  Bytes kv;
  kv.str("k").u32(kString).u64(1000).raw("abc");
  std::string e = errorOf(buildGguf(1, kv, {}, 0, 1));
  EXPECT_TRUE(contains(e, "m.gguf: byte 37: a string of key 'k' has length "
                          "1000 but only"))
      << e;
  // Key length past the end.
  Bytes key;
  key.u64(~0ull).zeros(16);
  EXPECT_TRUE(contains(errorOf(buildGguf(1, key, {}, 0, 1)),
                       "metadata key #0 has length 18446744073709551615"));
  // Unknown value type.
  Bytes unk;
  unk.str("k").u32(13).u32(0);
  EXPECT_TRUE(contains(errorOf(buildGguf(1, unk, {}, 0, 1)),
                       "key 'k': unknown value type 13"));
  // An array whose count cannot fit in the file.
  Bytes arr;
  arr.str("k").u32(kArray).u32(kU32).u64(1ull << 62).u32(1);
  EXPECT_TRUE(contains(errorOf(buildGguf(1, arr, {}, 0, 1)),
                       "key 'k': array of 4611686018427387904 u32 values"));
  Bytes arrT;
  arrT.str("k").u32(kArray).u32(77).u64(0);
  EXPECT_TRUE(contains(errorOf(buildGguf(1, arrT, {}, 0, 1)),
                       "array of unknown value type 77"));
  // Nesting deeper than the limit.
  Bytes deep;
  deep.str("k").u32(kArray);
  for (int i = 0; i < 20; ++i)
    deep.u32(kArray).u64(1);
  deep.u32(kU32).u64(0);
  EXPECT_TRUE(
      contains(errorOf(buildGguf(1, deep, {}, 0, 1)), "nested deeper than 8"));
  // Bools other than 0/1, duplicate keys.
  Bytes boolean;
  boolean.str("k").u32(kBool).u8(2);
  EXPECT_TRUE(
      contains(errorOf(buildGguf(1, boolean, {}, 0, 1)), "bool value 2"));
  Bytes dup;
  dup.str("k").u32(kU32).u32(1).str("k").u32(kU32).u32(2);
  EXPECT_TRUE(contains(errorOf(buildGguf(2, dup, {}, 0, 1)),
                       "duplicate metadata key 'k'"));
  // general.alignment: must be a u32 power of two.
  Bytes align;
  align.str("general.alignment").u32(kU32).u32(24);
  EXPECT_TRUE(contains(errorOf(buildGguf(1, align, {}, 0, 1)),
                       "'general.alignment' is 24, which is not a power"));
  Bytes alignT;
  alignT.str("general.alignment").u32(kString).str("32");
  EXPECT_TRUE(contains(errorOf(buildGguf(1, alignT, {}, 0, 1)),
                       "has type string, expected u32"));
}

TEST(Gguf, TensorErrors) {
  auto one = [](Info i, size_t data = 4096) {
    return errorOf(buildGguf(0, {}, {i}, data));
  };
  std::string e = one({"t", {1, 1, 1, 1, 1}, 0, 0});
  EXPECT_TRUE(contains(e, "m.gguf: tensor 't' at byte 24: n_dims is 5, more "
                          "than the maximum of 4"))
      << e;
  EXPECT_TRUE(contains(one({"t", {4, -2}, 0, 0}), "dimension 1 is negative"));
  EXPECT_TRUE(
      contains(one({"t", {1ll << 40, 1ll << 40}, 0, 0}), "overflows int64"));
  // The element count fits but the byte size does not.
  EXPECT_TRUE(contains(one({"t", {1ll << 30, 1ll << 30, 4}, 28, 0}),
                       "overflows 64 bits"));
  e = one({"blk.0.attn_q.weight", {32}, 12, 0});
  EXPECT_TRUE(contains(e, "tensor 'blk.0.attn_q.weight' at byte 63")) << e;
  EXPECT_TRUE(contains(e, "Q4_K (type 12) is not supported")) << e;
  EXPECT_TRUE(contains(one({"t", {32}, 14, 0}), "Q6_K (type 14)"));
  EXPECT_TRUE(contains(one({"t", {32}, 99, 0}), "unknown ggml type 99"));
  EXPECT_TRUE(contains(one({"t", {33}, 2, 0}),
                       "innermost dimension 33 is not a multiple of the "
                       "q4_0 block size 32"));
  EXPECT_TRUE(contains(one({"t", {8}, 0, 16}),
                       "data offset 16 is not a multiple of the alignment "
                       "32; the data is misaligned"));
  e = one({"t", {1000}, 0, 64}, 2000);
  EXPECT_TRUE(contains(e, "tensor 't' at byte 24: data [offset 64 from the "
                          "data section"))
      << e;
  EXPECT_TRUE(contains(e, "runs past the end of the file")) << e;
  EXPECT_TRUE(contains(one({"t", {8}, 0, ~0ull - 31}), "runs past the end"));
  e = errorOf(buildGguf(0, {}, {{"t", {8}, 0, 0}, {"t", {8}, 0, 32}}, 64));
  EXPECT_TRUE(contains(e, "duplicate tensor name")) << e;
  // Zero-sized and 0-d tensors are fine.
  EXPECT_EQ(one({"t", {0, 5}, 0, 0}), "<no error>");
  EXPECT_EQ(one({"t", {}, 0, 0}), "<no error>");
}

TEST(Gguf, SupportedTypes) {
  for (uint32_t t : {0u, 1u, 2u, 3u, 8u, 24u, 25u, 26u, 27u, 28u, 30u})
    EXPECT_TRUE(ggmlTypeToElementType(t)) << t;
  EXPECT_FALSE(ggmlTypeToElementType(12));
  EXPECT_EQ(ggmlTypeName(30), "BF16");
  EXPECT_EQ(ggmlTypeName(1000), "");
  auto bf =
      parseGguf(buildGguf(0, {}, {{"t", {4, 2}, 30, 0}}, 16).span(), "m.gguf");
  ASSERT_TRUE(bf) << bf.error().message;
  EXPECT_EQ(bf->tensors()[0].format, ElementType::BF16);
  EXPECT_EQ(bf->tensors()[0].nbytes, 16u);
}

} // namespace
