//===- Tokenizer.cpp - Encoding and decoding ------------------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The steps and their order follow llama.cpp (src/llama-vocab.cpp), the
// reference the token ids are checked against (test/python/tokenizer):
//   1. special tokens written in the text are cut out first, longest first;
//   2. byte-level BPE: each remaining fragment is split by the pre-tokenizer
//      regexes, each piece is mapped byte -> printable code point (GPT-2) and
//      merged by merge rank;
//      SentencePiece: " " becomes U+2581 (plus a leading one after a special
//      token or at the start), characters are merged by token score, and
//      what is left unknown falls back to <0xNN> byte tokens.
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"

#include <algorithm>
#include <cstring>
#include <queue>

namespace loom::tok {

std::string Tokenizer::Impl::mergeKey(std::string_view l, std::string_view r) {
  // Length-prefixed, so no separator can collide with token text.
  std::string k;
  uint32_t n = uint32_t(l.size());
  k.append(reinterpret_cast<const char *>(&n), sizeof(n));
  k.append(l);
  k.append(r);
  return k;
}

int32_t Tokenizer::Impl::find(std::string_view s) const {
  auto it = toId.find(std::string(s));
  return it == toId.end() ? -1 : it->second;
}

int32_t Tokenizer::Impl::byteToken(uint8_t b) const {
  static const char *hex = "0123456789ABCDEF";
  char buf[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
  int32_t id = find(buf);
  if (id >= 0)
    return id;
  id = find(std::string(1, char(b)));
  return id >= 0 ? id : unkId;
}

namespace {
struct Symbol {
  int prev, next;
  size_t off, n; // byte range in the word
};

/// Merges symbol `right` into `left` (its successor) and unlinks `right`;
/// both BPE variants then re-queue the pairs around `left`.
void mergeInto(std::vector<Symbol> &syms, int left, int right) {
  Symbol &l = syms[left], &r = syms[right];
  l.n += r.n;
  r.n = 0;
  l.next = r.next;
  if (r.next >= 0)
    syms[r.next].prev = left;
}

/// Splits `word` into UTF-8 characters (by lead byte, like llama.cpp).
std::vector<Symbol> charSymbols(std::string_view word) {
  std::vector<Symbol> syms;
  size_t off = 0;
  int index = 0;
  while (off < word.size()) {
    size_t n = std::min(word.size() - off, utf8LeadLength(uint8_t(word[off])));
    syms.push_back(
        {index - 1, off + n == word.size() ? -1 : index + 1, off, n});
    off += n;
    ++index;
  }
  return syms;
}
} // namespace

// llama.cpp's llm_tokenizer_bpe_session::tokenize for one word: merge the
// adjacent pair of lowest rank (leftmost on ties) until no pair has a rank.
void Tokenizer::Impl::bpeWord(std::string_view word,
                              std::vector<int32_t> &out) const {
  if (word.empty())
    return;
  if (ignoreMerges) {
    int32_t id = find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol> syms = charSymbols(word);
  struct Bigram {
    int left, right;
    int32_t rank;
    std::string text;
  };
  auto worse = [](const Bigram &a, const Bigram &b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(
      worse);
  auto symText = [&](int i) { return word.substr(syms[i].off, syms[i].n); };
  auto addBigram = [&](int l, int r) {
    if (l < 0 || r < 0)
      return;
    auto it = mergeRank.find(mergeKey(symText(l), symText(r)));
    if (it == mergeRank.end())
      return;
    std::string t(symText(l));
    t += symText(r);
    queue.push({l, r, it->second, std::move(t)});
  };
  for (int i = 1; i < int(syms.size()); ++i)
    addBigram(i - 1, i);
  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol &l = syms[b.left], &r = syms[b.right];
    if (l.n == 0 || r.n == 0)
      continue;
    if (l.n + r.n != b.text.size() || word.substr(l.off, l.n + r.n) != b.text ||
        l.next != b.right)
      continue; // outdated
    mergeInto(syms, b.left, b.right);
    addBigram(l.prev, b.left);
    addBigram(b.left, l.next);
  }
  for (int i = 0; i != -1 && !syms.empty(); i = syms[i].next) {
    if (syms[i].n == 0)
      continue;
    std::string_view s = symText(i);
    int32_t id = find(s);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    if (kind == ModelKind::ByteLevelBpe) {
      // llama.cpp looks every byte of the (mapped) symbol up on its own.
      for (char c : s) {
        int32_t b = find(std::string_view(&c, 1));
        if (b >= 0)
          out.push_back(b);
      }
    } else {
      for (char c : s) {
        int32_t b = byteToken(uint8_t(c));
        if (b >= 0)
          out.push_back(b);
      }
    }
  }
}

// llama.cpp's llm_tokenizer_spm_session::tokenize: merge the adjacent pair
// whose concatenation is the token of highest score (leftmost on ties).
void Tokenizer::Impl::spmText(std::string_view text,
                              std::vector<int32_t> &out) const {
  std::vector<Symbol> syms = charSymbols(text);
  struct Bigram {
    int left, right;
    float score;
    size_t size;
  };
  auto worse = [](const Bigram &a, const Bigram &b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(
      worse);
  auto addBigram = [&](int l, int r) {
    if (l < 0 || r < 0)
      return;
    std::string_view t = text.substr(syms[l].off, syms[l].n + syms[r].n);
    int32_t id = find(t);
    if (id < 0)
      return;
    queue.push({l, r, score[size_t(id)], t.size()});
  };
  for (int i = 1; i < int(syms.size()); ++i)
    addBigram(i - 1, i);
  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol &l = syms[b.left], &r = syms[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size)
      continue;
    mergeInto(syms, b.left, b.right);
    addBigram(l.prev, b.left);
    addBigram(b.left, l.next);
  }
  for (int i = 0; i != -1 && !syms.empty(); i = syms[i].next) {
    if (syms[i].n == 0)
      continue;
    std::string_view s = text.substr(syms[i].off, syms[i].n);
    int32_t id = find(s);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : s) {
      int32_t b = byteToken(uint8_t(c));
      if (b >= 0)
        out.push_back(b);
    }
  }
}

namespace {
void escapeSpacesInPlace(std::string &s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == ' ')
      out += "\xE2\x96\x81";
    else
      out += c;
  }
  s.swap(out);
}
} // namespace

