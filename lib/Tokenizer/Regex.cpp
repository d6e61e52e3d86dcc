//===- Regex.cpp - Pre-tokenizer regexes through PCRE2 --------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The pre-tokenizers of byte-level BPE models are regexes over Unicode
// classes (\p{L}, \p{N}, \s). PCRE2 (Debian libpcre2-dev) evaluates them in
// UTF + UCP mode. \s is spelled out as the Unicode White_Space property, the
// set llama.cpp and the HF tokenizers use (PCRE2 10.42's \s also matches
// U+180E, which Unicode no longer counts as white space).
//
//===----------------------------------------------------------------------===//

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "TokenizerImpl.h"

namespace loom::tok {

namespace {
// Unicode White_Space, as a class body.
constexpr std::string_view kWs =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
    "\\x{202F}\\x{205F}\\x{3000}";

/// Rewrites \s and \S (inside and outside classes) to the explicit set.
std::string expandWhitespace(const std::string &p) {
  std::string out;
  bool inClass = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      if (n == 's') {
        if (inClass)
          out += kWs;
        else
          (out += '[') += kWs, out += ']';
        ++i;
        continue;
      }
      if (n == 'S' && !inClass) {
        (out += "[^") += kWs, out += ']';
        ++i;
        continue;
      }
      out += c;
      out += n;
      ++i;
      continue;
    }
    if (c == '[' && !inClass)
      inClass = true;
    else if (c == ']' && inClass)
      inClass = false;
    out += c;
  }
  return out;
}

// The patterns of llama.cpp's llm_tokenizer_bpe, in their ASCII-case form
// ('[sS] for (?i:'s)).
constexpr const char *kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)";
constexpr const char *kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|"
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|"
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
} // namespace

fmt::Result<std::vector<std::string>>
preTokenizerPatterns(std::string_view pre) {
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (auto n : names)
      if (pre == n)
        return true;
    return false;
  };
  if (is({"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone",
          "minerva-7b"}))
    return std::vector<std::string>{"\\p{N}", kGpt2};
  if (is({"gpt-2", "gpt2", "phi-2", "jina-es", "jina-de", "mpt", "olmo", "jais",
          "exaone4"}))
    return std::vector<std::string>{kGpt2};
  if (is({"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "dbrx",
          "smaug-bpe"}))
    return std::vector<std::string>{kLlama3};
  if (is({"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"}))
    return std::vector<std::string>{kQwen2};
  if (is({"default", ""}))
    return std::vector<std::string>{"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2,
                                    "\\p{N}+", "[0-9][0-9][0-9]"};
  return fmt::makeError(
      "pre-tokenizer '", pre,
      "' is not supported (known: smollm, gpt2, llama-bpe/llama3, qwen2, "
      "default and their aliases; docs/TOKENIZER.md)");
}

fmt::Result<std::shared_ptr<SplitRegex>>
SplitRegex::compile(const std::string &pattern, const std::string &where) {
  std::string expanded = expandWhitespace(pattern);
  int err = 0;
  PCRE2_SIZE errOff = 0;
  pcre2_code *code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
      PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &errOff, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return fmt::makeError(
        where, ": pre-tokenizer regex '", pattern,
        "' does not compile (PCRE2: ", reinterpret_cast<const char *>(msg),
        " at offset ", uint64_t(errOff), ")");
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); // best effort
  std::shared_ptr<SplitRegex> re(new SplitRegex());
  re->code = code;
  return re;
}

SplitRegex::~SplitRegex() {
  if (code)
    pcre2_code_free(static_cast<pcre2_code *>(code));
}

void SplitRegex::split(std::string_view text,
                       std::vector<std::string_view> &out) const {
  auto *re = static_cast<pcre2_code *>(code);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, nullptr);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, gapStart = 0;
  while (pos < text.size()) {
    int rc = pcre2_match(re, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md,
                         nullptr);
    if (rc < 0)
      break; // no further match (or a matcher limit): the rest is one gap
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    if (e == s) {
      // Empty match: step over one character and search again.
      pos = s + 1;
      while (pos < text.size() && (uint8_t(text[pos]) & 0xC0) == 0x80)
        ++pos;
      continue;
    }
    if (s > gapStart)
      out.push_back(text.substr(gapStart, s - gapStart));
    out.push_back(text.substr(s, e - s));
    gapStart = pos = e;
  }
  if (gapStart < text.size())
    out.push_back(text.substr(gapStart));
  pcre2_match_data_free(md);
}

} // namespace loom::tok
