//===- loom/runtime/Fnv.h - FNV-1a 64 for bundle integrity ------*- C++ -*-===//
//
// The 64-bit FNV-1a hash (Fowler/Noll/Vo; offset basis 14695981039346656037,
// prime 1099511628211) that ties a bundle's manifest to its library
// (docs/BUNDLE.md, "integrity"). Written by lib/Bundle, checked by loom-run
// before dlopen. Not a cryptographic hash: it catches a manifest that does
// not belong to its library (an edit, a copy from another build, a
// truncated or replaced .so), not an adversary. Header-only, no LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_FNV_H
#define LOOM_RUNTIME_FNV_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace loom {

constexpr uint64_t kFnv64Basis = 14695981039346656037ull;
constexpr uint64_t kFnv64Prime = 1099511628211ull;

inline uint64_t fnv1a64(const void *data, size_t size,
                        uint64_t h = kFnv64Basis) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= kFnv64Prime;
  }
  return h;
}

/// "fnv1a64:" and 16 lower-case hex digits: how the manifest writes a hash.
inline std::string fnvString(uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "fnv1a64:%016llx", (unsigned long long)h);
  return buf;
}

/// The hash of a whole file; false (with errno set) if it cannot be read.
inline bool fnv1a64File(const std::string &path, uint64_t &out) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  uint64_t h = kFnv64Basis;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    h = fnv1a64(buf, n, h);
  bool ok = !std::ferror(f);
  std::fclose(f);
  out = h;
  return ok;
}

} // namespace loom

#endif // LOOM_RUNTIME_FNV_H