// One fragment of text between special tokens (byte-level or char BPE).
void Tokenizer::Impl::encodeFragment(std::string_view frag, bool atStart,
                                     std::vector<int32_t> &out) const {
  if (kind == ModelKind::CharBpe) {
    // HF normalizes each fragment between added tokens on its own: the
    // U+2581 prefix goes before every fragment (Prepend normalizer,
    // Metaspace "always") or only before one at the start of the text
    // (Metaspace "first").
    std::string t(frag);
    if (escapeSpaces)
      escapeSpacesInPlace(t);
    if (addSpacePrefix && (atStart || !prefixAtStartOnly))
      t.insert(0, "\xE2\x96\x81");
    bpeWord(t, out);
    return;
  }
  // Byte-level BPE. The text is first decoded like llama.cpp does (invalid
  // bytes -> U+FFFD) and re-encoded; `proxy` is the same text with
  // surrogates (which llama.cpp keeps) as U+FFFD so that PCRE2 sees valid
  // UTF-8 of the same length.
  std::vector<uint32_t> cps = decodeLikeLlama(frag);
  std::string canon, proxy;
  canon.reserve(frag.size());
  proxy.reserve(frag.size());
  for (uint32_t cp : cps) {
    appendUtf8(canon, cp);
    appendUtf8(proxy, (cp >= 0xD800 && cp <= 0xDFFF) ? 0xFFFD : cp);
  }
  std::vector<std::string_view> pieces{std::string_view(proxy)}, next;
  for (const auto &re : preRegexes) {
    next.clear();
    for (std::string_view p : pieces)
      re->split(p, next);
    pieces.swap(next);
  }
  std::string word;
  for (std::string_view p : pieces) {
    size_t off = size_t(p.data() - proxy.data());
    word.clear();
    for (size_t k = 0; k < p.size(); ++k)
      appendUtf8(word, byteToUnicode(uint8_t(canon[off + k])));
    bpeWord(word, out);
  }
}

namespace {
/// A piece of the input: raw text or an already known token.
struct Fragment {
  int32_t token; // -1 for text
  size_t off, len;
};
} // namespace

