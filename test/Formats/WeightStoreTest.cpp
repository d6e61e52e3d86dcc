//===- WeightStoreTest.cpp - Weight store, conversions, dequantization ----===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/WeightStore.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace loom::fmt;
using namespace loom::fmt::test;
using loom::DType;
using loom::dtypeName;
using loom::dtypeSize;
using loom::kAllDTypes;

namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Block sizes are the ones of ggml-common.h.
// The plain formats are the bundle's dtypes, with the same sizes and names,
// except bool (DType i1) and i16 (no DType); block formats are not dtypes.
TEST(WeightStore, DTypes) {
  for (DType t : kAllDTypes) {
    ElementType e = toElementType(t);
    EXPECT_EQ(toDType(e), t) << dtypeName(t);
    EXPECT_EQ(blockElements(e), 1u);
    EXPECT_EQ(blockBytes(e), uint64_t(dtypeSize(t))) << dtypeName(t);
    if (t != DType::I1)
      EXPECT_EQ(elementTypeName(e), dtypeName(t));
  }
  EXPECT_EQ(toDType(ElementType::Bool), DType::I1);
  EXPECT_EQ(elementTypeName(ElementType::Bool), "bool");
  for (ElementType e : {ElementType::I16, ElementType::Q4_0, ElementType::Q4_1,
                        ElementType::Q8_0})
    EXPECT_EQ(toDType(e), std::nullopt) << elementTypeName(e);
}

TEST(WeightStore, BlockSizes) {
  EXPECT_EQ(blockElements(ElementType::Q4_0), 32u);
  EXPECT_EQ(blockBytes(ElementType::Q4_0), 18u);
  EXPECT_EQ(blockBytes(ElementType::Q4_1), 20u);
  EXPECT_EQ(blockBytes(ElementType::Q8_0), 34u);
  EXPECT_EQ(blockBytes(ElementType::BF16), 2u);
  EXPECT_EQ(blockBytes(ElementType::F64), 8u);
  EXPECT_EQ(blockBytes(ElementType::Bool), 1u);
  EXPECT_FALSE(isBlockFormat(ElementType::F32));
  EXPECT_TRUE(isBlockFormat(ElementType::Q8_0));
  for (auto t : {ElementType::F32, ElementType::Q4_1, ElementType::Bool})
    EXPECT_EQ(parseElementType(elementTypeName(t)), t);
  EXPECT_FALSE(parseElementType("q4_k"));
}

// The block formats are the GGUF formats of the one vocabulary of quant
// formats (loom/Support/QuantFormat.h): same names, block sizes and bytes,
// both ways; Loom's own int4/int8 and the plain types are not.
TEST(WeightStore, BlockFormatsAreTheQuantVocabulary) {
  using loom::quant::Format;
  for (Format f : loom::quant::kAllFormats) {
    std::optional<ElementType> e = blockElementType(f);
    EXPECT_EQ(e.has_value(), loom::quant::isGgufFormat(f))
        << loom::quant::formatName(f);
    if (!e)
      continue;
    EXPECT_EQ(blockFormatOf(*e), f);
    EXPECT_EQ(elementTypeName(*e), loom::quant::formatName(f));
    EXPECT_EQ(blockElements(*e), uint64_t(loom::quant::ggufBlock(f)->elements));
    EXPECT_EQ(blockBytes(*e), uint64_t(loom::quant::ggufBlock(f)->bytes));
  }
  EXPECT_EQ(blockElementType(Format::Int4), std::nullopt);
  for (ElementType e : {ElementType::F32, ElementType::I16, ElementType::Bool})
    EXPECT_EQ(blockFormatOf(e), std::nullopt) << elementTypeName(e);
}

// Element counts overflow int64 -> an error naming the dimension.
TEST(WeightStore, NumElementsOverflow) {
  std::vector<int64_t> ok = {3, 4, 5};
  EXPECT_EQ(*numElements(ok, "t"), 60u);
  std::vector<int64_t> big = {int64_t(1) << 32, int64_t(1) << 32};
  auto r = numElements(big, "x");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("overflows"), std::string::npos);
  std::vector<int64_t> neg = {2, -1};
  EXPECT_FALSE(numElements(neg, "x"));
  std::vector<int64_t> zero = {0, int64_t(1) << 40, 1000};
  EXPECT_EQ(*numElements(zero, "x"), 0u);
  // A zero dimension does not excuse an overflowing product of the others
  // (the strides would overflow); found by fuzz/gguf_fuzzer.
  std::vector<int64_t> zeroBig = {int64_t(1) << 40, int64_t(1) << 40, 0};
  EXPECT_FALSE(numElements(zeroBig, "x"));
  auto s = storageBytes(ElementType::Q4_0, 33, "x");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("q4_0 blocks"), std::string::npos);
  EXPECT_EQ(*storageBytes(ElementType::Q4_0, 64, "x"), 36u);
  EXPECT_FALSE(storageBytes(ElementType::F64, uint64_t(1) << 62, "x"));
}

// Strides count blocks along the innermost dim for block formats.
TEST(WeightStore, Strides) {
  std::vector<int64_t> shape = {3, 4, 64};
  EXPECT_EQ(contiguousStrides(ElementType::F32, shape),
            (std::vector<int64_t>{256, 64, 1}));
  EXPECT_EQ(contiguousStrides(ElementType::Q4_0, shape),
            (std::vector<int64_t>{8, 2, 1}));
  EXPECT_TRUE(contiguousStrides(ElementType::F32, {}).empty());
}

