//===- TokenizerTest.cpp - GoogleTest units of lib/Tokenizer
//---------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Small GGUF vocabularies are written here byte by byte, so that every rule
// (merges, scores, byte fallback, special tokens, malformed metadata) is
// checked without a model file. The real SmolLM2 vocabulary is checked
// against llama.cpp in test/python/tokenizer; the cases here that need it
// are skipped when the file is not in the model cache.
//
//===----------------------------------------------------------------------===//

#include "loom/Tokenizer/Tokenizer.h"

#include "../Formats/TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

using namespace loom;
using loom::fmt::test::Bytes;
using loom::fmt::test::TempDir;

namespace {

// --- A GGUF metadata writer --------------------------------------------------
enum : uint32_t { U32 = 4, I32 = 5, F32 = 6, Bool = 7, Str = 8, Arr = 9 };

struct Kv {
  std::string key;
  Bytes value; // type tag + payload
};

class GgufBuilder {
public:
  GgufBuilder &str(const std::string &k, const std::string &v) {
    Bytes b;
    b.u32(Str).str(v);
    kvs.push_back({k, b});
    return *this;
  }
  GgufBuilder &u32(const std::string &k, uint32_t v) {
    Bytes b;
    b.u32(U32).u32(v);
    kvs.push_back({k, b});
    return *this;
  }
  GgufBuilder &boolean(const std::string &k, bool v) {
    Bytes b;
    b.u32(Bool).u8(v ? 1 : 0);
    kvs.push_back({k, b});
    return *this;
  }
  GgufBuilder &strings(const std::string &k,
                       const std::vector<std::string> &v) {
    Bytes b;
    b.u32(Arr).u32(Str).u64(v.size());
    for (const auto &s : v)
      b.str(s);
    kvs.push_back({k, b});
    return *this;
  }
  GgufBuilder &ints(const std::string &k, const std::vector<int32_t> &v) {
    Bytes b;
    b.u32(Arr).u32(I32).u64(v.size());
    for (int32_t x : v)
      b.put(x);
    kvs.push_back({k, b});
    return *this;
  }
  GgufBuilder &floats(const std::string &k, const std::vector<float> &v) {
    Bytes b;
    b.u32(Arr).u32(F32).u64(v.size());
    for (float x : v)
      b.put(x);
    kvs.push_back({k, b});
    return *this;
  }
  GgufBuilder &drop(const std::string &k) {
    std::erase_if(kvs, [&](const Kv &kv) { return kv.key == k; });
    return *this;
  }
  std::string write(TempDir &dir, const std::string &name = "t.gguf") const {
    Bytes b;
    b.raw("GGUF").u32(3).u64(0).u64(kvs.size());
    for (const Kv &kv : kvs) {
      b.str(kv.key);
      b.data.insert(b.data.end(), kv.value.data.begin(), kv.value.data.end());
    }
    b.padTo(32);
    return dir.write(name, b.span());
  }

private:
  std::vector<Kv> kvs;
};

std::string gpt2Char(uint8_t b) {
  // GPT-2 bytes_to_unicode, as UTF-8.
  auto printable = [](unsigned c) {
    return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) ||
           (c >= 0xAE && c <= 0xFF);
  };
  uint32_t cp = b;
  if (!printable(b)) {
    cp = 0x100;
    for (unsigned c = 0; c < b; ++c)
      if (!printable(c))
        ++cp;
  }
  std::string s;
  if (cp < 0x80)
    s += char(cp);
  else {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

/// A byte-level BPE vocabulary: 3 control tokens, the 256 byte tokens and a
/// few merges ("Ġ" is the mapped space).
GgufBuilder tinyBpe() {
  std::vector<std::string> toks = {"<|endoftext|>", "<|im_start|>",
                                   "<|im_end|>"};
  std::vector<int32_t> types = {3, 3, 3};
  for (int b = 0; b < 256; ++b) {
    toks.push_back(gpt2Char(uint8_t(b)));
    types.push_back(1);
  }
  std::vector<std::string> merges = {"h e",  "l l", "he ll",  "hell o",  "Ġ w",
                                     "Ġw o", "r l", "Ġwo rl", "Ġworl d", "1 2"};
  for (const std::string &m : merges) {
    std::string t = m;
    t.erase(t.find(' '), 1);
    toks.push_back(t);
    types.push_back(1);
  }
  GgufBuilder g;
  g.str("general.architecture", "llama")
      .str("tokenizer.ggml.model", "gpt2")
      .str("tokenizer.ggml.pre", "smollm")
      .strings("tokenizer.ggml.tokens", toks)
      .ints("tokenizer.ggml.token_type", types)
      .strings("tokenizer.ggml.merges", merges)
      .u32("tokenizer.ggml.bos_token_id", 1)
      .u32("tokenizer.ggml.eos_token_id", 2)
      .boolean("tokenizer.ggml.add_bos_token", false);
  return g;
}

/// A SentencePiece vocabulary: <unk> <s> </s>, 256 byte tokens, pieces with
/// scores.
GgufBuilder tinySpm() {
  std::vector<std::string> toks = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  static const char *hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    toks.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    types.push_back(6);
    scores.push_back(0);
  }
  const std::vector<std::pair<std::string, float>> pieces = {
      {"\xE2\x96\x81", -1},
      {"h", -2},
      {"e", -2},
      {"l", -2},
      {"o", -2},
      {"w", -2},
      {"r", -2},
      {"d", -2},
      {"\xE2\x96\x81h", -3},
      {"ll", -3},
      {"he", -4},
      {"\xE2\x96\x81hell", -5},
      {"\xE2\x96\x81hello", -6},
      {"\xE2\x96\x81w", -7},
      {"or", -8},
      {"\xE2\x96\x81wor", -9},
      {"\xE2\x96\x81world", -10},
      {"\xE2\x96\x81he", -4.5},
      {"\xE2\x96\x81hel", -4.8},
      {"ld", -9.5},
      {"\xE2\x96\x81worl", -9.7}};
  for (const auto &[p, s] : pieces) {
    toks.push_back(p);
    types.push_back(1);
    scores.push_back(s);
  }
  GgufBuilder g;
  g.str("general.architecture", "llama")
      .str("tokenizer.ggml.model", "llama")
      .strings("tokenizer.ggml.tokens", toks)
      .ints("tokenizer.ggml.token_type", types)
      .floats("tokenizer.ggml.scores", scores)
      .u32("tokenizer.ggml.bos_token_id", 1)
      .u32("tokenizer.ggml.eos_token_id", 2)
      .u32("tokenizer.ggml.unknown_token_id", 0);
  return g;
}

std::unique_ptr<tok::Tokenizer> load(const GgufBuilder &g, TempDir &dir) {
  auto t = tok::Tokenizer::fromGguf(g.write(dir));
  EXPECT_TRUE(bool(t)) << (t ? "" : t.error().message);
  return t ? t.take() : nullptr;
}

std::vector<int32_t> enc(const tok::Tokenizer &t, std::string_view s,
                         bool addSpecial = true, bool parseSpecial = true) {
  auto r = t.encode(s, addSpecial, parseSpecial);
  EXPECT_TRUE(bool(r));
  return r ? *r : std::vector<int32_t>{};
}

/// llama.cpp's view of text: every byte that does not start a well-formed
/// (leniently decoded) sequence becomes U+FFFD.
const std::string kFffd = "\xEF\xBF\xBD";

// The strings every round trip is checked on.
const std::vector<std::string> kRoundTrip = {
    "",
    "hello world",
    "  leading and trailing  ",
    "tabs\tand\nnewlines\r\n",
    "digits 1234567890 12",
    "caf\xC3\xA9 na\xC3\xAF"
    "ve",
    "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C",
    "emoji \xF0\x9F\x8D\x95 zwj \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9",
    "it's they'll WE'VE",
    std::string("nul \0 inside", 12),
};

// --- Byte-level BPE
// ------------------------------------------------------------

TEST(TokenizerBpe, MergesByRank) {
  TempDir dir;
  auto t = load(tinyBpe(), dir);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->modelKind(), "gpt2");
  EXPECT_EQ(t->preTokenizer(), "smollm");
  auto ids = enc(*t, "hello world");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(t->tokenText(ids[0]), "hello");
  EXPECT_EQ(t->tokenText(ids[1]), "\xC4\xA0world");
  // smollm splits digits one by one before merging: "12" is never merged.
  ids = enc(*t, "12");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(t->tokenBytes(ids[0]), "1");
}

