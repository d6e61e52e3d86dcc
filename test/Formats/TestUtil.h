//===- TestUtil.h - Byte builders and temp files for format tests -*- C++
//-*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEST_FORMATS_TESTUTIL_H
#define LOOM_TEST_FORMATS_TESTUTIL_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace loom::fmt::test {

/// Little-endian byte builder.
class Bytes {
public:
  template <typename T> Bytes &put(T v) {
    size_t at = data.size();
    data.resize(at + sizeof v);
    std::memcpy(data.data() + at, &v, sizeof v);
    return *this;
  }
  Bytes &u8(uint8_t v) { return put(v); }
  Bytes &u32(uint32_t v) { return put(v); }
  Bytes &u64(uint64_t v) { return put(v); }
  Bytes &i64(int64_t v) { return put(v); }
  Bytes &raw(std::string_view s) {
    for (char c : s)
      data.push_back(static_cast<std::byte>(c));
    return *this;
  }
  /// A GGUF string: u64 length + bytes.
  Bytes &str(std::string_view s) {
    u64(s.size());
    return raw(s);
  }
  Bytes &zeros(size_t n) {
    data.resize(data.size() + n);
    return *this;
  }
  Bytes &padTo(size_t align) {
    while (data.size() % align)
      data.push_back(std::byte{0});
    return *this;
  }
  size_t size() const { return data.size(); }
  std::span<const std::byte> span() const { return data; }

  std::vector<std::byte> data;
};

inline std::span<const std::byte> asBytes(std::string_view s) {
  return {reinterpret_cast<const std::byte *>(s.data()), s.size()};
}

/// A temporary directory removed (with its files) at destruction.
class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/loom-formats-test-XXXXXX";
    char *p = ::mkdtemp(tmpl);
    path = p ? p : "/tmp";
  }
  ~TempDir() {
    for (const std::string &f : files)
      ::unlink(f.c_str());
    ::rmdir(path.c_str());
  }
  std::string write(const std::string &name, std::span<const std::byte> b) {
    std::string full = path + "/" + name;
    FILE *f = std::fopen(full.c_str(), "wb");
    if (f) {
      if (!b.empty())
        std::fwrite(b.data(), 1, b.size(), f);
      std::fclose(f);
    }
    files.push_back(full);
    return full;
  }
  std::string write(const std::string &name, std::string_view text) {
    return write(name, asBytes(text));
  }

  std::string path;

private:
  std::vector<std::string> files;
};

} // namespace loom::fmt::test

#endif // LOOM_TEST_FORMATS_TESTUTIL_H