// Every half converts exactly and back (NaNs stay NaN).
TEST(WeightStore, HalfRoundTripExhaustive) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16ToF32(f32ToF16(f))));
      continue;
    }
    ASSERT_EQ(f32ToF16(f), h) << "half " << h;
  }
  EXPECT_EQ(f16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(f16ToF32(0xc000), -2.0f);
  EXPECT_EQ(f16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToF32(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(f16ToF32(0x7c00)));
  // Rounding: ties to even, overflow to infinity, underflow to zero.
  EXPECT_EQ(f32ToF16(65520.0f), 0x7c00);
  EXPECT_EQ(f32ToF16(65519.0f), 0x7bff);
  EXPECT_EQ(f32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(f32ToF16(std::ldexp(3.0f, -26)), 0x0001);
}

TEST(WeightStore, BFloat16) {
  EXPECT_EQ(bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(f32ToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: rounds to even (1).
  EXPECT_EQ(f32ToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(f32ToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16ToF32(f32ToBf16(std::nanf("")))));
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = bf16ToF32(static_cast<uint16_t>(h));
    if (!std::isnan(f))
      ASSERT_EQ(f32ToBf16(f), h);
  }
}

// Block decoding follows the layouts of REFERENCES.md.
TEST(WeightStore, DequantizeBlocks) {
  // Q4_0: d = 0.5; byte j = low nibble j, high nibble 15 - j.
  Bytes q40;
  q40.put<uint16_t>(f32ToF16(0.5f));
  for (int j = 0; j < 16; ++j)
    q40.u8(static_cast<uint8_t>(j | ((15 - j) << 4)));
  std::vector<float> out(32);
  ASSERT_TRUE(dequantizeToF32(ElementType::Q4_0, q40.span(), out));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.5f * (j - 8));
    EXPECT_EQ(out[j + 16], 0.5f * (15 - j - 8));
  }
  // Q4_1: x = d q + m.
  Bytes q41;
  q41.put<uint16_t>(f32ToF16(0.25f)).put<uint16_t>(f32ToF16(-1.0f));
  for (int j = 0; j < 16; ++j)
    q41.u8(static_cast<uint8_t>(j | (j << 4)));
  ASSERT_TRUE(dequantizeToF32(ElementType::Q4_1, q41.span(), out));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.25f * j - 1.0f);
    EXPECT_EQ(out[j + 16], 0.25f * j - 1.0f);
  }
  // Q8_0: x = d q.
  Bytes q80;
  q80.put<uint16_t>(f32ToF16(2.0f));
  for (int j = 0; j < 32; ++j)
    q80.put<int8_t>(static_cast<int8_t>(j * 8 - 128));
  ASSERT_TRUE(dequantizeToF32(ElementType::Q8_0, q80.span(), out));
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(out[j], 2.0f * (j * 8 - 128));
  // Sizes must match exactly.
  std::vector<float> small(31);
  EXPECT_FALSE(dequantizeToF32(ElementType::Q8_0, q80.span(), small));
  std::vector<float> two(64);
  EXPECT_FALSE(dequantizeToF32(ElementType::Q8_0, q80.span(), two));
}

TEST(WeightStore, DequantizePlain) {
  Bytes b;
  b.put<int16_t>(-3).put<int16_t>(7);
  std::vector<float> out(2);
  ASSERT_TRUE(dequantizeToF32(ElementType::I16, b.span(), out));
  EXPECT_EQ(out[0], -3.0f);
  EXPECT_EQ(out[1], 7.0f);
  Bytes f;
  f.put<double>(1.5).put<double>(-0.25);
  ASSERT_TRUE(dequantizeToF32(ElementType::F64, f.span(), out));
  EXPECT_EQ(out[1], -0.25f);
  Bytes bools;
  bools.u8(0).u8(1);
  ASSERT_TRUE(dequantizeToF32(ElementType::Bool, bools.span(), out));
  EXPECT_EQ(out[1], 1.0f);
  Bytes f32;
  f32.put<float>(std::nanf("1")).put<float>(-0.0f);
  ASSERT_TRUE(dequantizeToF32(ElementType::F32, f32.span(), out));
  EXPECT_EQ(bitsOf(out[1]), 0x80000000u);
}

TEST(WeightStore, MappedFileAndBounds) {
  TempDir dir;
  std::string path = dir.write("w.bin", std::string_view("0123456789"));
  WeightStore store;
  TensorRef ref{"t", path, 2, 4, ElementType::U8, {4}, {1}};
  auto b = store.bytes(ref);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(std::string_view(reinterpret_cast<const char *>(b->data()), 4),
            "2345");
  // The same file is mapped once.
  auto f1 = store.file(path);
  auto f2 = store.file(path);
  ASSERT_TRUE(f1 && f2);
  EXPECT_EQ(*f1, *f2);
  // Out of bounds, with an overflowing offset too.
  ref.offset = 8;
  auto bad = store.bytes(ref);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("runs past the end of the file (size 10)"),
            std::string::npos)
      << bad.error().message;
  ref.offset = std::numeric_limits<uint64_t>::max() - 1;
  EXPECT_FALSE(store.bytes(ref));
  // Missing file, folder, empty file.
  EXPECT_FALSE(MappedFile::open(dir.path + "/nope"));
  auto d = MappedFile::open(dir.path);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("not a regular file"), std::string::npos);
  std::string empty = dir.write("empty.bin", std::string_view());
  auto e = MappedFile::open(empty);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->fileSize(), 0u);
  // Moving keeps the mapping.
  auto m = MappedFile::open(path);
  ASSERT_TRUE(m);
  MappedFile moved = m.take();
  EXPECT_EQ(moved.fileSize(), 10u);
}

TEST(WeightStore, Fnv1a) {
  EXPECT_EQ(fnv1a64({}), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64(asBytes("a")), 0xaf63dc4c8601ec8cull);
}

} // namespace