TEST(TokenizerBpe, RoundTripValidUtf8) {
  TempDir dir;
  auto t = load(tinyBpe(), dir);
  ASSERT_TRUE(t);
  for (const std::string &s : kRoundTrip)
    EXPECT_EQ(t->decode(enc(*t, s)), s) << s;
}

TEST(TokenizerBpe, InvalidBytesBecomeReplacementLikeLlamaCpp) {
  TempDir dir;
  auto t = load(tinyBpe(), dir);
  ASSERT_TRUE(t);
  // llama.cpp decodes the text first and replaces each byte that does not
  // start a sequence by U+FFFD; Loom does the same so that ids agree.
  EXPECT_EQ(t->decode(enc(*t, "a\x80z")), "a" + kFffd + "z");
  EXPECT_EQ(t->decode(enc(*t, "\xE2\x82z")), kFffd + kFffd + "z");
  EXPECT_EQ(t->decode(enc(*t, "\xFF")), kFffd);
  // Streaming the text itself gives the same characters.
  tok::Utf8Stream s;
  EXPECT_EQ(s.push("a\x80z") + s.flush(), "a" + kFffd + "z");
}

TEST(TokenizerBpe, SpecialTokens) {
  TempDir dir;
  auto t = load(tinyBpe(), dir);
  ASSERT_TRUE(t);
  auto ids = enc(*t, "<|im_start|>hello<|im_end|>");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[2], 2);
  EXPECT_EQ(t->decode(ids), "hello"); // control tokens decode to nothing
  EXPECT_EQ(t->tokenBytes(1), "");
  EXPECT_TRUE(t->isControl(1));
  // Without special parsing the markers are plain text.
  ids = enc(*t, "<|im_start|>", true, false);
  EXPECT_GT(ids.size(), 1u);
  EXPECT_EQ(t->decode(ids), "<|im_start|>");
  EXPECT_TRUE(t->isEndOfGeneration(2));  // eos and <|im_end|>
  EXPECT_TRUE(t->isEndOfGeneration(0));  // <|endoftext|>
  EXPECT_FALSE(t->isEndOfGeneration(1)); // <|im_start|>
  EXPECT_EQ(t->bos(), 1);
  EXPECT_EQ(t->eos(), 2);
  EXPECT_FALSE(t->addsBos());
}

