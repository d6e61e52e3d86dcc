//===- GgufLoader.cpp - The tokenizer.ggml.* metadata of a GGUF file ------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Keys (ggml-org/ggml docs/gguf.md, "Tokenizer"): model, pre, tokens,
// scores, token_type, merges, bos/eos/eot/eom/unknown_token_id,
// add_bos_token, add_eos_token, add_space_prefix, and tokenizer.chat_template.
// Defaults are llama.cpp's (SentencePiece adds BOS and a space prefix; a
// llama-bpe pre-tokenizer adds BOS), the file's keys override them. Every
// key of the wrong type, an id out of range or a missing required array is
// an Error naming the file and the key.
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"

#include "loom/Formats/Gguf.h"

namespace loom::tok {

namespace {
using fmt::GgufFile;
using fmt::GgufValue;
using fmt::GgufValueType;

fmt::Error typeError(const std::string &file, std::string_view key,
                     const GgufValue &v, std::string_view want) {
  std::string got(fmt::ggufValueTypeName(v.type()));
  if (v.isArray())
    got = "array of " + std::string(fmt::ggufValueTypeName(v.elementType()));
  return fmt::makeError(file, ": metadata key '", key, "' is ", got,
                        ", expected ", want);
}

fmt::Result<std::optional<std::string>> optString(const GgufFile &f,
                                                  std::string_view key) {
  const GgufValue *v = f.find(key);
  if (!v)
    return std::optional<std::string>();
  auto s = v->asString();
  if (!s)
    return typeError(f.fileName(), key, *v, "a string");
  return std::optional<std::string>(std::string(*s));
}

fmt::Result<std::optional<bool>> optBool(const GgufFile &f,
                                         std::string_view key) {
  const GgufValue *v = f.find(key);
  if (!v)
    return std::optional<bool>();
  auto b = v->asBool();
  if (!b)
    return typeError(f.fileName(), key, *v, "a bool");
  return std::optional<bool>(*b);
}

/// An optional token id; an id outside the vocabulary is an Error.
fmt::Status optId(const GgufFile &f, std::string_view key, size_t n,
                  int32_t &id) {
  const GgufValue *v = f.find(key);
  if (!v)
    return fmt::success();
  auto u = v->asUInt();
  if (!u)
    return typeError(f.fileName(), key, *v, "an unsigned integer");
  if (*u >= n)
    return fmt::makeError(f.fileName(), ": metadata key '", key, "' = ", *u,
                          " is out of range (the vocabulary has ", uint64_t(n),
                          " tokens)");
  id = int32_t(*u);
  return fmt::success();
}

fmt::Result<const GgufValue *>
stringArray(const GgufFile &f, std::string_view key, bool required) {
  const GgufValue *v = f.find(key);
  if (!v) {
    if (required)
      return fmt::makeError(f.fileName(), ": metadata key '", key,
                            "' is missing; the tokenizer needs it");
    return static_cast<const GgufValue *>(nullptr);
  }
  if (!v->isArray() || v->elementType() != GgufValueType::String)
    return typeError(f.fileName(), key, *v, "an array of strings");
  return v;
}
} // namespace

fmt::Result<std::unique_ptr<Tokenizer>>
Tokenizer::fromGguf(const std::string &path) {
  LOOM_FMT_ASSIGN(file, fmt::openGguf(path));
  auto m = std::make_unique<Impl>();
  m->source = path;

  LOOM_FMT_ASSIGN(model, optString(file, "tokenizer.ggml.model"));
  if (!model)
    return fmt::makeError(path,
                          ": no tokenizer metadata (tokenizer.ggml.model is "
                          "missing); give token ids instead of text");
  m->modelName = *model;
  if (*model == "gpt2") {
    m->kind = ModelKind::ByteLevelBpe;
  } else if (*model == "llama") {
    m->kind = ModelKind::Spm;
  } else {
    return fmt::makeError(path, ": tokenizer.ggml.model '", *model,
                          "' is not supported (Loom reads 'gpt2' byte-level "
                          "BPE and 'llama' SentencePiece)");
  }

  LOOM_FMT_ASSIGN(tokens, stringArray(file, "tokenizer.ggml.tokens", true));
  size_t n = tokens->size();
  if (n == 0 || n > size_t(INT32_MAX))
    return fmt::makeError(path, ": tokenizer.ggml.tokens has ", uint64_t(n),
                          " entries");
  m->text.reserve(n);
  for (GgufValue t : *tokens) {
    std::string s(*t.asString());
    if (s.empty()) // llama.cpp names empty entries so that they never match
      s = "[EMPTY_" + std::to_string(m->text.size()) + "]";
    m->toId[s] = int32_t(m->text.size());
    m->text.push_back(std::move(s));
  }

  m->score.assign(n, 0.0f);
  if (const GgufValue *v = file.find("tokenizer.ggml.scores")) {
    if (!v->isArray() || (v->elementType() != GgufValueType::F32 &&
                          v->elementType() != GgufValueType::I32))
      return typeError(path, "tokenizer.ggml.scores", *v, "an array of f32");
    if (v->size() < n)
      return fmt::makeError(path, ": tokenizer.ggml.scores has ", v->size(),
                            " entries for ", uint64_t(n), " tokens");
    size_t i = 0;
    for (GgufValue s : *v) {
      if (i == n)
        break;
      if (auto x = s.asFloat())
        m->score[i] = float(*x);
      else
        m->score[i] = float(*s.asInt());
      ++i;
    }
  }

  m->attr.assign(n, AttrNormal);
  if (const GgufValue *v = file.find("tokenizer.ggml.token_type")) {
    if (!v->isArray() || v->elementType() != GgufValueType::I32)
      return typeError(path, "tokenizer.ggml.token_type", *v,
                       "an array of i32");
    if (v->size() < n)
      return fmt::makeError(path, ": tokenizer.ggml.token_type has ", v->size(),
                            " entries for ", uint64_t(n), " tokens");
    size_t i = 0;
    for (GgufValue t : *v) {
      if (i == n)
        break;
      // gguf token types: 1 normal, 2 unknown, 3 control, 4 user defined,
      // 5 unused, 6 byte; anything else is "undefined" (decodes to nothing).
      switch (*t.asInt()) {
      case 1:
        m->attr[i] = AttrNormal;
        break;
      case 2:
        m->attr[i] = AttrUnknown;
        break;
      case 3:
        m->attr[i] = AttrControl;
        break;
      case 4:
        m->attr[i] = AttrUserDefined;
        break;
      case 5:
        m->attr[i] = AttrUnused;
        break;
      case 6:
        m->attr[i] = AttrByte;
        break;
      default:
        m->attr[i] = 0;
        break;
      }
      ++i;
    }
  }

  LOOM_FMT_ASSIGN(pre, optString(file, "tokenizer.ggml.pre"));
  if (m->kind == ModelKind::ByteLevelBpe) {
    m->preName = pre ? *pre : "default";
    LOOM_FMT_ASSIGN(patterns, preTokenizerPatterns(m->preName));
    for (const std::string &p : patterns) {
      LOOM_FMT_ASSIGN(re, SplitRegex::compile(p, path));
      m->preRegexes.push_back(std::move(re));
    }
    const std::string &pn = m->preName;
    bool llama3 = pn == "llama3" || pn == "llama-v3" || pn == "llama-bpe" ||
                  pn == "falcon3" || pn == "pixtral";
    m->ignoreMerges = llama3;
    m->addBos = llama3;
    // llama.cpp keeps its detokenizer clean-up for these pre-tokenizers only.
    m->cleanSpaces = !(pn == "smollm" || pn == "qwen2" ||
                       pn == "deepseek-r1-qwen" || pn == "command-r");

    LOOM_FMT_ASSIGN(merges, stringArray(file, "tokenizer.ggml.merges", true));
    m->mergeRank.reserve(merges->size());
    int32_t rank = 0;
    for (GgufValue mv : *merges) {
      std::string_view s = *mv.asString();
      size_t sp = s.size() > 1 ? s.find(' ', 1) : std::string_view::npos;
      if (sp == std::string_view::npos)
        return fmt::makeError(path, ": tokenizer.ggml.merges entry ", rank,
                              " '", s,
                              "' is not two tokens separated by a "
                              "space");
      // The first occurrence of a pair keeps its rank (as in llama.cpp).
      m->mergeRank.emplace(Impl::mergeKey(s.substr(0, sp), s.substr(sp + 1)),
                           rank);
      ++rank;
    }
  } else {
    m->addBos = true;
    m->addSpacePrefix = true;
    m->escapeSpaces = true;
  }

  if (auto st = optId(file, "tokenizer.ggml.bos_token_id", n, m->bosId); !st)
    return st.takeError();
  if (auto st = optId(file, "tokenizer.ggml.eos_token_id", n, m->eosId); !st)
    return st.takeError();
  if (auto st = optId(file, "tokenizer.ggml.eot_token_id", n, m->eotId); !st)
    return st.takeError();
  if (auto st = optId(file, "tokenizer.ggml.eom_token_id", n, m->eomId); !st)
    return st.takeError();
  if (auto st = optId(file, "tokenizer.ggml.unknown_token_id", n, m->unkId);
      !st)
    return st.takeError();
  if (m->kind == ModelKind::Spm) {
    // SentencePiece defaults (llama.cpp): unk 0, bos 1, eos 2.
    if (!file.find("tokenizer.ggml.unknown_token_id") && n > 0)
      m->unkId = 0;
    if (!file.find("tokenizer.ggml.bos_token_id") && n > 1)
      m->bosId = 1;
    if (!file.find("tokenizer.ggml.eos_token_id") && n > 2)
      m->eosId = 2;
  }

  LOOM_FMT_ASSIGN(addBos, optBool(file, "tokenizer.ggml.add_bos_token"));
  LOOM_FMT_ASSIGN(addEos, optBool(file, "tokenizer.ggml.add_eos_token"));
  LOOM_FMT_ASSIGN(addPrefix, optBool(file, "tokenizer.ggml.add_space_prefix"));
  if (addBos)
    m->addBos = *addBos;
  if (addEos)
    m->addEos = *addEos;
  if (addPrefix)
    m->addSpacePrefix = *addPrefix;
  if (m->addBos && m->bosId < 0)
    return fmt::makeError(path, ": add_bos_token is true but there is no "
                                "tokenizer.ggml.bos_token_id");
  if (m->addEos && m->eosId < 0)
    return fmt::makeError(path, ": add_eos_token is true but there is no "
                                "tokenizer.ggml.eos_token_id");

  LOOM_FMT_ASSIGN(tmpl, optString(file, "tokenizer.chat_template"));
  if (tmpl)
    m->chatTemplate = *tmpl;

  LOOM_FMT_CHECK(m->finish());
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(m)));
}

} // namespace loom::tok