fmt::Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text,
                                                    bool addSpecial,
                                                    bool parseSpecial) const {
  const Impl &m = *impl;
  std::vector<Fragment> frags;
  if (!text.empty())
    frags.push_back({-1, 0, text.size()});

  // llama.cpp's tokenizer_st_partition: for each special token, longest
  // first, cut every occurrence out of the remaining text fragments.
  // Control and unknown tokens only when parseSpecial; user-defined always.
  for (int32_t id : m.specialOrder) {
    uint8_t a = m.attr[size_t(id)];
    if (!parseSpecial && (a & (AttrControl | AttrUnknown)))
      continue;
    const std::string &st = m.text[size_t(id)];
    if (st.empty())
      continue;
    std::vector<Fragment> out;
    out.reserve(frags.size());
    for (const Fragment &f : frags) {
      if (f.token >= 0) {
        out.push_back(f);
        continue;
      }
      size_t pos = f.off, end = f.off + f.len;
      while (pos < end) {
        size_t hit = text.substr(0, end).find(st, pos);
        if (hit == std::string_view::npos)
          break;
        out.push_back({-1, pos, hit - pos});
        out.push_back({id, hit, st.size()});
        pos = hit + st.size();
      }
      if (pos < end)
        out.push_back({-1, pos, end - pos});
    }
    // Drop empty text fragments (llama.cpp never creates them).
    frags.clear();
    for (const Fragment &f : out)
      if (f.token >= 0 || f.len > 0)
        frags.push_back(f);
  }

  std::vector<int32_t> ids;
  if (addSpecial && m.addBos) {
    if (m.bosId < 0)
      return fmt::makeError(m.source,
                            ": the tokenizer asks for a BOS token "
                            "(add_bos_token) but has no bos_token_id");
    ids.push_back(m.bosId);
  }
  bool prevSpecial = true;
  for (const Fragment &f : frags) {
    if (f.token >= 0) {
      ids.push_back(f.token);
      prevSpecial = true;
      continue;
    }
    std::string_view piece = text.substr(f.off, f.len);
    if (m.kind == ModelKind::Spm) {
      std::string t;
      if (m.addSpacePrefix && prevSpecial)
        t = " ";
      t += piece;
      escapeSpacesInPlace(t);
      m.spmText(t, ids);
    } else {
      m.encodeFragment(piece, f.off == 0, ids);
    }
    prevSpecial = false;
  }
  if (addSpecial && m.addEos) {
    if (m.eosId < 0)
      return fmt::makeError(m.source,
                            ": the tokenizer asks for an EOS token "
                            "(add_eos_token) but has no eos_token_id");
    ids.push_back(m.eosId);
  }
  return ids;
}

std::string Tokenizer::tokenBytes(int32_t id) const {
  if (id < 0 || size_t(id) >= impl->bytes.size())
    return {};
  return impl->bytes[size_t(id)];
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids) const {
  const Impl &m = *impl;
  std::string out;
  bool removeSpace = m.addSpacePrefix;
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= m.bytes.size())
      continue;
    std::string_view p = m.bytes[size_t(id)];
    if (p.empty())
      continue; // control tokens (BOS) do not end the space removal
    if (removeSpace && p[0] == ' ')
      p.remove_prefix(1);
    removeSpace = false;
    out += p;
  }
  if (!m.cleanSpaces || out.empty())
    return out;
  // llama.cpp's detokenize clean-up (HF clean_up_tokenization_spaces):
  // " ?" " !" " ." " ," lose the space, " ' " becomes "'", and " 's" " 'm"
  // " 're" " 've" lose the space.
  std::string a;
  a += out[0];
  for (size_t i = 1; i < out.size(); ++i) {
    char x = out[i];
    if (out[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
      a.pop_back();
    a += x;
  }
  std::string b;
  b += a[0];
  for (size_t i = 1; i < a.size(); ++i) {
    char x = a[i];
    if (x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      b += x;
      ++i; // drop the next space
      continue;
    }
    b += x;
  }
  std::string c;
  c += b[0];
  for (size_t i = 1; i < b.size(); ++i) {
    char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      char x1 = b[i + 1];
      if (x1 == 's' || x1 == 'm')
        c.pop_back();
      else if (i + 2 < b.size() && ((x1 == 'r' && b[i + 2] == 'e') ||
                                    (x1 == 'v' && b[i + 2] == 'e')))
        c.pop_back();
    }
    c += x;
  }
  return c;
}

