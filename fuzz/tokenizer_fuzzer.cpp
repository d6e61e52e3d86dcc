//===- tokenizer_fuzzer.cpp - libFuzzer target for the tokenizer loaders --===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The input is either a GGUF file (it starts with "GGUF": Tokenizer::fromGguf)
// or a Hugging Face tokenizer.json, optionally followed by a NUL byte and a
// tokenizer_config.json, and by a second NUL byte and a text to encode
// (Tokenizer::fromHfJson; JSON text never holds a raw NUL). The loaders take
// paths, so the parts are written to a private temporary folder.
//
// A tokenizer that loads is then used as the tools use it: the text (and a
// few fixed ones: special tokens, invalid UTF-8, digits, spaces) is encoded
// with every addSpecial/parseSpecial combination, every id must be inside the
// vocabulary, the ids are decoded and streamed through Utf8Stream, and the
// chat template, when recognised, is applied.
//
//===----------------------------------------------------------------------===//

#include "loom/Tokenizer/Tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unistd.h>

using namespace loom;

namespace {
std::string dir;

bool writeFile(const std::string &path, std::string_view bytes) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

void exercise(const tok::Tokenizer &t, std::string_view text) {
  size_t n = t.vocabSize();
  for (int flags = 0; flags < 4; ++flags) {
    auto ids = t.encode(text, flags & 1, flags & 2);
    if (!ids) {
      if (ids.error().message.empty())
        __builtin_trap(); // A refusal must say why.
      continue;
    }
    tok::Utf8Stream stream;
    std::string streamed;
    for (int32_t id : *ids) {
      if (id < 0 || size_t(id) >= n)
        __builtin_trap(); // Every id is a vocabulary entry.
      streamed += stream.push(t.tokenBytes(id));
      (void)t.isEndOfGeneration(id);
      (void)t.isControl(id);
    }
    streamed += stream.flush();
    (void)t.decode(*ids);
  }
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  char tmpl[] = "/tmp/loom-tokenizer-fuzz-XXXXXX";
  if (!mkdtemp(tmpl))
    std::abort();
  dir = tmpl;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view in(reinterpret_cast<const char *>(data), size);
  std::string json = dir + "/tokenizer.json";
  std::string config = dir + "/tokenizer_config.json";
  std::string gguf = dir + "/model.gguf";
  std::string_view text;
  bool isGguf = in.substr(0, 4) == "GGUF";
  if (isGguf) {
    if (!writeFile(gguf, in))
      std::abort();
  } else {
    size_t a = in.find('\0');
    std::string_view tj = in.substr(0, a);
    std::string_view cfg;
    bool hasCfg = false;
    if (a != std::string_view::npos) {
      std::string_view rest = in.substr(a + 1);
      size_t b = rest.find('\0');
      cfg = rest.substr(0, b);
      hasCfg = !cfg.empty();
      if (b != std::string_view::npos)
        text = rest.substr(b + 1);
    }
    std::remove(config.c_str());
    if (!writeFile(json, tj) || (hasCfg && !writeFile(config, cfg)))
      std::abort();
  }
  auto loaded = isGguf ? tok::Tokenizer::fromGguf(gguf)
                       : tok::Tokenizer::fromHfJson(json);
  if (!loaded) {
    if (loaded.error().message.empty())
      __builtin_trap(); // A refusal must say why.
    return 0;
  }
  const tok::Tokenizer &t = **loaded;
  exercise(t, text);
  static constexpr std::string_view fixed[] = {
      "Hello world! 123 4567 ", "<|im_start|>user\n<s></s>\xE2\x96\x81 a  b",
      "\xFF\xC3(\xE2\x82 \xF0\x9F\x98\x80\xED\xA0\x80", "   \t\n\n  x"};
  for (std::string_view f : fixed)
    exercise(t, f);
  for (int32_t id : {-1, 0, 1, int32_t(t.vocabSize()), t.bos(), t.eos()}) {
    (void)t.tokenText(id);
    (void)t.tokenBytes(id);
  }
  (void)t.findToken(text);
  if (auto fmtKind = tok::detectChatFormat(t.chatTemplate())) {
    std::vector<tok::ChatMessage> msgs = {{"system", "Be brief."},
                                          {"user", std::string(text)},
                                          {"assistant", "ok"},
                                          {"user", "again"}};
    std::string prompt = tok::applyChatTemplate(*fmtKind, msgs, true, t);
    exercise(t, prompt);
  }
  return 0;
}
