//===- NpyTest.cpp - the .npy reader/writer
//--------------------------------===//

#include "loom/runtime/Npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace loom::run;

namespace {

std::string tempPath(const char *name) {
  return ::testing::TempDir() + "/loom_run_npy_" + std::to_string(getpid()) +
         "_" + name;
}

void writeRaw(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string npyImage(const std::string &dict, const std::string &data,
                     int major = 1) {
  std::string h = dict;
  size_t pre = major == 1 ? 10 : 12;
  while ((pre + h.size() + 1) % 64)
    h.push_back(' ');
  h.push_back('\n');
  std::string s = "\x93NUMPY";
  s.push_back(char(major));
  s.push_back(0);
  if (major == 1) {
    s.push_back(char(h.size() & 0xff));
    s.push_back(char(h.size() >> 8));
  } else {
    for (int b = 0; b < 4; ++b)
      s.push_back(char((h.size() >> (8 * b)) & 0xff));
  }
  return s + h + data;
}

TEST(Npy, RoundTrip) {
  std::string p = tempPath("rt.npy");
  float data[6] = {1, 2, 3, 4, 5, 6};
  std::string err;
  ASSERT_TRUE(writeNpy(p, "<f4", {2, 3}, data, sizeof(data), &err)) << err;
  NpyArray a;
  ASSERT_TRUE(readNpy(p, a, &err)) << err;
  EXPECT_EQ(a.descr, "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(a.data.get(), data, sizeof(data)), 0);
  // Header is padded to 64 bytes and ends with '\n' (what numpy does).
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ((s.size() - sizeof(data)) % 64, 0u);
  EXPECT_EQ(s[s.size() - sizeof(data) - 1], '\n');
  EXPECT_NE(s.find("'shape': (2, 3)"), std::string::npos);
  std::remove(p.c_str());
}

TEST(Npy, ZeroDAndOneDShapes) {
  std::string p = tempPath("0d.npy"), err;
  double v = 2.5;
  ASSERT_TRUE(writeNpy(p, "<f8", {}, &v, 8, &err)) << err;
  NpyArray a;
  ASSERT_TRUE(readNpy(p, a, &err)) << err;
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.numElements(), 1);
  EXPECT_EQ(*reinterpret_cast<double *>(a.data.get()), 2.5);
  int64_t w[3] = {7, 8, 9};
  ASSERT_TRUE(writeNpy(p, "<i8", {3}, w, sizeof(w), &err)) << err;
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(s.find("'shape': (3,)"), std::string::npos);
  std::remove(p.c_str());
}

TEST(Npy, Version2AndNativeOrder) {
  std::string p = tempPath("v2.npy"), err;
  int32_t d[2] = {3, -4};
  writeRaw(p, npyImage("{'descr': '=i4', 'fortran_order': False, "
                       "'shape': (2,), }",
                       std::string(reinterpret_cast<char *>(d), 8), 2));
  NpyArray a;
  ASSERT_TRUE(readNpy(p, a, &err)) << err;
  EXPECT_EQ(a.descr, "<i4");
  EXPECT_EQ(reinterpret_cast<int32_t *>(a.data.get())[1], -4);
  std::remove(p.c_str());
}

TEST(Npy, OneByteTypesNormalise) {
  std::string descr, err;
  bool f;
  std::vector<int64_t> shape;
  ASSERT_TRUE(parseNpyHeader("{'descr': '|b1', 'fortran_order': False, "
                             "'shape': (), }",
                             descr, f, shape, &err));
  EXPECT_EQ(descr, "|b1");
  ASSERT_TRUE(parseNpyHeader("{\"descr\": \"<u1\", \"fortran_order\": False, "
                             "\"shape\": (4, 5), }",
                             descr, f, shape, &err));
  EXPECT_EQ(descr, "|u1");
  EXPECT_EQ(shape, (std::vector<int64_t>{4, 5}));
}

TEST(Npy, RejectsFortranOrder) {
  std::string p = tempPath("f.npy"), err;
  writeRaw(p, npyImage("{'descr': '<f4', 'fortran_order': True, "
                       "'shape': (2, 2), }",
                       std::string(16, '\0')));
  NpyArray a;
  EXPECT_FALSE(readNpy(p, a, &err));
  EXPECT_NE(err.find("Fortran order"), std::string::npos) << err;
  std::remove(p.c_str());
}

TEST(Npy, RejectsBigEndianStructuredAndUnknown) {
  std::string descr, err;
  bool f;
  std::vector<int64_t> shape;
  EXPECT_FALSE(parseNpyHeader("{'descr': '>f4', 'fortran_order': False, "
                              "'shape': (1,), }",
                              descr, f, shape, &err));
  EXPECT_NE(err.find("big-endian"), std::string::npos) << err;
  EXPECT_FALSE(parseNpyHeader("{'descr': [('a', '<f4')], 'fortran_order': "
                              "False, 'shape': (1,), }",
                              descr, f, shape, &err));
  EXPECT_NE(err.find("structured"), std::string::npos) << err;
  EXPECT_FALSE(parseNpyHeader("{'descr': '<c8', 'fortran_order': False, "
                              "'shape': (1,), }",
                              descr, f, shape, &err));
  EXPECT_NE(err.find("unsupported dtype '<c8'"), std::string::npos) << err;
  EXPECT_FALSE(parseNpyHeader("{'descr': '<f4', 'shape': (1,), }", descr, f,
                              shape, &err));
  EXPECT_NE(err.find("fortran_order"), std::string::npos) << err;
}

TEST(Npy, RejectsTruncatedAndNonNpy) {
  std::string p = tempPath("t.npy"), err;
  writeRaw(p, npyImage("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (4,), }",
                       std::string(8, '\0')));
  NpyArray a;
  EXPECT_FALSE(readNpy(p, a, &err));
  EXPECT_NE(err.find("truncated data"), std::string::npos) << err;
  writeRaw(p, "hello world, not numpy");
  EXPECT_FALSE(readNpy(p, a, &err));
  EXPECT_NE(err.find("not a .npy file"), std::string::npos) << err;
  std::remove(p.c_str());
  EXPECT_FALSE(readNpy(p, a, &err));
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
}

// Shapes whose element or byte count overflows 64 bits, or wraps to 0, are
// refused with the shape before anything is allocated or read (issue 13).
TEST(Npy, RejectsOverflowingShapes) {
  std::string p = tempPath("ovf.npy"), err;
  NpyArray a;
  // 2^32 * 2^32 elements wraps to 0 in int64 arithmetic.
  writeRaw(p, npyImage("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (4294967296, 4294967296), }",
                       ""));
  EXPECT_FALSE(readNpy(p, a, &err));
  EXPECT_NE(err.find("more elements than fit in 64 bits"), std::string::npos)
      << err;
  EXPECT_NE(err.find("(4294967296, 4294967296)"), std::string::npos) << err;
  // 2^62 elements fit, their bytes (x4) do not.
  writeRaw(p, npyImage("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (4611686018427387904,), }",
                       ""));
  EXPECT_FALSE(readNpy(p, a, &err));
  EXPECT_NE(err.find("more bytes than fit in 64 bits"), std::string::npos)
      << err;
  // A product that fits but is far larger than the file: refused before
  // allocating (no multi-GiB allocation, no read past the buffer).
  writeRaw(p, npyImage("{'descr': '<f8', 'fortran_order': False, "
                       "'shape': (1048576, 1048576), }",
                       std::string(64, '\0')));
  EXPECT_FALSE(readNpy(p, a, &err));
  EXPECT_NE(err.find("truncated data: the header promises 8796093022208 "
                     "bytes"),
            std::string::npos)
      << err;
  // A zero dimension next to a huge one: 0 elements, accepted.
  writeRaw(p, npyImage("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (0, 9223372036854775807), }",
                       ""));
  EXPECT_TRUE(readNpy(p, a, &err)) << err;
  EXPECT_EQ(a.numBytes(), 0);
  std::remove(p.c_str());
}

TEST(Npy, InMemoryReaderMatchesFile) {
  std::string img = npyImage("{'descr': '<i4', 'fortran_order': False, "
                             "'shape': (2,), }",
                             std::string("\1\0\0\0\2\0\0\0", 8));
  NpyArray a;
  std::string err;
  ASSERT_TRUE(readNpyBytes(img.data(), img.size(), a, &err)) << err;
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(reinterpret_cast<int32_t *>(a.data.get())[1], 2);
  EXPECT_FALSE(readNpyBytes(img.data(), img.size() - 1, a, &err));
  EXPECT_NE(err.find("truncated data"), std::string::npos) << err;
}

// A FIFO (or a device) is refused at once instead of blocking in open().
TEST(Npy, RefusesFifoWithoutBlocking) {
  std::string p = tempPath("fifo.npy"), err;
  std::remove(p.c_str());
  ASSERT_EQ(mkfifo(p.c_str(), 0600), 0);
  NpyArray a;
  EXPECT_FALSE(readNpy(p, a, &err));
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
  std::remove(p.c_str());
  EXPECT_FALSE(readNpy("/dev/zero", a, &err));
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
}

} // namespace