TEST(TokenizerBpe, AddBosFromMetadata) {
  TempDir dir;
  auto g = tinyBpe();
  g.drop("tokenizer.ggml.add_bos_token")
      .boolean("tokenizer.ggml.add_bos_token", true);
  auto t = load(g, dir);
  ASSERT_TRUE(t);
  auto ids = enc(*t, "hello");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(enc(*t, "hello", false).size(), 1u);
}

// --- SentencePiece
// ------------------------------------------------------------

TEST(TokenizerSpm, MergesByScoreWithSpacePrefix) {
  TempDir dir;
  auto t = load(tinySpm(), dir);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->modelKind(), "llama");
  auto ids = enc(*t, "hello world");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], 1); // BOS by default for SentencePiece
  EXPECT_EQ(t->tokenText(ids[1]), "\xE2\x96\x81hello");
  EXPECT_EQ(t->tokenText(ids[2]), "\xE2\x96\x81world");
  EXPECT_EQ(t->decode(ids), "hello world");
  EXPECT_EQ(t->decode({ids[1], ids[2]}), "hello world");
}

TEST(TokenizerSpm, ByteFallbackRoundTripsEveryByte) {
  TempDir dir;
  auto t = load(tinySpm(), dir);
  ASSERT_TRUE(t);
  std::vector<std::string> all = kRoundTrip;
  // Invalid bytes become <0xNN> tokens. (Like llama.cpp, a lead byte takes
  // the bytes after it into its symbol whatever they are, so a truncated
  // sequence right before a space would turn that space into the bytes of
  // U+2581; these cases avoid that.)
  all.push_back("bad \x80 continuation");
  all.push_back("end \xFF");
  all.push_back("\xF0\x9F\x98"); // truncated emoji
  for (const std::string &s : all) {
    if (s.empty())
      continue;
    auto ids = enc(*t, s);
    EXPECT_EQ(t->decode(ids), s) << s;
  }
}

