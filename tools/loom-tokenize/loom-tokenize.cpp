//===- loom-tokenize.cpp - Tokenize or detokenize with a model's tokenizer ===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
//   loom-tokenize MODEL [--ids] [--chat] [--system S] [--no-special]
//                       [--no-parse-special] [--hex] TEXT
//   loom-tokenize MODEL --decode 1,2,3
//   loom-tokenize MODEL --info
//   loom-tokenize MODEL --batch   (lines on stdin, for tests; see below)
//
// MODEL is a .gguf file, a tokenizer.json or a folder holding one. By
// default every token is printed as "id<TAB>bytes" (bytes C-escaped); --ids
// prints the ids alone, one per line. --hex takes TEXT as hex bytes (for
// invalid UTF-8). --chat wraps TEXT as a user message in the model's chat
// template. --decode writes the decoded bytes to stdout unchanged.
//
// --batch reads one request per line from stdin and answers one line each:
//   "e<flags> HEX"  encode the bytes HEX; flags: s = add BOS/EOS as the model
//                   says, p = parse special tokens; answer: ids, comma
//                   separated (empty line for none)
//   "d ID,ID,..."   decode; answer: the bytes in hex
// An error answers "error: <message>" and the batch goes on.
//
//===----------------------------------------------------------------------===//

#include "loom/Tokenizer/Tokenizer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace loom;

namespace {
int fail(const std::string &msg) {
  std::fprintf(stderr, "loom-tokenize: %s\n", msg.c_str());
  return 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: loom-tokenize MODEL [--ids] [--chat] [--system S] "
               "[--no-special] [--no-parse-special] [--hex] TEXT\n"
               "       loom-tokenize MODEL --decode ID,ID,...\n"
               "       loom-tokenize MODEL --info\n"
               "       loom-tokenize MODEL --batch < requests\n"
               "MODEL: a .gguf file, a tokenizer.json or a folder with one\n");
  return 2;
}

bool isDir(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string escaped(const std::string &b) {
  std::string out;
  for (unsigned char c : b) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else
      out += char(c);
  }
  return out;
}

bool parseHex(const std::string &h, std::string &out) {
  if (h.size() % 2)
    return false;
  for (size_t i = 0; i < h.size(); i += 2) {
    char *end = nullptr;
    std::string byte = h.substr(i, 2);
    long v = std::strtol(byte.c_str(), &end, 16);
    if (*end != 0)
      return false;
    out += char(v);
  }
  return true;
}
} // namespace

std::string toHex(const std::string &b) {
  static const char *digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

/// Parses "1,2,3" into ids of `t`; an Error names the bad item.
fmt::Result<std::vector<int32_t>> parseIds(const std::string &list,
                                           const tok::Tokenizer &t) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    std::string item = list.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char *end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != 0)
      return fmt::makeError("'", item, "' is not a token id");
    if (v < 0 || size_t(v) >= t.vocabSize())
      return fmt::makeError("token id ", item, " is out of range (the ",
                            "vocabulary has ", uint64_t(t.vocabSize()),
                            " tokens)");
    ids.push_back(int32_t(v));
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return ids;
}

