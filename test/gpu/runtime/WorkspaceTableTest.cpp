//===- WorkspaceTableTest.cpp - the entries' workspaces (no device) -------===//
//
// runtime/cuda/WorkspaceTable.h with host memory standing in for the
// device: one workspace per key, allocated by the first call, the same
// address on every later one (no allocation per call), freed on release
// and allocated again after it; another size for one key, a null key, a
// size of 0 and a refused allocation are errors.
//
//===----------------------------------------------------------------------===//

#include "WorkspaceTable.h"

#include <gtest/gtest.h>

#include <cstdlib>

using loom::cuda::WorkspaceOps;
using loom::cuda::WorkspaceTable;

namespace {

/// Host memory as the "device", counting allocations and frees.
struct FakeDevice {
  int allocs = 0, frees = 0;
  int64_t failAbove = -1; ///< allocations above this size fail
  WorkspaceOps ops() {
    return WorkspaceOps{
        [this](int64_t bytes, uint64_t *out, std::string *error) {
          if (failAbove >= 0 && bytes > failAbove) {
            *error = "out of memory";
            return false;
          }
          ++allocs;
          *out = reinterpret_cast<uint64_t>(std::malloc(size_t(bytes)));
          return true;
        },
        [this](uint64_t p) {
          ++frees;
          std::free(reinterpret_cast<void *>(p));
        }};
  }
};

// Two entries' keys (the globals of a bundle).
char entryA, entryB;

TEST(WorkspaceTable, AllocatedOnceAndKept) {
  FakeDevice dev;
  WorkspaceTable t(dev.ops());
  std::string error;
  uint64_t p = t.get(&entryA, 8192, &error);
  ASSERT_NE(p, 0u) << error;
  // Three more calls: the same workspace, no allocation.
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(t.get(&entryA, 8192, &error), p);
  EXPECT_EQ(dev.allocs, 1);
  EXPECT_EQ(t.bytes(), 8192);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.find(&entryA), p);
  EXPECT_EQ(t.find(&entryB), 0u);
}

TEST(WorkspaceTable, OnePerKey) {
  FakeDevice dev;
  WorkspaceTable t(dev.ops());
  std::string error;
  uint64_t a = t.get(&entryA, 256, &error);
  uint64_t b = t.get(&entryB, 512, &error);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(dev.allocs, 2);
  EXPECT_EQ(t.bytes(), 768);
  EXPECT_EQ(t.size(), 2u);
}

TEST(WorkspaceTable, ReleaseFreesAndTheNextCallAllocatesAgain) {
  FakeDevice dev;
  WorkspaceTable t(dev.ops());
  std::string error;
  ASSERT_NE(t.get(&entryA, 256, &error), 0u);
  ASSERT_NE(t.get(&entryB, 512, &error), 0u);
  t.releaseAll();
  EXPECT_EQ(dev.frees, 2);
  EXPECT_EQ(t.bytes(), 0);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.find(&entryA), 0u);
  ASSERT_NE(t.get(&entryA, 256, &error), 0u);
  EXPECT_EQ(dev.allocs, 3);
}

TEST(WorkspaceTable, DestructorFrees) {
  FakeDevice dev;
  {
    WorkspaceTable t(dev.ops());
    std::string error;
    ASSERT_NE(t.get(&entryA, 256, &error), 0u);
  }
  EXPECT_EQ(dev.frees, 1);
}

TEST(WorkspaceTable, AnotherSizeForOneKeyIsAnError) {
  FakeDevice dev;
  WorkspaceTable t(dev.ops());
  std::string error;
  uint64_t p = t.get(&entryA, 256, &error);
  ASSERT_NE(p, 0u);
  EXPECT_EQ(t.get(&entryA, 512, &error), 0u);
  EXPECT_NE(error.find("has 256 bytes, not 512"), std::string::npos) << error;
  // The workspace is unchanged.
  EXPECT_EQ(t.find(&entryA), p);
  EXPECT_EQ(dev.allocs, 1);
  EXPECT_EQ(t.bytes(), 256);
}

// Ranks sharing one device (the single-device communicator's threads) run
// the same entry at once: each rank (slot) has its own workspace of the
// entry, and each keeps its address.
TEST(WorkspaceTable, EachRankHasItsOwnWorkspace) {
  FakeDevice dev;
  WorkspaceTable t(dev.ops());
  std::string error;
  uint64_t r0 = t.get(&entryA, 256, &error, 0);
  uint64_t r1 = t.get(&entryA, 256, &error, 1);
  ASSERT_NE(r0, 0u);
  ASSERT_NE(r1, 0u);
  EXPECT_NE(r0, r1);
  EXPECT_EQ(t.get(&entryA, 256, &error, 1), r1);
  EXPECT_EQ(t.get(&entryA, 256, &error, 0), r0);
  EXPECT_EQ(t.find(&entryA, 1), r1);
  EXPECT_EQ(t.find(&entryA), 0u); // no workspace outside a rank yet
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.bytes(), 512);
  EXPECT_EQ(dev.allocs, 2);
}

TEST(WorkspaceTable, BadArgumentsAndRefusals) {
  FakeDevice dev;
  dev.failAbove = 1024;
  WorkspaceTable t(dev.ops());
  std::string error;
  EXPECT_EQ(t.get(nullptr, 256, &error), 0u);
  EXPECT_NE(error.find("needs a key and a positive size"), std::string::npos);
  EXPECT_EQ(t.get(&entryA, 0, &error), 0u);
  EXPECT_EQ(t.get(&entryA, 4096, &error), 0u);
  EXPECT_EQ(error, "out of memory");
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(dev.allocs, 0);
  // A refused allocation is not remembered: a later call may succeed.
  dev.failAbove = -1;
  EXPECT_NE(t.get(&entryA, 4096, &error), 0u);
}

} // namespace