// --- Utf8Stream --------------------------------------------------------------

TEST(Utf8Stream, WholeCharactersOnly) {
  tok::Utf8Stream s;
  std::string pizza = "\xF0\x9F\x8D\x95";
  EXPECT_EQ(s.push("a"), "a");
  EXPECT_EQ(s.push(pizza.substr(0, 1)), "");
  EXPECT_EQ(s.push(pizza.substr(1, 2)), "");
  EXPECT_EQ(s.push(pizza.substr(3) + "b"), pizza + "b");
  EXPECT_EQ(s.flush(), "");
}

TEST(Utf8Stream, InvalidSequences) {
  tok::Utf8Stream s;
  // A lone continuation byte can never complete: replaced at once.
  EXPECT_EQ(s.push("x\x80y"), "x" + kFffd + "y");
  // A truncated sequence followed by ASCII: one U+FFFD for the subpart.
  EXPECT_EQ(s.push("\xE2\x82"
                   "z"),
            kFffd + "z");
  // Overlong, surrogate and out-of-range forms.
  EXPECT_EQ(s.push("\xC0\xAF"), kFffd + kFffd);
  EXPECT_EQ(s.push("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  EXPECT_EQ(s.push("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  // An incomplete tail at the end becomes U+FFFD on flush.
  EXPECT_EQ(s.push("\xF0\x9F"), "");
  EXPECT_EQ(s.flush(), kFffd);
  EXPECT_EQ(s.flush(), "");
}

// --- Malformed metadata
// --------------------------------------------------------

void expectError(const GgufBuilder &g, const std::string &needle) {
  TempDir dir;
  auto t = tok::Tokenizer::fromGguf(g.write(dir));
  ASSERT_FALSE(bool(t)) << "expected an error containing '" << needle << "'";
  EXPECT_NE(t.error().message.find(needle), std::string::npos)
      << t.error().message;
}

TEST(TokenizerErrors, MalformedMetadata) {
  expectError(tinyBpe().drop("tokenizer.ggml.model"), "no tokenizer metadata");
  expectError(tinyBpe()
                  .drop("tokenizer.ggml.model")
                  .str("tokenizer.ggml.model", "wordpiece"),
              "'wordpiece' is not supported");
  expectError(tinyBpe().drop("tokenizer.ggml.merges"),
              "'tokenizer.ggml.merges' is missing");
  expectError(tinyBpe().drop("tokenizer.ggml.tokens"),
              "'tokenizer.ggml.tokens' is missing");
  expectError(tinyBpe()
                  .drop("tokenizer.ggml.tokens")
                  .ints("tokenizer.ggml.tokens", {1, 2}),
              "expected an array of strings");
  expectError(tinyBpe()
                  .drop("tokenizer.ggml.bos_token_id")
                  .u32("tokenizer.ggml.bos_token_id", 999999),
              "out of range");
  expectError(tinyBpe()
                  .drop("tokenizer.ggml.token_type")
                  .ints("tokenizer.ggml.token_type", {1, 1}),
              "token_type has 2 entries");
  expectError(
      tinyBpe().drop("tokenizer.ggml.pre").str("tokenizer.ggml.pre", "klingon"),
      "pre-tokenizer 'klingon' is not supported");
  expectError(tinyBpe()
                  .drop("tokenizer.ggml.merges")
                  .strings("tokenizer.ggml.merges", {"ab"}),
              "is not two tokens");
  expectError(tinyBpe()
                  .drop("tokenizer.ggml.add_bos_token")
                  .u32("tokenizer.ggml.add_bos_token", 1),
              "expected a bool");
  expectError(tinyBpe()
                  .drop("tokenizer.ggml.bos_token_id")
                  .drop("tokenizer.ggml.add_bos_token")
                  .boolean("tokenizer.ggml.add_bos_token", true),
              "no tokenizer.ggml.bos_token_id");
  expectError(tinySpm()
                  .drop("tokenizer.ggml.scores")
                  .ints("tokenizer.ggml.scores", {1}),
              "scores has 1 entries");
}

TEST(TokenizerErrors, NotAGgufFile) {
  TempDir dir;
  auto t = tok::Tokenizer::fromGguf(dir.write("x.gguf", "not a gguf"));
  ASSERT_FALSE(bool(t));
  auto u = tok::Tokenizer::fromGguf(dir.path + "/missing.gguf");
  ASSERT_FALSE(bool(u));
}

// Corrupting the metadata anywhere gives a tokenizer or an Error, never a
// crash (the GGUF reader validates the framing; the loader every value).
TEST(TokenizerErrors, CorruptedFilesNeverCrash) {
  TempDir dir;
  std::string path = tinyBpe().write(dir, "base.gguf");
  std::ifstream in(path, std::ios::binary);
  std::string base((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  int loaded = 0;
  for (int iter = 0; iter < 300; ++iter) {
    std::string bad = base;
    for (int k = 0; k < 1 + int(next() % 4); ++k)
      bad[next() % bad.size()] = char(next() >> 24);
    std::string name = "c";
    name += std::to_string(iter);
    name += ".gguf";
    auto t = tok::Tokenizer::fromGguf(dir.write(name, bad));
    if (t) {
      ++loaded; // still usable: encoding must not crash either
      (void)(*t)->encode("hello <|im_end|> world 12 \xF0\x9F", true, true);
    } else {
      EXPECT_FALSE(t.error().message.empty());
    }
  }
  EXPECT_GT(loaded, 0);
}

// Random bytes: no crash; random valid UTF-8: exact round trip.
TEST(TokenizerBpe, RandomInputs) {
  TempDir dir;
  auto bpe = load(tinyBpe(), dir);
  TempDir dir2;
  auto spm = load(tinySpm(), dir2);
  ASSERT_TRUE(bpe && spm);
  uint32_t seed = 7;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  const uint32_t cps[] = {0x20,  0x61,   0x31,    0x0A,   0x09,   0xE9,
                          0x3B1, 0x4E16, 0x1F355, 0x200D, 0x3000, 0x27};
  for (int iter = 0; iter < 300; ++iter) {
    std::string raw;
    for (int k = 0; k < int(next() % 24); ++k)
      raw += char(next() >> 24);
    (void)bpe->encode(raw, true, true);
    (void)spm->encode(raw, true, true);
    std::string valid;
    for (int k = 0; k < int(next() % 24); ++k) {
      uint32_t cp = cps[(next() >> 8) % (sizeof(cps) / sizeof(cps[0]))];
      if (cp < 0x80) {
        valid += char(cp);
      } else if (cp < 0x800) {
        valid += char(0xC0 | (cp >> 6));
        valid += char(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        valid += char(0xE0 | (cp >> 12));
        valid += char(0x80 | ((cp >> 6) & 0x3F));
        valid += char(0x80 | (cp & 0x3F));
      } else {
        valid += char(0xF0 | (cp >> 18));
        valid += char(0x80 | ((cp >> 12) & 0x3F));
        valid += char(0x80 | ((cp >> 6) & 0x3F));
        valid += char(0x80 | (cp & 0x3F));
      }
    }
    EXPECT_EQ(bpe->decode(enc(*bpe, valid)), valid);
    EXPECT_EQ(spm->decode(enc(*spm, valid)), valid);
  }
}

// --- Chat templates
// ------------------------------------------------------------

TEST(Chat, DetectAndRefuse) {
  EXPECT_EQ(*tok::detectChatFormat("x <|im_start|> y"),
            tok::ChatFormat::ChatML);
  EXPECT_EQ(*tok::detectChatFormat("<|start_header_id|>"),
            tok::ChatFormat::Llama3);
  EXPECT_EQ(*tok::detectChatFormat("[INST]"), tok::ChatFormat::Mistral);
  auto bad = tok::detectChatFormat("{{ '<start_of_turn>' + role }}");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.error().message.find("unknown chat template '{{ "
                                     "'<start_of_turn>'"),
            std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(bool(tok::detectChatFormat("")));
}

// Byte-identical to jinja2's rendering of the real templates
// (test/python/tokenizer/make_chat_expected.py).
TEST(Chat, MatchesJinjaRenderings) {
  std::ifstream in(LOOM_TOKENIZER_TEST_DATA "/chat_expected.json");
  ASSERT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  auto data = nlohmann::json::parse(ss.str(), nullptr, false);
  ASSERT_FALSE(data.is_discarded());
  int checked = 0;
  for (const auto &tm : data["templates"]) {
    // A vocabulary whose BOS/EOS have the template's token text.
    auto g = tinyBpe();
    std::string bos = tm["bos"], eos = tm["eos"];
    std::vector<std::string> toks = {bos, eos, "<|im_start|>", "<|im_end|>",
                                     "<|start_header_id|>"};
    std::vector<int32_t> types(toks.size(), 3);
    for (int b = 0; b < 256; ++b) {
      toks.push_back(gpt2Char(uint8_t(b)));
      types.push_back(1);
    }
    g.drop("tokenizer.ggml.tokens").strings("tokenizer.ggml.tokens", toks);
    g.drop("tokenizer.ggml.token_type")
        .ints("tokenizer.ggml.token_type", types);
    g.drop("tokenizer.ggml.merges").strings("tokenizer.ggml.merges", {});
    g.drop("tokenizer.ggml.bos_token_id").u32("tokenizer.ggml.bos_token_id", 0);
    g.drop("tokenizer.ggml.eos_token_id").u32("tokenizer.ggml.eos_token_id", 1);
    g.str("tokenizer.chat_template", tm["template"]);
    TempDir dir;
    auto t = load(g, dir);
    ASSERT_TRUE(t);
    auto f = tok::detectChatFormat(t->chatTemplate());
    ASSERT_TRUE(bool(f)) << f.error().message;
    EXPECT_EQ(tok::chatFormatName(*f), tm["format"].get<std::string>());
    for (const auto &c : tm["cases"]) {
      std::vector<tok::ChatMessage> msgs;
      for (const auto &m : c["messages"])
        msgs.push_back({m["role"], m["content"]});
      EXPECT_EQ(
          tok::applyChatTemplate(*f, msgs, c["add_generation_prompt"], *t),
          c["expected"].get<std::string>())
          << tm["name"];
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

// --- The real SmolLM2 vocabulary (when cached) -------------------------------

std::string smollm2Path() {
  if (const char *p = std::getenv("LOOM_SMOLLM2_GGUF"))
    return p;
  const char *home = std::getenv("HOME");
  std::string cache =
      std::getenv("LOOM_MODEL_CACHE")
          ? std::getenv("LOOM_MODEL_CACHE")
          : std::string(home ? home : "/root") + "/.cache/loom/models";
  return cache + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

TEST(TokenizerSmolLM2, RealVocabulary) {
  std::string path = smollm2Path();
  if (!std::ifstream(path).good())
    GTEST_SKIP() << path << " not cached (test/python/formats/fetch_models.py)";
  auto t = tok::Tokenizer::fromGguf(path);
  ASSERT_TRUE(bool(t)) << t.error().message;
  const tok::Tokenizer &k = **t;
  EXPECT_EQ(k.vocabSize(), 49152u);
  EXPECT_EQ(enc(k, "Hello world"), (std::vector<int32_t>{19556, 905}));
  for (const std::string &s : kRoundTrip)
    EXPECT_EQ(k.decode(enc(k, s)), s) << s;
  EXPECT_TRUE(k.isEndOfGeneration(2));
  auto f = tok::detectChatFormat(k.chatTemplate());
  ASSERT_TRUE(bool(f));
  EXPECT_EQ(*f, tok::ChatFormat::ChatML);
}

} // namespace
