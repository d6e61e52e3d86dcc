//===- StateTableTest.cpp - device copies of state buffers (no device) ----===//
//
// runtime/cuda/StateTable.h with host memory standing in for the device:
// one copy per host address, zero-filled when made, the same address on
// every later call, never copied unless asked (write/read), freed on
// release; a second size for one address is an error, not a second copy.
//
//===----------------------------------------------------------------------===//

#include "StateTable.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

using loom::cuda::StateOps;
using loom::cuda::StateTable;

namespace {

/// Host memory as the "device", counting every operation.
struct FakeDevice {
  int allocs = 0, frees = 0, toDevice = 0, toHost = 0;
  int64_t failAbove = -1; ///< allocations above this size fail
  StateOps ops() {
    return StateOps{
        [this](int64_t bytes, uint64_t *out, std::string *error) {
          if (failAbove >= 0 && bytes > failAbove) {
            *error = "out of memory";
            return false;
          }
          ++allocs;
          // Garbage first: the table must not rely on the allocator.
          void *p = std::malloc(size_t(bytes));
          std::memset(p, 0xAB, size_t(bytes));
          std::memset(p, 0, size_t(bytes)); // the "device" zero fill
          *out = reinterpret_cast<uint64_t>(p);
          return true;
        },
        [this](uint64_t p) {
          ++frees;
          std::free(reinterpret_cast<void *>(p));
        },
        [this](uint64_t dst, const void *src, int64_t bytes, std::string *) {
          ++toDevice;
          std::memcpy(reinterpret_cast<void *>(dst), src, size_t(bytes));
          return true;
        },
        [this](void *dst, uint64_t src, int64_t bytes, std::string *) {
          ++toHost;
          std::memcpy(dst, reinterpret_cast<const void *>(src), size_t(bytes));
          return true;
        }};
  }
};

float *deviceFloats(uint64_t p) { return reinterpret_cast<float *>(p); }

} // namespace

TEST(StateTable, FirstCallMakesAZeroedCopyLaterCallsReuseIt) {
  FakeDevice dev;
  StateTable t(dev.ops());
  std::vector<float> host(64, 7.0f); // contents never read
  std::string err;
  uint64_t p = t.get(host.data(), 256, &err);
  ASSERT_NE(p, 0u) << err;
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(deviceFloats(p)[i], 0.0f);
  // The "program" writes in place; three more calls see the same buffer.
  deviceFloats(p)[3] = 42.0f;
  for (int call = 0; call < 3; ++call)
    EXPECT_EQ(t.get(host.data(), 256, &err), p);
  EXPECT_EQ(deviceFloats(p)[3], 42.0f);
  EXPECT_EQ(dev.allocs, 1);
  EXPECT_EQ(dev.toDevice, 0);
  EXPECT_EQ(dev.toHost, 0);
  EXPECT_EQ(host[3], 7.0f); // the host buffer is only the key
  EXPECT_EQ(t.bytes(), 256);
  EXPECT_EQ(t.size(), 1u);
}

TEST(StateTable, OneCopyPerAddressAnotherSizeIsAnError) {
  FakeDevice dev;
  StateTable t(dev.ops());
  std::vector<float> a(64), b(64);
  std::string err;
  uint64_t pa = t.get(a.data(), 256, &err);
  uint64_t pb = t.get(b.data(), 128, &err);
  ASSERT_NE(pa, 0u);
  ASSERT_NE(pb, 0u);
  EXPECT_NE(pa, pb);
  EXPECT_EQ(t.bytes(), 384);
  EXPECT_EQ(t.get(a.data(), 128, &err), 0u);
  EXPECT_NE(err.find("has a device copy of 256 bytes, not 128"),
            std::string::npos)
      << err;
  EXPECT_EQ(dev.allocs, 2);
  EXPECT_EQ(t.get(nullptr, 16, &err), 0u);
  EXPECT_EQ(t.get(a.data(), 0, &err), 0u);
  EXPECT_EQ(dev.allocs, 2);
}

TEST(StateTable, WriteAndReadCopyOnlyWhenAsked) {
  FakeDevice dev;
  StateTable t(dev.ops());
  std::vector<float> host(16, 1.5f);
  std::string err;
  // An initial state: made and filled from the host.
  ASSERT_TRUE(t.write(host.data(), 64, &err)) << err;
  uint64_t p = t.find(host.data());
  ASSERT_NE(p, 0u);
  EXPECT_EQ(deviceFloats(p)[15], 1.5f);
  EXPECT_EQ(t.get(host.data(), 64, &err), p);
  deviceFloats(p)[0] = -2.0f;
  EXPECT_EQ(host[0], 1.5f);
  ASSERT_TRUE(t.read(host.data(), 64, &err)) << err;
  EXPECT_EQ(host[0], -2.0f);
  EXPECT_EQ(dev.toDevice, 1);
  EXPECT_EQ(dev.toHost, 1);
  std::vector<float> other(16);
  EXPECT_FALSE(t.read(other.data(), 64, &err));
  EXPECT_NE(err.find("no device copy"), std::string::npos) << err;
  EXPECT_FALSE(t.read(host.data(), 32, &err));
}

TEST(StateTable, ReleaseFreesAndTheNextCallStartsFromZeros) {
  FakeDevice dev;
  StateTable t(dev.ops());
  std::vector<float> host(16), other(8);
  std::string err;
  uint64_t p = t.get(host.data(), 64, &err);
  deviceFloats(p)[1] = 3.0f;
  t.get(other.data(), 32, &err);
  EXPECT_TRUE(t.release(host.data()));
  EXPECT_FALSE(t.release(host.data()));
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(t.bytes(), 32);
  EXPECT_EQ(t.find(host.data()), 0u);
  // A reset: the same host address gets a fresh, zeroed copy (and may
  // change its size: a new context).
  uint64_t q = t.get(host.data(), 128, &err);
  ASSERT_NE(q, 0u) << err;
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(deviceFloats(q)[i], 0.0f);
  t.releaseAll();
  EXPECT_EQ(dev.frees, 3);
  EXPECT_EQ(dev.allocs, 3);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.bytes(), 0);
}

TEST(StateTable, DeviceFailureIsAnErrorAndNothingIsKept) {
  FakeDevice dev;
  dev.failAbove = 100;
  StateTable t(dev.ops());
  std::vector<float> host(64);
  std::string err;
  EXPECT_EQ(t.get(host.data(), 256, &err), 0u);
  EXPECT_EQ(err, "out of memory");
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.bytes(), 0);
}

TEST(StateTable, DestructorFreesEveryCopy) {
  FakeDevice dev;
  {
    StateTable t(dev.ops());
    std::vector<float> a(4), b(4);
    std::string err;
    t.get(a.data(), 16, &err);
    t.get(b.data(), 16, &err);
  }
  EXPECT_EQ(dev.allocs, 2);
  EXPECT_EQ(dev.frees, 2);
}
