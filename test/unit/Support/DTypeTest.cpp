//===- DTypeTest.cpp - the element-type vocabulary ------------------------===//
//
// loom/Support/DType.h: every dtype's name parses back to it, the names are
// the manifest's on-disk spelling (bundles written before the shared header
// still load), and the sizes are the bytes the runtime allocates.
//
//===----------------------------------------------------------------------===//

#include "loom/Support/DType.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace loom;

namespace {

TEST(DType, NamesRoundTrip) {
  std::set<std::string> names;
  for (DType t : kAllDTypes) {
    std::optional<DType> back = parseDType(dtypeName(t));
    ASSERT_TRUE(back) << dtypeName(t);
    EXPECT_EQ(*back, t);
    EXPECT_TRUE(names.insert(dtypeName(t)).second) << "duplicate name";
  }
  EXPECT_EQ(names.size(), std::size(kAllDTypes));
}

// The manifest's spelling (docs/BUNDLE.md) and the element sizes.
TEST(DType, ManifestSpellingAndSizes) {
  const std::pair<const char *, int64_t> expected[] = {
      {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"f64", 8}, {"i8", 1},
      {"i32", 4}, {"i64", 8}, {"u8", 1},   {"i1", 1}};
  ASSERT_EQ(std::size(expected), std::size(kAllDTypes));
  for (auto [name, size] : expected) {
    std::optional<DType> t = parseDType(name);
    ASSERT_TRUE(t) << name;
    EXPECT_EQ(dtypeSize(*t), size) << name;
  }
}

TEST(DType, RefusesOtherNames) {
  for (const char *name : {"", "F32", "float32", "f8", "q4_0", "bool", "i16"})
    EXPECT_FALSE(parseDType(name)) << name;
}

// Usable in constant expressions (switch tables of the runtime).
static_assert(dtypeSize(DType::BF16) == 2);
static_assert(parseDType("i64") == DType::I64);

} // namespace