int runBatch(const tok::Tokenizer &t) {
  char *line = nullptr;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    std::string req(line, size_t(n));
    while (!req.empty() && (req.back() == '\n' || req.back() == '\r'))
      req.pop_back();
    size_t sp = req.find(' ');
    std::string op = req.substr(0, sp);
    std::string arg = sp == std::string::npos ? "" : req.substr(sp + 1);
    if (!op.empty() && op[0] == 'e') {
      std::string bytes;
      if (!parseHex(arg, bytes)) {
        std::printf("error: '%s' is not hex\n", arg.c_str());
        continue;
      }
      bool s = op.find('s') != std::string::npos;
      bool p = op.find('p') != std::string::npos;
      auto ids = t.encode(bytes, s, p);
      if (!ids) {
        std::printf("error: %s\n", ids.error().message.c_str());
        continue;
      }
      std::string out;
      for (size_t i = 0; i < ids->size(); ++i)
        out += (i ? "," : "") + std::to_string((*ids)[i]);
      std::printf("%s\n", out.c_str());
    } else if (op == "d") {
      auto ids = parseIds(arg, t);
      if (!ids) {
        std::printf("error: %s\n", ids.error().message.c_str());
        continue;
      }
      std::printf("%s\n", toHex(t.decode(*ids)).c_str());
    } else {
      std::printf("error: unknown request '%s'\n", op.c_str());
    }
    std::fflush(stdout);
  }
  std::free(line);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3)
    return usage();
  std::string model = argv[1];
  bool idsOnly = false, chat = false, addSpecial = true, parseSpecial = true,
       hex = false, info = false;
  std::string decodeList, system, text;
  bool haveText = false, haveDecode = false, batch = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ids")
      idsOnly = true;
    else if (a == "--chat")
      chat = true;
    else if (a == "--no-special")
      addSpecial = false;
    else if (a == "--no-parse-special")
      parseSpecial = false;
    else if (a == "--hex")
      hex = true;
    else if (a == "--info")
      info = true;
    else if (a == "--batch")
      batch = true;
    else if (a == "--system" && i + 1 < argc)
      system = argv[++i];
    else if (a == "--decode" && i + 1 < argc) {
      decodeList = argv[++i];
      haveDecode = true;
    } else if (a == "--") {
      if (i + 1 < argc) {
        text = argv[++i];
        haveText = true;
      }
    } else if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      return fail("unknown option '" + a + "'");
    } else if (!haveText) {
      text = a;
      haveText = true;
    } else {
      return fail("more than one TEXT argument ('" + a + "'); quote the text");
    }
  }

  fmt::Result<std::unique_ptr<tok::Tokenizer>> loaded =
      fmt::makeError("unreachable");
  if (endsWith(model, ".gguf"))
    loaded = tok::Tokenizer::fromGguf(model);
  else if (isDir(model))
    loaded = tok::Tokenizer::fromHfJson(model + "/tokenizer.json");
  else if (endsWith(model, ".json"))
    loaded = tok::Tokenizer::fromHfJson(model);
  else
    return fail(model + ": not a .gguf, a tokenizer.json or a folder with "
                        "one");
  if (!loaded)
    return fail(loaded.error().message);
  const tok::Tokenizer &t = **loaded;

  if (info) {
    std::printf("model: %s\npre: %s\nvocab: %zu\nbos: %d\neos: %d\n"
                "add_bos: %d\nadd_eos: %d\n",
                t.modelKind().c_str(), t.preTokenizer().c_str(), t.vocabSize(),
                t.bos(), t.eos(), int(t.addsBos()), int(t.addsEos()));
    auto f = tok::detectChatFormat(t.chatTemplate());
    std::printf("chat: %s\n", f ? std::string(tok::chatFormatName(*f)).c_str()
                                : f.error().message.c_str());
    return 0;
  }

  if (batch)
    return runBatch(t);

  if (haveDecode) {
    auto ids = parseIds(decodeList, t);
    if (!ids)
      return fail("--decode: " + ids.error().message);
    std::string out = t.decode(*ids);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }

  if (!haveText)
    return usage();
  if (hex) {
    std::string bytes;
    if (!parseHex(text, bytes))
      return fail("--hex: '" + text + "' is not an even number of hex digits");
    text = bytes;
  }
  if (chat) {
    auto f = tok::detectChatFormat(t.chatTemplate());
    if (!f)
      return fail(model + ": " + f.error().message);
    std::vector<tok::ChatMessage> msgs;
    if (!system.empty())
      msgs.push_back({"system", system});
    msgs.push_back({"user", text});
    text = tok::applyChatTemplate(*f, msgs, /*addGenerationPrompt=*/true, t);
    parseSpecial = true;
  }
  auto ids = t.encode(text, addSpecial, parseSpecial);
  if (!ids)
    return fail(ids.error().message);
  for (int32_t id : *ids) {
    if (idsOnly)
      std::printf("%d\n", id);
    else
      std::printf("%d\t%s\n", id, escaped(t.tokenBytes(id)).c_str());
  }
  return 0;
}
