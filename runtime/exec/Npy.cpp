//===- Npy.cpp - minimal .npy reader/writer
//---------------------------------===//

#include "loom/runtime/Npy.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loom::run {

Buffer allocBuffer(int64_t bytes, bool zero) {
  size_t n = size_t(bytes > 0 ? bytes : 1);
  n = (n + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, n);
  if (p && zero)
    std::memset(p, 0, n);
  return Buffer(static_cast<char *>(p));
}

int64_t NpyArray::numElements() const {
  // readNpy checked that the product fits.
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

int64_t npyItemSize(const std::string &descr) {
  static const struct {
    const char *descr;
    int64_t size;
  } known[] = {{"<f4", 4}, {"<f2", 2}, {"<f8", 8}, {"<i8", 8}, {"<i4", 4},
               {"<i2", 2}, {"<u2", 2}, {"<u4", 4}, {"<u8", 8}, {"|i1", 1},
               {"|u1", 1}, {"|b1", 1}, {"|V2", 2}};
  for (const auto &k : known)
    if (descr == k.descr)
      return k.size;
  return 0;
}

namespace {

// A tiny scanner for the Python dict literal of an NPY header:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
struct Scanner {
  const std::string &s;
  size_t i = 0;
  explicit Scanner(const std::string &text) : s(text) {}
  void ws() {
    while (i < s.size() &&
           (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
      ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool peek(char c) {
    ws();
    return i < s.size() && s[i] == c;
  }
  bool str(std::string &out) {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"'))
      return false;
    char q = s[i++];
    out.clear();
    while (i < s.size() && s[i] != q)
      out.push_back(s[i++]);
    if (i >= s.size())
      return false;
    ++i;
    return true;
  }
  bool ident(std::string &out) {
    ws();
    out.clear();
    while (i < s.size() && (std::isalnum((unsigned char)s[i]) || s[i] == '_'))
      out.push_back(s[i++]);
    return !out.empty();
  }
  bool integer(int64_t &v) {
    ws();
    size_t start = i;
    while (i < s.size() && std::isdigit((unsigned char)s[i]))
      ++i;
    if (i == start)
      return false;
    // Python 2 era files may write longs as 3L.
    if (i < s.size() && s[i] == 'L')
      ++i;
    errno = 0;
    v = std::strtoll(s.c_str() + start, nullptr, 10);
    return errno == 0;
  }
};

bool normaliseDescr(const std::string &raw, std::string &out,
                    std::string *error) {
  char order = raw.empty() ? 0 : raw[0];
  std::string kind = raw;
  if (order == '<' || order == '>' || order == '=' || order == '|')
    kind = raw.substr(1);
  else
    order = '='; // numpy always writes one; accept a bare 'f4' too
  if (kind.size() < 2) {
    *error = "unsupported dtype '" + raw + "'";
    return false;
  }
  if (kind.substr(1) == "1" || kind == "V2") {
    out = "|" + kind; // byte order is irrelevant
  } else if (order == '>') {
    *error = "dtype '" + raw +
             "' is big-endian; save it little-endian "
             "(numpy: a.astype(a.dtype.newbyteorder('<')))";
    return false;
  } else {
    out = "<" + kind;
  }
  if (npyItemSize(out) == 0) {
    *error = "unsupported dtype '" + raw +
             "' (supported: <f4 <f2 <f8 <i8 "
             "<i4 |i1 |u1 |b1, and <u2 or |V2 holding bf16 bits)";
    return false;
  }
  return true;
}

} // namespace

bool parseNpyHeader(const std::string &header, std::string &descr,
                    bool &fortran, std::vector<int64_t> &shape,
                    std::string *error) {
  Scanner sc(header);
  bool haveDescr = false, haveOrder = false, haveShape = false;
  if (!sc.eat('{')) {
    *error = "malformed header (expected a dict)";
    return false;
  }
  while (!sc.eat('}')) {
    std::string key;
    if (!sc.str(key) || !sc.eat(':')) {
      *error = "malformed header near offset " + std::to_string(sc.i);
      return false;
    }
    if (key == "descr") {
      if (sc.peek('[')) {
        *error = "structured arrays (a record dtype) are not supported";
        return false;
      }
      std::string raw;
      if (!sc.str(raw)) {
        *error = "malformed 'descr'";
        return false;
      }
      if (!normaliseDescr(raw, descr, error))
        return false;
      haveDescr = true;
    } else if (key == "fortran_order") {
      std::string v;
      if (!sc.ident(v) || (v != "True" && v != "False")) {
        *error = "malformed 'fortran_order'";
        return false;
      }
      fortran = v == "True";
      haveOrder = true;
    } else if (key == "shape") {
      if (!sc.eat('(')) {
        *error = "malformed 'shape'";
        return false;
      }
      shape.clear();
      while (!sc.eat(')')) {
        int64_t d;
        if (!sc.integer(d)) {
          *error = "malformed 'shape'";
          return false;
        }
        shape.push_back(d);
        if (!sc.eat(',') && !sc.peek(')')) {
          *error = "malformed 'shape'";
          return false;
        }
      }
      haveShape = true;
    } else {
      *error = "unexpected header key '" + key + "'";
      return false;
    }
    if (!sc.eat(',') && !sc.peek('}')) {
      *error = "malformed header near offset " + std::to_string(sc.i);
      return false;
    }
  }
  if (!haveDescr || !haveOrder || !haveShape) {
    *error = std::string("header lacks '") +
             (!haveDescr   ? "descr"
              : !haveOrder ? "fortran_order"
                           : "shape") +
             "'";
    return false;
  }
  return true;
}

bool npyByteCount(const std::vector<int64_t> &shape, int64_t itemSize,
                  int64_t &bytes, std::string *error) {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      *error = "negative dimension " + std::to_string(shape[d]) + " in shape " +
               npyShapeString(shape);
      return false;
    }
    if (__builtin_mul_overflow(n, shape[d], &n)) {
      *error = "shape " + npyShapeString(shape) +
               " has more elements than fit in 64 bits";
      return false;
    }
  }
  if (__builtin_mul_overflow(n, itemSize, &bytes)) {
    *error = "shape " + npyShapeString(shape) + " of " +
             std::to_string(itemSize) +
             "-byte elements has more bytes than fit in 64 bits";
    return false;
  }
  return true;
}

std::string npyShapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

namespace {

/// The reader behind readNpy and readNpyBytes: `read(dst, n)` returns the
/// bytes it copied; `size` is the whole image's size (the data promised by
/// the header is checked against it before anything is allocated).
template <typename ReadFn>
bool readNpyImpl(ReadFn read, int64_t size, NpyArray &out, std::string *error) {
  auto fail = [&](const std::string &msg) {
    *error = msg;
    return false;
  };
  unsigned char magic[8];
  if (read(magic, 8) != 8 || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return fail("not a .npy file (bad magic; write it with numpy.save)");
  int major = magic[6];
  uint32_t hlen = 0;
  int64_t pre = 0;
  if (major == 1) {
    unsigned char b[2];
    if (read(b, 2) != 2)
      return fail("truncated header");
    hlen = uint32_t(b[0]) | uint32_t(b[1]) << 8;
    pre = 10;
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (read(b, 4) != 4)
      return fail("truncated header");
    hlen = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 |
           uint32_t(b[3]) << 24;
    pre = 12;
  } else {
    return fail("unsupported .npy format version " + std::to_string(major) +
                "." + std::to_string(magic[7]) + " (supported: 1.0, 2.0, 3.0)");
  }
  if (hlen > (1u << 24))
    return fail("header of " + std::to_string(hlen) + " bytes is too large");
  if (int64_t(hlen) > size - pre)
    return fail("truncated header");
  std::string header(hlen, '\0');
  if (read(header.data(), hlen) != hlen)
    return fail("truncated header");

  bool fortran = false;
  std::string herr;
  if (!parseNpyHeader(header, out.descr, fortran, out.shape, &herr))
    return fail(herr);
  if (fortran && out.shape.size() > 1) {
    int big = 0; // at most one dim > 1: the same bytes as C order
    for (int64_t d : out.shape)
      big += d > 1;
    if (big > 1)
      return fail("array is in Fortran order; save it in C order "
                  "(numpy: np.save(f, np.ascontiguousarray(a)))");
  }
  out.itemSize = npyItemSize(out.descr);
  int64_t bytes = 0;
  if (!npyByteCount(out.shape, out.itemSize, bytes, &herr))
    return fail(herr);
  // Checked against the file before allocating: a header cannot make us
  // allocate (or read) more than the file holds.
  int64_t have = size - pre - int64_t(hlen);
  if (bytes > have)
    return fail("truncated data: the header promises " + std::to_string(bytes) +
                " bytes (shape " + npyShapeString(out.shape) + ", " +
                out.descr + "), the file has " + std::to_string(have));
  out.data = allocBuffer(bytes);
  if (!out.data)
    return fail("out of memory reading " + std::to_string(bytes) + " bytes");
  size_t got = bytes ? read(out.data.get(), size_t(bytes)) : 0;
  if (int64_t(got) != bytes)
    return fail("truncated data: the header promises " + std::to_string(bytes) +
                " bytes, the file has " + std::to_string(got));
  return true;
}

} // namespace

bool readNpy(const std::string &path, NpyArray &out, std::string *error) {
  // O_NONBLOCK: a FIFO or a device must not block the open; only regular
  // files are read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *error = std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    *error = "not a regular file (a FIFO, device or directory); give a .npy "
             "file written by numpy.save";
    return false;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0)
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    *error = std::string("cannot open: ") + std::strerror(errno);
    ::close(fd);
    return false;
  }
  struct Closer {
    FILE *f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  return readNpyImpl(
      [&](void *dst, size_t n) { return std::fread(dst, 1, n, f); },
      int64_t(st.st_size), out, error);
}

bool readNpyBytes(const void *data, size_t size, NpyArray &out,
                  std::string *error) {
  const char *p = static_cast<const char *>(data);
  size_t pos = 0;
  return readNpyImpl(
      [&](void *dst, size_t n) {
        size_t k = std::min(n, size - pos);
        if (k)
          std::memcpy(dst, p + pos, k);
        pos += k;
        return k;
      },
      int64_t(size), out, error);
}

bool writeNpyTemp(const std::string &path, const std::string &descr,
                  const std::vector<int64_t> &shape, const void *data,
                  int64_t nbytes, std::string *tmpOut, std::string *error) {
  std::string dict = "{'descr': '" + descr +
                     "', 'fortran_order': False, "
                     "'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += (i ? ", " : "") + std::to_string(shape[i]);
  dict += shape.size() == 1 ? ",), }" : "), }";
  // Pad with spaces so that magic + length + header is a multiple of 64 and
  // the header ends with '\n' (what numpy writes).
  bool v2 = false;
  size_t pre = 10;
  size_t total = (pre + dict.size() + 1 + 63) / 64 * 64;
  if (total - pre > 65535) {
    v2 = true;
    pre = 12;
    total = (pre + dict.size() + 1 + 63) / 64 * 64;
  }
  size_t hlen = total - pre;
  dict.append(hlen - dict.size() - 1, ' ');
  dict.push_back('\n');

  std::string head = "\x93NUMPY";
  head.push_back(char(v2 ? 2 : 1));
  head.push_back(0);
  if (v2) {
    for (int b = 0; b < 4; ++b)
      head.push_back(char((hlen >> (8 * b)) & 0xff));
  } else {
    head.push_back(char(hlen & 0xff));
    head.push_back(char((hlen >> 8) & 0xff));
  }
  head += dict;

  // Temporary in the same directory, renamed over the target when complete.
  static std::atomic<int> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create '" + tmp + "': " + std::strerror(errno);
    return false;
  }
  auto writeAll = [&](const char *p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        return false;
      }
      p += w;
      n -= size_t(w);
    }
    return true;
  };
  bool ok = writeAll(head.data(), head.size()) &&
            writeAll(static_cast<const char *>(data), size_t(nbytes));
  int savedErrno = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    savedErrno = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    *error = "cannot write '" + tmp + "': " + std::strerror(savedErrno);
    return false;
  }
  *tmpOut = tmp;
  return true;
}

bool writeNpy(const std::string &path, const std::string &descr,
              const std::vector<int64_t> &shape, const void *data,
              int64_t nbytes, std::string *error) {
  std::string tmp;
  if (!writeNpyTemp(path, descr, shape, data, nbytes, &tmp, error))
    return false;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int savedErrno = errno;
    ::unlink(tmp.c_str());
    *error = "cannot rename '" + tmp + "' to '" + path +
             "': " + std::strerror(savedErrno);
    return false;
  }
  return true;
}

} // namespace loom::run
