//===- test/runtime/WeightsTest.cpp - mapped weight slices ------*- C++ -*-===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

using namespace loom::rt;

namespace {
std::string writeFile(const std::string &name, int64_t n) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream os(path, std::ios::binary);
  for (int64_t i = 0; i < n; ++i)
    os.put(char(i % 251));
  return path;
}
} // namespace

TEST(Weights, SlicesPerRank) {
  std::string path = writeFile("loom_rt_weights.bin", 4096);
  int rc = runThreads(4, {}, [&](loom_rt_ctx *ctx) {
    int64_t r = loom_rt_rank(ctx);
    char err[256];
    EXPECT_EQ(loom_rt_ctx_map_weight(ctx, 1, path.c_str(), r * 1024, 1024, err,
                                     sizeof(err)),
              0)
        << err;
    const auto *w = static_cast<const unsigned char *>(loom_rt_weight(ctx, 1));
    for (int64_t i = 0; i < 1024; ++i)
      if (w[i] != (r * 1024 + i) % 251) {
        ADD_FAILURE() << "byte " << i << " of rank " << r;
        break;
      }
    static const float own[2] = {1, 2};
    loom_rt_ctx_set_weight(ctx, 0, own);
    EXPECT_EQ(loom_rt_weight(ctx, 0), own);
    return 0;
  });
  EXPECT_EQ(rc, 0);
  // One mapping shared by everyone.
  std::string e1, e2;
  auto a = mapFile(path, &e1), b = mapFile(path, &e2);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->size(), 4096);
}

TEST(Weights, MissingFileNamesTheFile) {
  std::string err;
  auto f = mapFile("/nonexistent/loom/w.bin", &err);
  EXPECT_FALSE(f);
  EXPECT_NE(err.find("'/nonexistent/loom/w.bin'"), std::string::npos) << err;
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
}

TEST(Weights, ShortFileNamesOffsetAndSize) {
  std::string path = writeFile("loom_rt_short.bin", 100);
  int rc = runThreads(1, {}, [&](loom_rt_ctx *ctx) {
    char err[512];
    EXPECT_EQ(
        loom_rt_ctx_map_weight(ctx, 0, path.c_str(), 64, 40, err, sizeof(err)),
        -1);
    std::string e = err;
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find("offset 64"), std::string::npos) << e;
    EXPECT_NE(e.find("size 40"), std::string::npos) << e;
    EXPECT_NE(e.find("100 bytes"), std::string::npos) << e;
    std::string e2;
    EXPECT_TRUE(mapWeight(ctx, 0, path, 60, 40, &e2)) << e2;
    EXPECT_FALSE(mapWeight(ctx, 0, path, -1, 4, &e2));
    return 0;
  });
  EXPECT_EQ(rc, 0);
}
