//===- BundleCheckTest.cpp - checks of a bundle before dlopen
//--------------===//

#include "loom/runtime/BundleCheck.h"

#include "loom/runtime/Fnv.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

using namespace loom::run;

namespace {

std::string tempPath(const char *name) {
  return ::testing::TempDir() + "/loom_run_bc_" + std::to_string(getpid()) +
         "_" + name;
}

/// The path of the C library this test links (a real ELF shared object).
std::string libcPath() {
  Dl_info info{};
  EXPECT_NE(dladdr(reinterpret_cast<void *>(&std::fopen), &info), 0);
  return info.dli_fname ? info.dli_fname : "";
}

std::string readAll(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(BundleCheck, ElfLibraryWholeAndTruncated) {
  std::string lib = libcPath(), err;
  ASSERT_FALSE(lib.empty());
  EXPECT_TRUE(checkElfLibrary(lib, &err)) << err;
  // A truncated copy (what a partial copy or a full disk leaves): dlopen of
  // it dies of SIGBUS; refused here with the sizes.
  std::string bytes = readAll(lib), p = tempPath("trunc.so");
  for (size_t keep : {bytes.size() / 2, size_t(4096), size_t(40)}) {
    std::ofstream(p, std::ios::binary) << bytes.substr(0, keep);
    EXPECT_FALSE(checkElfLibrary(p, &err)) << keep;
    EXPECT_NE(err.find("recompile with loomc"), std::string::npos) << err;
  }
  std::ofstream(p, std::ios::binary) << "garbage\n";
  EXPECT_FALSE(checkElfLibrary(p, &err));
  EXPECT_NE(err.find("not an ELF shared library"), std::string::npos) << err;
  std::remove(p.c_str());
  EXPECT_FALSE(checkElfLibrary("/dev/null", &err));
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
}

TEST(BundleCheck, Integrity) {
  std::string p = tempPath("lib.so"), err;
  std::ofstream(p, std::ios::binary) << "library bytes";
  Manifest m;
  m.entriesHash = "fnv1a64:1111111111111111";
  EXPECT_FALSE(checkBundleIntegrity(m, p, &err));
  EXPECT_NE(err.find("integrity: missing"), std::string::npos) << err;
  m.integrity.present = true;
  std::string bytes = "library bytes";
  m.integrity.library =
      loom::fnvString(loom::fnv1a64(bytes.data(), bytes.size()));
  m.integrity.entries = m.entriesHash;
  EXPECT_TRUE(checkBundleIntegrity(m, p, &err)) << err;
  m.integrity.entries = "fnv1a64:2222222222222222";
  EXPECT_FALSE(checkBundleIntegrity(m, p, &err));
  EXPECT_NE(err.find("integrity.entries"), std::string::npos) << err;
  m.integrity.entries = m.entriesHash;
  std::ofstream(p, std::ios::binary | std::ios::app) << "!";
  EXPECT_FALSE(checkBundleIntegrity(m, p, &err));
  EXPECT_NE(err.find("integrity.library"), std::string::npos) << err;
  std::remove(p.c_str());
}

TEST(BundleCheck, Fnv1a64KnownValues) {
  // Reference values of FNV-1a 64 (the FNV authors' test vectors).
  EXPECT_EQ(loom::fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(loom::fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(loom::fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}

TEST(BundleCheck, CpuFeatures) {
  TargetInfo t;
  t.features = {"sse2", "loom-made-up-feature"};
  std::vector<std::string> missing = missingCpuFeatures(t);
#if defined(__x86_64__)
  EXPECT_EQ(missing, (std::vector<std::string>{"loom-made-up-feature"}));
#else
  EXPECT_EQ(missing.size(), 2u);
#endif
}

} // namespace
