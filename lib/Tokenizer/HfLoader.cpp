//===- HfLoader.cpp - Hugging Face tokenizer.json -------------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Reads the BPE tokenizers of the families Loom generates with:
//  - byte-level BPE (GPT-2, SmolLM2, Qwen2, Llama 3): pre_tokenizer
//    ByteLevel, or a Sequence of Digits / Split(Regex, Isolated) and
//    ByteLevel(use_regex=false); the Split regexes run through PCRE2;
//  - SentencePiece-style BPE (Llama 2, Mistral): normalizer
//    Sequence[Prepend("▁"), Replace(" ", "▁")] or pre_tokenizer Metaspace
//    (split=false), merges on characters with <0xNN> byte fallback.
// added_tokens become special (control) or user-defined tokens.
// tokenizer_config.json beside the file gives bos/eos, add_bos_token,
// add_eos_token and chat_template. Anything else (WordPiece, Unigram,
// normalizers other than NFC, ...) is refused by name. NFC is accepted and
// not applied, as llama.cpp does for the same models (docs/TOKENIZER.md).
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace loom::tok {

namespace {
using json = nlohmann::json;

/// Ids below the highest that no entry names (filled as [EMPTY_<id>]).
constexpr size_t kMaxUnusedIds = 65536;

fmt::Result<json> readJson(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fmt::makeError(path, ": cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return fmt::makeError(path, ": not valid JSON");
  return j;
}

std::string str(const json &j, const char *key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>()
                                          : std::string();
}

/// A token given as "text" or {"content": "text", ...}.
std::string tokenString(const json &j) {
  if (j.is_string())
    return j.get<std::string>();
  if (j.is_object())
    return str(j, "content");
  return {};
}

struct HfLoader {
  std::string path;
  Tokenizer::Impl &m;
  std::vector<std::string> patterns;
  bool byteLevel = false;
  bool spmStyle = false;

  /// The first flag that was present but not true/false (flag()).
  std::string badFlag;

  fmt::Error err(const std::string &what) {
    return fmt::makeError(path, ": ", what);
  }

  /// o[key] as a boolean, `dflt` when o is not an object or has no such key
  /// (or null). Any other value is remembered in badFlag and refused by
  /// fromHfJson: json's value() would throw, and this library is built
  /// without exceptions (abort).
  bool flag(const json &o, const char *key, bool dflt) {
    if (!o.is_object())
      return dflt;
    auto it = o.find(key);
    if (it == o.end() || it->is_null())
      return dflt;
    if (!it->is_boolean()) {
      if (badFlag.empty())
        badFlag = key;
      return dflt;
    }
    return it->get<bool>();
  }

  fmt::Status normalizer(const json &n) {
    if (n.is_null())
      return fmt::success();
    std::string type = str(n, "type");
    if (type == "NFC")
      return fmt::success();
    if (type == "Sequence") {
      auto it = n.find("normalizers");
      if (it == n.end() || !it->is_array())
        return err("normalizer Sequence without a 'normalizers' list");
      for (const json &x : *it)
        LOOM_FMT_CHECK(normalizer(x));
      return fmt::success();
    }
    if (type == "Prepend" && str(n, "prepend") == "\xE2\x96\x81") {
      spmStyle = true;
      m.addSpacePrefix = true;
      return fmt::success();
    }
    if (type == "Replace") {
      const json &pat = n.contains("pattern") ? n["pattern"] : json();
      if (pat.is_object() && str(pat, "String") == " " &&
          str(n, "content") == "\xE2\x96\x81") {
        spmStyle = true;
        m.escapeSpaces = true;
        return fmt::success();
      }
    }
    return err("normalizer '" + (type.empty() ? n.dump() : type) +
               "' is not supported (Loom reads none, NFC, and the "
               "SentencePiece Prepend/Replace of U+2581)");
  }

  fmt::Status preTokenizer(const json &p) {
    if (p.is_null())
      return fmt::success();
    std::string type = str(p, "type");
    if (type == "Sequence") {
      auto it = p.find("pretokenizers");
      if (it == p.end() || !it->is_array())
        return err("pre_tokenizer Sequence without a 'pretokenizers' list");
      for (const json &x : *it)
        LOOM_FMT_CHECK(preTokenizer(x));
      return fmt::success();
    }
    if (type == "ByteLevel") {
      byteLevel = true;
      if (flag(p, "add_prefix_space", false))
        return err("pre_tokenizer ByteLevel with add_prefix_space=true is not "
                   "supported");
      if (flag(p, "use_regex", true))
        patterns.push_back(*preTokenizerPatterns("gpt2")->begin());
      return fmt::success();
    }
    if (type == "Digits") {
      patterns.push_back(flag(p, "individual_digits", false) ? "\\p{N}"
                                                             : "\\p{N}+");
      return fmt::success();
    }
    if (type == "Split") {
      const json &pat = p.contains("pattern") ? p["pattern"] : json();
      std::string re = pat.is_object() ? str(pat, "Regex") : std::string();
      if (re.empty() && pat.is_object() && pat.contains("String"))
        return err("pre_tokenizer Split on a plain string is not supported");
      if (re.empty())
        return err("pre_tokenizer Split without a Regex pattern");
      if (str(p, "behavior") != "Isolated" || flag(p, "invert", false))
        return err("pre_tokenizer Split behavior '" + str(p, "behavior") +
                   "' is not supported (only Isolated, invert=false)");
      patterns.push_back(re);
      return fmt::success();
    }
    if (type == "Metaspace") {
      if (str(p, "replacement") != "\xE2\x96\x81")
        return err("pre_tokenizer Metaspace with a replacement other than "
                   "U+2581 is not supported");
      if (flag(p, "split", false))
        return err("pre_tokenizer Metaspace with split=true is not supported");
      spmStyle = true;
      m.escapeSpaces = true;
      std::string scheme = str(p, "prepend_scheme");
      if (scheme.empty())
        scheme = flag(p, "add_prefix_space", true) ? "always" : "never";
      m.addSpacePrefix = scheme != "never";
      m.prefixAtStartOnly = scheme == "first";
      return fmt::success();
    }
    return err("pre_tokenizer '" + (type.empty() ? p.dump() : type) +
               "' is not supported (Loom reads ByteLevel, Digits, Split "
               "(Regex, Isolated), Metaspace and Sequences of them)");
  }
};
} // namespace

fmt::Result<std::unique_ptr<Tokenizer>>
Tokenizer::fromHfJson(const std::string &path) {
  LOOM_FMT_ASSIGN(j, readJson(path));
  auto m = std::make_unique<Impl>();
  m->source = path;
  m->modelName = "hf-bpe";
  HfLoader L{path, *m, {}, false, false};
  if (!j.is_object())
    return L.err("not a tokenizer.json (the top level is not an object)");

  const json &model = j.contains("model") ? j["model"] : json();
  if (!model.is_object())
    return L.err("no 'model' object");
  std::string type = str(model, "type");
  if (type.empty() && model.contains("merges"))
    type = "BPE";
  if (type != "BPE")
    return L.err("model type '" + type +
                 "' is not supported (Loom reads BPE tokenizers)");
  for (const char *k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!str(model, k).empty())
      return L.err(std::string("BPE ") + k + " is not supported");
  if (model.contains("dropout") && !model["dropout"].is_null())
    return L.err("BPE dropout is not supported");

  LOOM_FMT_CHECK(
      L.normalizer(j.contains("normalizer") ? j["normalizer"] : json()));
  LOOM_FMT_CHECK(L.preTokenizer(j.contains("pre_tokenizer") ? j["pre_tokenizer"]
                                                            : json()));
  if (L.byteLevel && L.spmStyle)
    return L.err("both ByteLevel and SentencePiece-style (U+2581) settings; "
                 "not a tokenizer Loom knows");
  if (!L.byteLevel && !L.spmStyle)
    return L.err("neither a ByteLevel nor a SentencePiece-style (U+2581) "
                 "pre-tokenizer; not a tokenizer Loom knows");
  m->kind = L.byteLevel ? ModelKind::ByteLevelBpe : ModelKind::CharBpe;
  m->preName = L.byteLevel ? "hf-bytelevel" : "hf-metaspace";
  m->ignoreMerges = L.flag(model, "ignore_merges", false);

  // Vocabulary: model.vocab plus added_tokens (which may extend it).
  const json &vocab = model.contains("vocab") ? model["vocab"] : json();
  if (!vocab.is_object())
    return L.err("model.vocab is not an object of token -> id");
  size_t n = 0;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() >= (int64_t(1) << 24))
      return L.err("model.vocab entry '" + it.key() +
                   "' has no valid id (an integer in [0, 2^24))");
    n = std::max(n, size_t(it.value().get<int64_t>()) + 1);
  }
  const json &added = j.contains("added_tokens") ? j["added_tokens"] : json();
  if (!added.is_null() && !added.is_array())
    return L.err("added_tokens is not a list");
  if (added.is_array())
    for (const json &a : added) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
          a["id"].get<int64_t>() < 0 ||
          a["id"].get<int64_t>() >= (int64_t(1) << 24) ||
          !a.contains("content") || !a["content"].is_string())
        return L.err("an added_tokens entry lacks an integer id or a content "
                     "string");
      n = std::max(n, size_t(a["id"].get<int64_t>()) + 1);
    }
  if (n == 0)
    return L.err("the vocabulary is empty");
  // Ids are dense in real files; a few unused ones are named [EMPTY_<id>].
  // A lone huge id must not make a tiny file allocate 2^24 entries.
  size_t entries = vocab.size() + (added.is_array() ? added.size() : 0);
  if (n - std::min(n, entries) > kMaxUnusedIds)
    return L.err("the highest token id is " + std::to_string(n - 1) +
                 " but there are only " + std::to_string(entries) +
                 " model.vocab and added_tokens entries (at most " +
                 std::to_string(kMaxUnusedIds) +
                 " ids may be unused); renumber the vocabulary densely");
  m->text.assign(n, std::string());
  m->attr.assign(n, 0);
  m->score.assign(n, 0.0f);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    size_t id = size_t(it.value().get<int64_t>());
    m->text[id] = it.key();
    m->attr[id] = AttrNormal;
  }
  if (added.is_array())
    for (const json &a : added) {
      size_t id = size_t(a["id"].get<int64_t>());
      m->text[id] = a["content"].get<std::string>();
      m->attr[id] = L.flag(a, "special", false) ? AttrControl : AttrUserDefined;
    }
  for (size_t i = 0; i < n; ++i) {
    if (m->text[i].empty()) {
      m->text[i] = "[EMPTY_" + std::to_string(i) + "]";
      m->attr[i] = AttrUnused;
    }
    // SentencePiece-style byte tokens.
    const std::string &t = m->text[i];
    if (!L.byteLevel && (m->attr[i] & AttrNormal) && t.size() == 6 &&
        t.compare(0, 3, "<0x") == 0 && t[5] == '>')
      m->attr[i] = AttrByte;
    m->toId[t] = int32_t(i);
  }
  std::string unk = model.contains("unk_token")
                        ? tokenString(model["unk_token"])
                        : std::string();
  if (!unk.empty()) {
    if (int32_t id = m->find(unk); id >= 0) {
      m->unkId = id;
      m->attr[size_t(id)] = AttrUnknown;
    }
  }

  // Merges: "a b" strings (older files) or ["a", "b"] pairs (newer).
  const json &merges = model.contains("merges") ? model["merges"] : json();
  if (!merges.is_array())
    return L.err("model.merges is missing or not a list");
  int32_t rank = 0;
  for (const json &mg : merges) {
    std::string a, b;
    if (mg.is_string()) {
      std::string s = mg.get<std::string>();
      size_t sp = s.size() > 1 ? s.find(' ', 1) : std::string::npos;
      if (sp == std::string::npos)
        return L.err("merge " + std::to_string(rank) + " '" + s +
                     "' is not two tokens separated by a space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (mg.is_array() && mg.size() == 2 && mg[0].is_string() &&
               mg[1].is_string()) {
      a = mg[0].get<std::string>();
      b = mg[1].get<std::string>();
    } else {
      return L.err("merge " + std::to_string(rank) +
                   " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    m->mergeRank.emplace(Impl::mergeKey(a, b), rank++);
  }

  for (const std::string &p : L.patterns) {
    LOOM_FMT_ASSIGN(re, SplitRegex::compile(p, path));
    m->preRegexes.push_back(std::move(re));
  }

  // BOS/EOS from the post-processor's template ...
  std::string bos, eos;
  const json &post =
      j.contains("post_processor") ? j["post_processor"] : json();
  if (post.is_object() && str(post, "type") == "TemplateProcessing" &&
      post.contains("single") && post["single"].is_array() &&
      !post["single"].empty()) {
    const json &single = post["single"];
    auto special = [&](const json &item) -> std::string {
      if (item.is_object() && item.contains("SpecialToken"))
        return str(item["SpecialToken"], "id");
      return {};
    };
    bos = special(single.front());
    eos = single.size() > 1 ? special(single.back()) : std::string();
    m->addBos = !bos.empty();
    m->addEos = !eos.empty();
  }
  // ... and tokenizer_config.json beside the file, which wins.
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos
                                       ? 0
                                       : path.find_last_of('/') + 1);
  std::string cfgPath = dir + "tokenizer_config.json";
  if (std::ifstream(cfgPath).good()) {
    LOOM_FMT_ASSIGN(cfg, readJson(cfgPath));
    if (!cfg.is_object())
      return fmt::makeError(cfgPath, ": the top level is not an object");
    if (cfg.contains("bos_token") && !tokenString(cfg["bos_token"]).empty())
      bos = tokenString(cfg["bos_token"]);
    if (cfg.contains("eos_token") && !tokenString(cfg["eos_token"]).empty())
      eos = tokenString(cfg["eos_token"]);
    if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean())
      m->addBos = cfg["add_bos_token"].get<bool>();
    if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean())
      m->addEos = cfg["add_eos_token"].get<bool>();
    if (cfg.contains("chat_template")) {
      const json &ct = cfg["chat_template"];
      if (ct.is_string())
        m->chatTemplate = ct.get<std::string>();
      else if (ct.is_array())
        for (const json &e : ct)
          if (e.is_object() && str(e, "name") == "default")
            m->chatTemplate = str(e, "template");
    }
  }
  if (!bos.empty()) {
    m->bosId = m->find(bos);
    if (m->bosId < 0)
      return L.err("bos token '" + bos + "' is not in the vocabulary");
  }
  if (!eos.empty()) {
    m->eosId = m->find(eos);
    if (m->eosId < 0)
      return L.err("eos token '" + eos + "' is not in the vocabulary");
  }
  if (m->addBos && m->bosId < 0)
    return L.err("add_bos_token is true but no bos token is named");
  if (m->addEos && m->eosId < 0)
    return L.err("add_eos_token is true but no eos token is named");

  if (!L.badFlag.empty())
    return L.err("'" + L.badFlag +
                 "' is not true or false (a tokenizer.json flag is a JSON "
                 "boolean)");
  LOOM_FMT_CHECK(m->finish());
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(m)));
}

} // namespace loom::tok
