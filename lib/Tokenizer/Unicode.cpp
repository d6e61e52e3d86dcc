//===- Unicode.cpp - UTF-8 decoding, GPT-2 byte map, Utf8Stream -----------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Only encoding-level work lives here (UTF-8 framing and the GPT-2 byte map);
// character classes (letters, numbers, white space) come from PCRE2 in
// Regex.cpp, so there is no Unicode table in this project.
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"

namespace loom::tok {

namespace {
constexpr uint32_t kReplacement = 0xFFFD;

bool isCont(uint8_t b) { return (b & 0xC0) == 0x80; }
} // namespace

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

size_t utf8LeadLength(uint8_t b) {
  static const size_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                    1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[b >> 4];
}

// llama.cpp's unicode_cpt_from_utf8 + unicode_cpts_from_utf8: lenient about
// overlong forms and surrogates, one U+FFFD per byte that cannot start a
// sequence. Matching it byte for byte is what makes token ids agree on
// invalid input.
std::vector<uint32_t> decodeLikeLlama(std::string_view s) {
  std::vector<uint32_t> cps;
  cps.reserve(s.size());
  size_t i = 0, n = s.size();
  auto at = [&](size_t k) { return uint8_t(s[k]); };
  while (i < n) {
    uint8_t b = at(i);
    if (b < 0x80) {
      cps.push_back(b);
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if (!(b & 0x40)) {
      len = 0;
    } else if (!(b & 0x20)) {
      if (i + 1 < n && isCont(at(i + 1))) {
        len = 2;
        cp = ((b & 0x1F) << 6) | (at(i + 1) & 0x3F);
      }
    } else if (!(b & 0x10)) {
      if (i + 2 < n && isCont(at(i + 1)) && isCont(at(i + 2))) {
        len = 3;
        cp =
            ((b & 0x0F) << 12) | ((at(i + 1) & 0x3F) << 6) | (at(i + 2) & 0x3F);
      }
    } else if (!(b & 0x08)) {
      if (i + 3 < n && isCont(at(i + 1)) && isCont(at(i + 2)) &&
          isCont(at(i + 3))) {
        len = 4;
        cp = ((b & 0x07) << 18) | ((at(i + 1) & 0x3F) << 12) |
             ((at(i + 2) & 0x3F) << 6) | (at(i + 3) & 0x3F);
        if (cp > 0x10FFFF)
          len = 0; // llama.cpp throws here; Loom replaces the byte
      }
    }
    if (len == 0) {
      cps.push_back(kReplacement);
      ++i;
    } else {
      cps.push_back(cp);
      i += len;
    }
  }
  return cps;
}

uint32_t byteToUnicode(uint8_t b) {
  // GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves,
  // the other 68 bytes to U+0100.. in byte order.
  auto printable = [](unsigned c) {
    return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) ||
           (c >= 0xAE && c <= 0xFF);
  };
  if (printable(b))
    return b;
  uint32_t k = 0;
  for (unsigned c = 0; c < b; ++c)
    if (!printable(c))
      ++k;
  return 0x100 + k;
}

int unicodeToByte(uint32_t cp) {
  static const std::vector<int> inverse = [] {
    std::vector<int> inv(0x200, -1);
    for (unsigned b = 0; b < 256; ++b)
      inv[byteToUnicode(uint8_t(b))] = int(b);
    return inv;
  }();
  return cp < inverse.size() ? inverse[cp] : -1;
}

namespace {
/// Length of the well-formed sequence at s[i..] (Unicode Table 3-7), 0 when
/// the bytes present already make it ill-formed, or -(bytes seen) when it is
/// a valid prefix cut short by the end of `s`.
int wellFormedLength(std::string_view s, size_t i) {
  uint8_t b = uint8_t(s[i]);
  if (b < 0x80)
    return 1;
  int len;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    if (b == 0xE0)
      lo = 0xA0;
    if (b == 0xED)
      hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    if (b == 0xF0)
      lo = 0x90;
    if (b == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k < len; ++k) {
    if (i + k >= s.size())
      return -k;
    uint8_t c = uint8_t(s[i + k]);
    if (c < lo || c > hi)
      return 0;
    lo = 0x80;
    hi = 0xBF;
  }
  return len;
}
} // namespace

bool isValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    int len = wellFormedLength(s, i);
    if (len <= 0)
      return false;
    i += size_t(len);
  }
  return true;
}

// Emits whole characters; an ill-formed sequence becomes one U+FFFD per
// maximal subpart (the W3C/Unicode recommendation), the rest is kept until it
// completes or can no longer complete.
std::string Utf8Stream::push(std::string_view bytes) {
  pending.append(bytes);
  std::string out;
  size_t i = 0;
  while (i < pending.size()) {
    int len = wellFormedLength(pending, i);
    if (len > 0) {
      out.append(pending, i, size_t(len));
      i += size_t(len);
    } else if (len < 0) {
      break; // a valid prefix: wait for more bytes
    } else {
      appendUtf8(out, kReplacement);
      // Skip the maximal subpart: the lead byte and the continuation bytes
      // that were still acceptable after it.
      size_t j = i + 1;
      std::string_view rest(pending);
      uint8_t b = uint8_t(rest[i]);
      if (b >= 0xC2 && b <= 0xF4) {
        while (j < rest.size() && j < i + 4) {
          std::string_view probe = rest.substr(i, j - i + 1);
          if (wellFormedLength(probe, 0) != -int(j - i + 1))
            break;
          ++j;
        }
      }
      i = j;
    }
  }
  pending.erase(0, i);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out = push("");
  if (!pending.empty()) {
    appendUtf8(out, kReplacement);
    pending.clear();
  }
  return out;
}

} // namespace loom::tok
