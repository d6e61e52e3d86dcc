//===- TokenizerImpl.h - Internals shared by the tokenizer files -*- C++
//-*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The vocabulary and the encoding rules of one tokenizer, filled by a loader
// (GgufLoader.cpp, HfLoader.cpp) and used by Tokenizer.cpp. The algorithms
// follow llama.cpp's llama-vocab.cpp so that token ids agree with it (the
// outside reference; docs/TOKENIZER.md); the Unicode classes come from PCRE2.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_TOKENIZER_TOKENIZERIMPL_H
#define LOOM_LIB_TOKENIZER_TOKENIZERIMPL_H

#include "loom/Tokenizer/Tokenizer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace loom::tok {

/// Token attributes (llama.cpp's llama_token_attr, as a bit set).
enum TokenAttr : uint8_t {
  AttrNormal = 1,
  AttrUnknown = 2,
  AttrControl = 4,
  AttrUserDefined = 8,
  AttrUnused = 16,
  AttrByte = 32,
};

/// One compiled pre-tokenizer regex (PCRE2, UTF + UCP). Splitting keeps the
/// text between matches as pieces too, like llama.cpp and HF's "Isolated"
/// Split behaviour.
class SplitRegex {
public:
  static fmt::Result<std::shared_ptr<SplitRegex>>
  compile(const std::string &pattern, const std::string &where);
  ~SplitRegex();
  /// Appends the pieces of `text` (valid UTF-8) to `out`, in order; their
  /// concatenation is `text`.
  void split(std::string_view text, std::vector<std::string_view> &out) const;

private:
  SplitRegex() = default;
  void *code = nullptr; // pcre2_code_8
};

/// The pre-tokenizer regexes llama.cpp uses for a tokenizer.ggml.pre name;
/// an empty vector and an Error for names Loom does not know.
fmt::Result<std::vector<std::string>>
preTokenizerPatterns(std::string_view pre);

/// How a piece of text becomes symbols before merging.
enum class ModelKind {
  ByteLevelBpe, ///< GPT-2 byte-to-unicode mapping, merges by rank (gpt2)
  Spm,          ///< SentencePiece BPE by token score, <0xNN> byte fallback
  CharBpe,      ///< BPE by merge rank on characters, <0xNN> byte fallback
                ///< (HF tokenizer.json of Llama 2 / Mistral)
};

struct Tokenizer::Impl {
  ModelKind kind = ModelKind::ByteLevelBpe;
  std::string modelName; // "gpt2" / "llama" (GGUF) or "hf-bpe"
  std::string preName;
  std::string source; // the file, for messages

  std::vector<std::string> text; // vocabulary entries as stored
  std::vector<float> score;
  std::vector<uint8_t> attr;
  std::unordered_map<std::string, int32_t> toId;
  /// BPE merges: key = mergeKey(left, right), value = rank.
  std::unordered_map<std::string, int32_t> mergeRank;
  std::vector<std::shared_ptr<SplitRegex>> preRegexes;
  /// The decoded bytes of every token (the cache llama.cpp keeps).
  std::vector<std::string> bytes;
  /// Special tokens searched in the text, longest first.
  std::vector<int32_t> specialOrder;

  bool ignoreMerges = false; // llama3: a whole word in the vocab is a token
  bool addBos = false, addEos = false;
  bool addSpacePrefix = false;    // SPM: " " before the first text fragment
  bool escapeSpaces = false;      // SPM / CharBpe: " " -> U+2581
  bool prefixAtStartOnly = false; // CharBpe, HF Metaspace prepend_scheme first
  bool cleanSpaces = false;       // llama.cpp's detokenize clean-up (gpt2 pre)
  int32_t bosId = -1, eosId = -1, eotId = -1, eomId = -1, unkId = -1;
  std::unordered_set<int32_t> eog;
  std::string chatTemplate;

  static std::string mergeKey(std::string_view l, std::string_view r);
  int32_t find(std::string_view s) const;
  /// Fills bytes, specialOrder and eog after the vocabulary is loaded.
  fmt::Status finish();

  void encodeFragment(std::string_view textBytes, bool atStart,
                      std::vector<int32_t> &out) const;
  void bpeWord(std::string_view word, std::vector<int32_t> &out) const;
  void spmText(std::string_view text, std::vector<int32_t> &out) const;
  int32_t byteToken(uint8_t b) const;
};

// --- UTF-8 helpers (Unicode.cpp) ---------------------------------------------
/// Decodes UTF-8 the way llama.cpp does (unicode_cpts_from_utf8): every byte
/// that does not start a well-formed sequence becomes U+FFFD; overlong forms
/// and surrogates are decoded as llama.cpp decodes them. Code points above
/// U+10FFFF become one U+FFFD per byte (llama.cpp throws there).
std::vector<uint32_t> decodeLikeLlama(std::string_view s);
void appendUtf8(std::string &out, uint32_t cp);
/// Byte length of the UTF-8 sequence led by `b` (1 for continuation bytes),
/// as llama.cpp's unicode_len_utf8.
size_t utf8LeadLength(uint8_t b);
/// GPT-2's bytes_to_unicode: the printable code point of byte b.
uint32_t byteToUnicode(uint8_t b);
/// The inverse, or -1 for a code point that is no byte's image.
int unicodeToByte(uint32_t cp);
/// Strict UTF-8 validity (no overlong forms, surrogates or > U+10FFFF).
bool isValidUtf8(std::string_view s);

} // namespace loom::tok

#endif // LOOM_LIB_TOKENIZER_TOKENIZERIMPL_H