int32_t Tokenizer::bos() const { return impl->bosId; }
int32_t Tokenizer::eos() const { return impl->eosId; }
bool Tokenizer::isEndOfGeneration(int32_t id) const {
  return impl->eog.count(id) != 0;
}
size_t Tokenizer::vocabSize() const { return impl->text.size(); }
const std::string &Tokenizer::chatTemplate() const {
  return impl->chatTemplate;
}
const std::string &Tokenizer::tokenText(int32_t id) const {
  static const std::string empty;
  if (id < 0 || size_t(id) >= impl->text.size())
    return empty;
  return impl->text[size_t(id)];
}
std::optional<int32_t> Tokenizer::findToken(std::string_view text) const {
  int32_t id = impl->find(text);
  if (id < 0)
    return std::nullopt;
  return id;
}
bool Tokenizer::isControl(int32_t id) const {
  if (id < 0 || size_t(id) >= impl->attr.size())
    return false;
  return impl->attr[size_t(id)] & (AttrControl | AttrUnknown);
}
bool Tokenizer::addsBos() const { return impl->addBos; }
bool Tokenizer::addsEos() const { return impl->addEos; }
const std::string &Tokenizer::modelKind() const { return impl->modelName; }
const std::string &Tokenizer::preTokenizer() const { return impl->preName; }

Tokenizer::Tokenizer(std::unique_ptr<Impl> i) : impl(std::move(i)) {}
Tokenizer::~Tokenizer() = default;

// --- After loading ---------------------------------------------------------

namespace {
bool oneOf(const std::string &s, std::initializer_list<std::string_view> l) {
  for (auto x : l)
    if (s == x)
      return true;
  return false;
}
} // namespace

fmt::Status Tokenizer::Impl::finish() {
  size_t n = text.size();
  // Ids of the end-of-turn tokens llama.cpp recognises by their text; they
  // are made control tokens when the file did not say so (as llama.cpp does).
  int32_t fimPad = -1, fimRep = -1, fimSep = -1;
  for (size_t i = 0; i < n; ++i) {
    const std::string &t = text[i];
    int32_t id = int32_t(i);
    auto makeControl = [&] { attr[i] = uint8_t(attr[i] | AttrControl); };
    if (eotId < 0 &&
        oneOf(t, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                  "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>"})) {
      eotId = id;
      makeControl();
    }
    if (eomId < 0 && t == "<|eom_id|>") {
      eomId = id;
      makeControl();
    }
    if (fimPad < 0 &&
        oneOf(t, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"})) {
      fimPad = id;
      makeControl();
    }
    if (fimRep < 0 && oneOf(t, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                "<REPO>", "<reponame>"})) {
      fimRep = id;
      makeControl();
    }
    if (fimSep < 0 && t == "<|file_sep|>") {
      fimSep = id;
      makeControl();
    }
    if (oneOf(t, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                  "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>",
                  "<|end_of_text|>"})) {
      eog.insert(id);
      makeControl();
    }
  }
  for (int32_t id : {fimPad, fimRep, fimSep, eosId, eotId, eomId})
    if (id >= 0)
      eog.insert(id);

  // Decoded bytes of every token (llama.cpp's token_to_piece, special=false).
  bytes.assign(n, std::string());
  for (size_t i = 0; i < n; ++i) {
    uint8_t a = attr[i];
    const std::string &t = text[i];
    if (a & (AttrControl | AttrUnknown))
      continue;
    if (a & AttrUserDefined) {
      bytes[i] = t;
      continue;
    }
    if (a & AttrByte) {
      // "<0xNN>"
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        bytes[i] = std::string(
            1, char(std::strtoul(t.substr(3, 2).c_str(), nullptr, 16)));
        continue;
      }
      return fmt::makeError(source, ": token ", uint64_t(i), " '", t,
                            "' is a byte token but not of the form <0xNN>");
    }
    if (!(a & AttrNormal))
      continue; // unused / undefined tokens decode to nothing
    if (kind == ModelKind::ByteLevelBpe) {
      std::string s;
      for (uint32_t cp : decodeLikeLlama(t)) {
        int b = unicodeToByte(cp);
        if (b >= 0)
          s += char(b);
        else
          appendUtf8(s, cp); // not a byte image: keep the character
      }
      bytes[i] = std::move(s);
    } else {
      std::string s;
      for (size_t k = 0; k < t.size();) {
        if (t.compare(k, 3, "\xE2\x96\x81") == 0) {
          s += ' ';
          k += 3;
        } else {
          s += t[k++];
        }
      }
      bytes[i] = std::move(s);
    }
  }

  specialOrder.clear();
  for (size_t i = 0; i < n; ++i)
    if (attr[i] & (AttrControl | AttrUserDefined | AttrUnknown))
      specialOrder.push_back(int32_t(i));
  std::stable_sort(specialOrder.begin(), specialOrder.end(),
                   [&](int32_t a, int32_t b) {
                     return text[size_t(a)].size() > text[size_t(b)].size();
                   });
  return fmt::success();
}

} // namespace loom::tok
