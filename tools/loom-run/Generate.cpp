//===- Generate.cpp - text generation in loom-run -------------------------===//
//
// Everything that can be checked (flags, manifest, tokenizer, prompts,
// context length, memory) is checked on the main thread before a rank
// starts. Each rank then owns its KV cache and runs the same loop; every
// rank tracks the state of every sequence (tokens, text, stop) from the
// tokens all ranks agreed on, so stop decisions never need a second
// exchange and rank 0 can print every sequence.
//
//===----------------------------------------------------------------------===//

#include "Generate.h"

#include "Loader.h"
#include "State.h"
#include "Strided.h"

#include "loom/runtime/Runtime.h"
#include "loom/runtime/abi.h"

#ifdef LOOM_RUN_HAVE_TOKENIZER
#include "loom/Tokenizer/Tokenizer.h"
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include <unistd.h>

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace loom::run {

const char *const kGenerateUsage = R"(
GENERATION (the bundle's `decode` entry with a KV cache; docs/LOOM-RUN.md):
  --prompt TEXT           generate from TEXT (repeatable: one sequence each,
                          e.g. one per dp rank)
  --prompts-file FILE     one prompt per line (one sequence each)
  --prompt-ids 1,2,3      the prompt as token ids (no tokenizer needed;
                          repeatable)
  --chat                  wrap each prompt in the model's chat template
  --system TEXT           the system message of --chat / --interactive
  --interactive           read user turns from stdin (chat template when the
                          model has one); the cache is kept between turns
  --max-tokens N          stop after N generated tokens (default 256)
  --stop STR              stop when the text contains STR (repeatable)
  --ignore-eog            do not stop at end-of-generation tokens (benchmarks)
  --temp T                temperature (default 0 = greedy)
  --top-k K               keep the K most likely tokens (default 0 = off)
  --top-p P               nucleus sampling, P in (0, 1] (default 1 = off)
  --min-p P               drop tokens below P x the best one's probability
                          (default 0 = off)
  --repeat-penalty R      llama.cpp's repetition penalty (default 1 = off)
  --repeat-last-n N       tokens the penalty looks at (default 64, -1 = all)
  --seed S                RNG seed of the sampler (default: random, printed)
  --result FILE.json      write the prompts, token ids, text and stop reason
                          of every sequence (and --bench figures)
  --bench                 print prefill and decode tokens/s, ms per token
                          split into compute, collectives and sampling
)";

namespace {

int genFail(const std::string &msg) {
  std::fprintf(stderr, "loom-run: %s\n", msg.c_str());
  return 1;
}

bool parseI64(const char *s, int64_t lo, int64_t hi, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi)
    return false;
  out = v;
  return true;
}

bool parseFloat(const char *s, float &out) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (end == s || *end || errno || !std::isfinite(v))
    return false;
  out = float(v);
  return true;
}

/// Offset of the first byte that is not valid UTF-8, or npos.
size_t invalidUtf8At(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                            : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size())
      return i;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80)
        return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += n;
  }
  return std::string::npos;
}

/// Streams valid UTF-8 only: a stand-in for the tokenizer's Utf8Stream when
/// loom-run is built without the tokenizer (then there is no text anyway).
#ifdef LOOM_RUN_HAVE_TOKENIZER
using TextStream = loom::tok::Utf8Stream;
#else
struct TextStream {
  std::string push(std::string_view b) { return std::string(b); }
  std::string flush() { return ""; }
};
#endif

//===----------------------------------------------------------------------===//
// What the main thread prepares
//===----------------------------------------------------------------------===//

/// One decode input that is a state (KV cache) buffer.
struct StateArg {
  size_t index;               ///< in the entry's inputs
  std::vector<int64_t> shape; ///< per rank, ctx and batch filled in
  int64_t bytes = 0;
};

/// One sequence (a prompt), as every rank tracks it.
struct Sequence {
  std::vector<int32_t> prompt;
  std::vector<int32_t> generated;
  std::string text;       ///< generated bytes, stop string cut off
  size_t emitted = 0;     ///< bytes of `text` already streamed
  int64_t pos = 0;        ///< positions filled in the cache
  bool done = false;
  std::string stop;       ///< eog | max-tokens | stop-string | context
};

struct Bench {
  int64_t prefillTokens = 0;
  double prefillMs = 0;
  int64_t decodeSteps = 0, decodeTokens = 0;
  double decodeMs = 0, decodeCommMs = 0, decodeFnMs = 0;
};

struct GenJob {
  const GenerateOptions *o = nullptr;
  const Manifest *m = nullptr;
  const Entry *entry = nullptr;
  EntryFn fn = nullptr;
  std::map<int64_t, std::vector<PlannedWeight>> weights;
  size_t tokensArg = 0, positionsArg = 0, logitsOut = 0;
  std::vector<StateArg> states;
  int64_t vocab = 0; ///< 0: take the logits' width
  int64_t ctx = 0;
  int64_t batchLocal = 1;
  uint64_t dpMask = 0, mpMask = 0;
  int64_t dpSize = 1;
  std::vector<Sequence> seqs; ///< global, initial state
  bool stream = false;        ///< rank 0 streams sequence 0
  bool printIds = false;      ///< no tokenizer: print ids
#ifdef LOOM_RUN_HAVE_TOKENIZER
  const loom::tok::Tokenizer *tok = nullptr;
  bool chatFormatKnown = false;
  loom::tok::ChatFormat chatFormat = loom::tok::ChatFormat::ChatML;
#endif
  // Filled by global rank 0.
  std::vector<Sequence> final;
  Bench bench;
};

//===----------------------------------------------------------------------===//
// One rank
//===----------------------------------------------------------------------===//

class RankGen {
public:
  RankGen(GenJob &j, loom_rt_ctx *c) : J(j), Ctx(c) {}
  int run();

private:
  bool setUp();
  /// Calls decode with S tokens per local sequence at position pos; the
  /// last position's logits of every local sequence into Logits.
  bool step(const std::vector<std::vector<int32_t>> &toks, int64_t pos);
  /// Samples the local sequences, exchanges the tokens with every rank and
  /// updates every sequence. False when nothing is active any more.
  bool sampleAndAgree();
  void process(size_t g, int32_t token);
  void emit(size_t g, bool final);
  bool interactiveLoop();
  bool generate();
  bool readTurn(std::string &line, bool &eof);
  int fail(const std::string &msg) {
    std::fprintf(stderr, "loom-run: rank %lld: %s\n", (long long)Rank,
                 msg.c_str());
    return 1;
  }

  GenJob &J;
  loom_rt_ctx *Ctx;
  int64_t Rank = 0, DpIndex = 0, MpIndex = 0, World = 1;
  BoundWeights Bound;
  std::vector<Buffer> StateBufs;
  std::vector<std::vector<int64_t>> StateDescs;
  Buffer TokBuf, PosBuf;
  int64_t TokCap = 0;
  std::vector<float> Logits; ///< [batchLocal][vocab]
  std::vector<Sequence> Seqs;
  std::vector<Sampler> Samplers; ///< local sequences
  std::vector<int64_t> ResultWords;
  std::vector<TextStream> Streams;
  std::string Failure;
  std::vector<int64_t> Exchange;
};

bool RankGen::setUp() {
  Rank = loom_rt_rank(Ctx);
  World = loom_rt_world_size(Ctx);
  DpIndex = loom_rt_group_index(Ctx, J.dpMask);
  MpIndex = loom_rt_group_index(Ctx, J.mpMask);
  std::string err;
  if (!bindWeights(Ctx, *J.entry, J.weights.at(Rank), Bound, &err)) {
    Failure = err;
    return false;
  }
  for (const StateArg &s : J.states) {
    Buffer b = allocBuffer(s.bytes, /*zero=*/true);
    if (!b) {
      Failure = "out of memory for the KV cache (" +
                humanBytes(double(s.bytes)) + " for '" +
                J.entry->inputs[s.index].name + "')";
      return false;
    }
    std::vector<int64_t> strides(s.shape.size());
    rowMajorStrides(int64_t(s.shape.size()), s.shape.data(), strides.data());
    StateDescs.push_back(makeDescriptor(b.get(), s.shape, strides));
    Bound.notOwned.insert(b.get());
    StateBufs.push_back(std::move(b));
  }
  Seqs = J.seqs;
  for (int64_t b = 0; b < J.batchLocal; ++b) {
    SamplingParams p = J.o->sampling;
    size_t g = size_t(DpIndex * J.batchLocal + b);
    p.seed = J.o->sampling.seed + g; // one stream per sequence
    Samplers.emplace_back(p);
    for (int32_t t : Seqs[g].prompt)
      Samplers.back().accept(t);
  }
  Streams.resize(Seqs.size());
  int64_t words = 0;
  for (const OutputSpec &out : J.entry->outputs)
    words += 3 + 2 * out.rank;
  ResultWords.assign(size_t(std::max<int64_t>(words, 1)), 0);
  return true;
}

bool RankGen::step(const std::vector<std::vector<int32_t>> &toks,
                   int64_t pos) {
  int64_t B = J.batchLocal, S = int64_t(toks.front().size());
  if (B * S > TokCap) {
    TokCap = B * S;
    TokBuf = allocBuffer(TokCap * 8);
    PosBuf = allocBuffer(S * 8);
    if (!TokBuf || !PosBuf) {
      Failure = "out of memory for the token buffers";
      return false;
    }
  }
  auto *t = reinterpret_cast<int64_t *>(TokBuf.get());
  auto *p = reinterpret_cast<int64_t *>(PosBuf.get());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      t[b * S + s] = toks[size_t(b)][size_t(s)];
  for (int64_t s = 0; s < S; ++s)
    p[s] = pos + s;
  std::vector<std::vector<int64_t>> in(J.entry->inputs.size());
  in[J.tokensArg] = makeDescriptor(t, {B, S}, {S, 1});
  in[J.positionsArg] = makeDescriptor(p, {S}, {1});
  for (size_t k = 0; k < J.states.size(); ++k)
    in[J.states[k].index] = StateDescs[k];
  std::vector<void *> args{ResultWords.data(), Ctx};
  for (auto &d : in)
    args.push_back(d.data());
  for (auto &d : Bound.descs)
    args.push_back(d.data());
  std::fill(ResultWords.begin(), ResultWords.end(), 0);
  std::set<const void *> notOwned = Bound.notOwned;
  notOwned.insert(t);
  notOwned.insert(p);
  J.fn(args.data());

  const OutputView v = outputViews(*J.entry, ResultWords)[J.logitsOut];
  int64_t rows = v.sizes[0], cols = v.sizes[1];
  bool ok = rows == B && cols > 0 && v.aligned;
  std::string why;
  int64_t vocab = J.vocab ? J.vocab : cols;
  int64_t mpSize = loom_rt_group_size(Ctx, J.mpMask);
  if (!ok)
    why = "decode returned logits of shape [" + std::to_string(rows) + ", " +
          std::to_string(cols) + "], expected [" + std::to_string(B) +
          ", vocab]";
  else if (cols != vocab && cols * mpSize != vocab)
    why = "decode returned " + std::to_string(cols) +
          " logits per row on this rank, but the vocabulary has " +
          std::to_string(vocab) + " entries";
  if (!why.empty()) {
    freeOutputs(*J.entry, ResultWords, notOwned);
    Failure = why;
    return false;
  }
  std::vector<float> local(size_t(B * cols));
  const float *src = reinterpret_cast<const float *>(v.aligned) + v.offset;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < cols; ++c)
      local[size_t(b * cols + c)] = src[b * v.strides[0] + c * v.strides[1]];
  freeOutputs(*J.entry, ResultWords, notOwned);
  if (cols == vocab) {
    Logits = std::move(local);
  } else {
    // The vocabulary is split over the model-parallel ranks: gather it
    // ([B][p][cols] is [B][vocab] in group order).
    Logits.assign(size_t(B * vocab), 0);
    loom_rt_all_gather(Ctx, LOOM_RT_F32, local.data(), Logits.data(), B, cols,
                       J.mpMask);
  }
  J.vocab = vocab;
  for (float x : Logits)
    if (!std::isfinite(x)) {
      Failure = "decode produced a non-finite logit (NaN or inf) at "
                "position " + std::to_string(pos + S - 1);
      return false;
    }
  return true;
}

void RankGen::emit(size_t g, bool final) {
  if (!(J.stream && Rank == 0 && g == 0))
    return;
  Sequence &s = Seqs[g];
  size_t safe = s.text.size();
  if (!final) {
    // Hold back a tail that may still become a stop string.
    for (const std::string &stop : J.o->stops)
      for (size_t k = std::min(stop.size() - 1, s.text.size()); k > 0; --k)
        if (s.text.compare(s.text.size() - k, k, stop, 0, k) == 0) {
          safe = std::min(safe, s.text.size() - k);
          break;
        }
  }
  std::string out;
  if (safe > s.emitted) {
    out = Streams[g].push(std::string_view(s.text).substr(s.emitted,
                                                          safe - s.emitted));
    s.emitted = safe;
  }
  if (final)
    out += Streams[g].flush();
  if (!out.empty()) {
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }
}

void RankGen::process(size_t g, int32_t token) {
  Sequence &s = Seqs[g];
#ifdef LOOM_RUN_HAVE_TOKENIZER
  if (J.tok && !J.o->ignoreEog && J.tok->isEndOfGeneration(token)) {
    s.done = true;
    s.stop = "eog";
    emit(g, true);
    return;
  }
#endif
  s.generated.push_back(token);
  if (J.printIds) {
    if (J.stream && Rank == 0 && g == 0) {
      std::printf("%s%d", s.generated.size() > 1 ? " " : "", token);
      std::fflush(stdout);
    }
  }
#ifdef LOOM_RUN_HAVE_TOKENIZER
  if (J.tok) {
    size_t from = s.text.size();
    s.text += J.tok->tokenBytes(token);
    for (const std::string &stop : J.o->stops) {
      size_t start = from >= stop.size() ? from - stop.size() + 1 : 0;
      size_t at = s.text.find(stop, start);
      if (at != std::string::npos) {
        s.text.resize(at);
        s.done = true;
        s.stop = "stop-string";
      }
    }
  }
#endif
  if (!s.done && int64_t(s.generated.size()) >= J.o->maxTokens) {
    s.done = true;
    s.stop = "max-tokens";
  }
  if (!s.done && s.pos >= J.ctx) {
    s.done = true;
    s.stop = "context";
  }
  emit(g, s.done);
}

bool RankGen::sampleAndAgree() {
  // Each sequence's token is drawn by the first rank of its model-parallel
  // group and taken from there by every rank: one all_gather of B tokens
  // per rank over the world (-1: no token).
  int64_t B = J.batchLocal;
  std::vector<int64_t> mine(size_t(B), -1);
  for (int64_t b = 0; b < B; ++b) {
    size_t g = size_t(DpIndex * B + b);
    if (MpIndex == 0 && !Seqs[g].done)
      mine[size_t(b)] = Samplers[size_t(b)].sample(
          &Logits[size_t(b * J.vocab)], size_t(J.vocab));
  }
  Exchange.assign(size_t(World * B), -1);
  loom_rt_all_gather(Ctx, LOOM_RT_I64, mine.data(), Exchange.data(), 1, B,
                     LOOM_RT_ALL_AXES);
  // The leader of dp group d: the rank with dp coordinates d and every other
  // coordinate 0. Walk the ranks and take each leader's slots.
  const std::vector<int64_t> &dims = J.m->meshShape;
  bool any = false;
  for (int64_t r = 0; r < World; ++r) {
    int64_t rest = r, d = 0;
    bool leader = true;
    std::vector<int64_t> coords(dims.size());
    for (size_t a = dims.size(); a-- > 0;) {
      coords[a] = rest % dims[a];
      rest /= dims[a];
    }
    for (size_t a = 0; a < dims.size(); ++a)
      if (J.dpMask >> a & 1) {
        d = d * dims[a] + coords[a];
      } else if (coords[a] != 0) {
        leader = false;
      }
    if (!leader)
      continue;
    for (int64_t b = 0; b < B; ++b) {
      size_t g = size_t(d * B + b);
      int64_t tok = Exchange[size_t(r * B + b)];
      if (Seqs[g].done)
        continue;
      if (tok < 0 || tok >= J.vocab) {
        Failure = "no valid token for sequence " + std::to_string(g);
        return false;
      }
      process(g, int32_t(tok));
      if (int64_t(g / size_t(B)) == DpIndex && !Seqs[g].done)
        Samplers[size_t(b)].accept(int32_t(tok));
      any = any || !Seqs[g].done;
    }
  }
  return any;
}

bool RankGen::generate() {
  int64_t B = J.batchLocal;
  Bench &bench = J.bench;
  auto localSeq = [&](int64_t b) -> Sequence & {
    return Seqs[size_t(DpIndex * B + b)];
  };
  // Prefill: the part of each local prompt not in the cache yet.
  std::vector<std::vector<int32_t>> toks(static_cast<size_t>(B));
  int64_t pos = localSeq(0).pos;
  for (int64_t b = 0; b < B; ++b) {
    Sequence &s = localSeq(b);
    toks[size_t(b)].assign(s.prompt.begin() + s.pos, s.prompt.end());
  }
  loom_rt_barrier(Ctx, LOOM_RT_ALL_AXES);
  double t0 = nowMs();
  if (!step(toks, pos))
    return false;
  for (auto &s : Seqs)
    s.pos = int64_t(s.prompt.size());
  loom_rt_barrier(Ctx, LOOM_RT_ALL_AXES);
  double t1 = nowMs();
  if (Rank == 0) {
    bench.prefillTokens += int64_t(toks[0].size()) * B * J.dpSize;
    bench.prefillMs += t1 - t0;
  }
  double tDecode = nowMs();
  while (true) {
    bool active = sampleAndAgree();
    if (!Failure.empty())
      return false;
    if (!active)
      break;
    for (int64_t b = 0; b < B; ++b) {
      Sequence &s = localSeq(b);
      toks[size_t(b)].assign(1, s.generated.empty() ? 0 : s.generated.back());
    }
    // Every sequence moves on each step (done ones with a dummy token at a
    // position that is never read again), so a rank's batch shares `pos`.
    int64_t p = std::min(localSeq(0).pos, J.ctx - 1);
    double f0 = nowMs();
    loom::rt::CommStats c0 = loom::rt::commStats(Ctx);
    if (!step(toks, p))
      return false;
    loom::rt::CommStats c1 = loom::rt::commStats(Ctx);
    double f1 = nowMs();
    for (auto &s : Seqs)
      ++s.pos;
    if (Rank == 0) {
      ++bench.decodeSteps;
      bench.decodeFnMs += f1 - f0;
      bench.decodeCommMs += double(c1.ns - c0.ns) / 1e6;
    }
  }
  if (Rank == 0) {
    bench.decodeMs += nowMs() - tDecode;
    for (const Sequence &s : Seqs)
      bench.decodeTokens += int64_t(s.generated.size());
  }
  return true;
}

bool RankGen::readTurn(std::string &line, bool &eof) {
  // Rank 0 reads stdin; the line reaches every rank through an all_reduce
  // (the others add zeros). Nobody times out while a person types.
  double saved = loom_rt_get_timeout(Ctx);
  loom_rt_set_timeout(Ctx, 1e9);
  int64_t len = 0;
  std::string got;
  if (Rank == 0) {
    std::fputs("\n> ", stdout);
    std::fflush(stdout);
    if (std::getline(std::cin, got))
      len = int64_t(got.size());
    else
      len = -1;
  }
  loom_rt_all_reduce(Ctx, LOOM_RT_I64, LOOM_RT_SUM, &len, &len, 1,
                     LOOM_RT_ALL_AXES);
  eof = len < 0;
  if (!eof) {
    std::vector<uint8_t> buf(size_t(len) + 1, 0);
    if (Rank == 0)
      std::memcpy(buf.data(), got.data(), size_t(len));
    loom_rt_all_reduce(Ctx, LOOM_RT_U8, LOOM_RT_SUM, buf.data(), buf.data(),
                       len, LOOM_RT_ALL_AXES);
    line.assign(reinterpret_cast<const char *>(buf.data()), size_t(len));
  }
  loom_rt_set_timeout(Ctx, saved);
  return true;
}

bool RankGen::interactiveLoop() {
#ifdef LOOM_RUN_HAVE_TOKENIZER
  const loom::tok::Tokenizer &tok = *J.tok;
  std::vector<loom::tok::ChatMessage> msgs;
  if (J.o->systemGiven)
    msgs.push_back({"system", J.o->system});
  std::vector<int32_t> cached; // the tokens whose keys/values are cached
  Sequence &s = Seqs[0];
  while (true) {
    std::string line;
    bool eof = false;
    readTurn(line, eof);
    if (eof)
      return true;
    if (invalidUtf8At(line) != std::string::npos) {
      if (Rank == 0)
        std::fprintf(stderr, "loom-run: this line is not valid UTF-8; "
                             "type it again\n");
      continue;
    }
    std::vector<int32_t> ids;
    if (J.chatFormatKnown) {
      msgs.push_back({"user", line});
      std::string text =
          loom::tok::applyChatTemplate(J.chatFormat, msgs, true, tok);
      auto r = tok.encode(text, true, true);
      if (!r) {
        Failure = r.error().message;
        return false;
      }
      ids = r.take();
      if (ids.size() >= 2 && ids[0] == tok.bos() && ids[1] == tok.bos())
        ids.erase(ids.begin());
    } else {
      auto r = tok.encode(line, cached.empty(), true);
      if (!r) {
        Failure = r.error().message;
        return false;
      }
      ids = cached;
      ids.insert(ids.end(), r->begin(), r->end());
    }
    // Reuse the cached prefix; the cache is indexed by position, so going
    // back is free (later positions are overwritten, never read).
    size_t keep = 0;
    while (keep < cached.size() && keep < ids.size() &&
           cached[keep] == ids[keep])
      ++keep;
    if (keep == ids.size())
      keep = ids.empty() ? 0 : ids.size() - 1;
    if (int64_t(ids.size()) >= J.ctx) {
      Failure = "the conversation (" + std::to_string(ids.size()) +
                " tokens) no longer fits in --ctx " + std::to_string(J.ctx) +
                "; start again with a larger --ctx";
      return false;
    }
    s.prompt = ids;
    s.pos = int64_t(keep);
    s.generated.clear();
    s.text.clear();
    s.emitted = 0;
    s.done = false;
    s.stop.clear();
    Samplers[0].clearHistory();
    for (int32_t t : ids)
      Samplers[0].accept(t);
    if (!generate())
      return false;
    cached = ids;
    // Every generated token but the last was fed back.
    if (!s.generated.empty())
      cached.insert(cached.end(), s.generated.begin(),
                    s.generated.end() - (s.stop == "eog" ? 0 : 1));
    if (J.chatFormatKnown)
      msgs.push_back({"assistant", s.text});
  }
#else
  Failure = "--interactive needs the tokenizer library";
  return false;
#endif
}

int RankGen::run() {
  if (!setUp())
    return fail(Failure);
  bool ok = J.o->interactive ? interactiveLoop() : generate();
  if (!ok)
    return fail(Failure);
  if (Rank == 0) {
    if (J.stream && !J.o->interactive) {
      std::fputc('\n', stdout);
      std::fflush(stdout);
    }
    J.final = Seqs;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Main thread
//===----------------------------------------------------------------------===//

/// Why the ranks along mesh axis `a` work on the same sequences (empty when
/// they are independent and may each run their own): the plan
/// (plan.json) has a collective of `decode` over the axis, or the ranks'
/// weight slices differ along it. Only then is a "dp" axis data-parallel;
/// treating independent ranks as one sequence is merely redundant, the
/// reverse would be wrong.
std::string cooperatingAxis(const std::string &bundle, const Manifest &m,
                            const Entry &e, size_t a) {
  const std::string &name = m.meshAxes[a];
  std::ifstream in(fs::path(bundle) / "plan.json", std::ios::binary);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    Json plan = Json::parse(ss.str(), nullptr, false);
    if (plan.is_object() && plan.contains("functions") &&
        plan["functions"].is_array())
      for (const Json &f : plan["functions"]) {
        if (!f.is_object() || f.value("name", "") != e.name ||
            !f.contains("collectives") || !f["collectives"].is_array())
          continue;
        for (const Json &c : f["collectives"])
          if (c.is_object() && c.contains("axes") && c["axes"].is_array())
            for (const Json &ax : c["axes"])
              if (ax.is_string() && ax.get<std::string>() == name)
                return "the plan has a " + c.value("kind", "collective") +
                       " over it; the program's batch is not split";
      }
  }
  int64_t stride = 1;
  for (size_t k = a + 1; k < m.meshShape.size(); ++k)
    stride *= m.meshShape[k];
  for (int64_t r = 0; r < m.numRanks; ++r) {
    int64_t c = (r / stride) % m.meshShape[a];
    if (c == 0)
      continue;
    auto mine = m.ranks[size_t(r)].weights.find(e.name);
    auto first = m.ranks[size_t(r - c * stride)].weights.find(e.name);
    if (mine == m.ranks[size_t(r)].weights.end() ||
        first == m.ranks[size_t(r - c * stride)].weights.end())
      continue;
    for (size_t k = 0; k < mine->second.size() && k < first->second.size();
         ++k) {
      const WeightSlice &x = mine->second[k], &y = first->second[k];
      if (x.file != y.file || x.offset != y.offset || x.shape != y.shape)
        return "weight '" + x.name + "' is split over it";
    }
  }
  return "";
}

std::vector<int32_t> parseIdList(const std::string &s, bool &ok) {
  std::vector<int32_t> ids;
  ok = true;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int64_t v = 0;
    while (!item.empty() && item.front() == ' ')
      item.erase(item.begin());
    if (!parseI64(item.c_str(), 0, INT32_MAX, v)) {
      ok = false;
      return {};
    }
    ids.push_back(int32_t(v));
  }
  ok = !ids.empty();
  return ids;
}

bool writeResult(const std::string &path, const GenJob &job, bool withText,
                 std::string *error) {
  Json root;
  root["sequences"] = Json::array();
  for (const Sequence &s : job.final) {
    Json j;
    j["prompt_ids"] = s.prompt;
    j["ids"] = s.generated;
    if (withText)
      j["text"] = s.text;
    j["stop"] = s.stop;
    root["sequences"].push_back(j);
  }
  if (job.o->bench) {
    const Bench &b = job.bench;
    root["bench"] = {{"prefill_tokens", b.prefillTokens},
                     {"prefill_ms", b.prefillMs},
                     {"decode_steps", b.decodeSteps},
                     {"decode_tokens", b.decodeTokens},
                     {"decode_ms", b.decodeMs},
                     {"decode_entry_ms", b.decodeFnMs},
                     {"decode_collectives_ms", b.decodeCommMs}};
  }
  root["ctx"] = job.ctx;
  std::string text =
      root.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::string tmp = path + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) {
      *error = "--result " + path + ": cannot write";
      std::error_code ec;
      fs::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    *error = "--result " + path + ": " + ec.message();
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

void printBench(const GenJob &job, bool useMpi) {
  const Bench &b = job.bench;
  double steps = double(std::max<int64_t>(b.decodeSteps, 1));
  double perTok = b.decodeMs / steps, fn = b.decodeFnMs / steps,
         comm = b.decodeCommMs / steps;
  std::printf("loom-run bench: model %s, %lld rank(s) (mesh %s), %s, ctx "
              "%lld, %zu sequence(s), %s thread(s) per rank\n",
              job.m->model.c_str(), (long long)job.m->numRanks,
              job.m->meshString().c_str(), useMpi ? "mpi" : "threads",
              (long long)job.ctx, job.seqs.size(),
              threadsString(job.o->threads, useMpi, job.m->numRanks).c_str());
  std::printf("  prefill: %lld tokens in %.3f ms = %.1f tokens/s\n",
              (long long)b.prefillTokens, b.prefillMs,
              b.prefillMs > 0 ? double(b.prefillTokens) * 1e3 / b.prefillMs
                              : 0.0);
  std::printf("  decode:  %lld tokens in %lld steps, %.3f ms = %.1f "
              "tokens/s\n",
              (long long)b.decodeTokens, (long long)b.decodeSteps,
              b.decodeMs,
              b.decodeMs > 0 ? double(b.decodeTokens) * 1e3 / b.decodeMs
                             : 0.0);
  std::printf("  per step: %.3f ms = compute %.3f + collectives %.3f + "
              "sampling/agreement %.3f (rank 0)\n",
              perTok, fn - comm, comm, perTok - fn);
  std::fflush(stdout);
}

} // namespace

std::string threadsString(int threads, bool mpi, int64_t ranks) {
  if (threads > 0)
    return std::to_string(threads);
  if (mpi)
    return "default";
  return std::to_string(loom::rt::defaultRankThreads(int(ranks))) +
         " (default)";
}

int parseGenerateFlag(int argc, char **argv, int &i, GenerateOptions &o) {
  std::string arg = argv[i];
  auto value = [&]() -> const char * {
    if (i + 1 >= argc)
      return nullptr;
    return argv[++i];
  };
  auto bad = [&](const std::string &msg) {
    std::fprintf(stderr, "loom-run: %s\n", msg.c_str());
    return -1;
  };
  static const char *const withValue[] = {
      "--prompt", "--prompts-file", "--prompt-ids", "--system",
      "--max-tokens", "--stop", "--temp", "--top-k", "--top-p",
      "--min-p", "--repeat-penalty", "--repeat-last-n", "--seed",
      "--result"};
  bool known = arg == "--chat" || arg == "--interactive" ||
               arg == "--ignore-eog";
  for (const char *f : withValue)
    known = known || arg == f;
  if (!known)
    return 0;
  o.anyFlag = true;
  if (arg == "--chat") {
    o.chat = true;
    return 1;
  }
  if (arg == "--interactive") {
    o.interactive = true;
    return 1;
  }
  if (arg == "--ignore-eog") {
    o.ignoreEog = true;
    return 1;
  }
  const char *v = value();
  if (!v)
    return bad(arg + " needs a value");
  int64_t n = 0;
  if (arg == "--prompt")
    o.prompts.push_back(v);
  else if (arg == "--prompts-file")
    o.promptsFile = v;
  else if (arg == "--prompt-ids")
    o.promptIds.push_back(v);
  else if (arg == "--system") {
    o.system = v;
    o.systemGiven = true;
  } else if (arg == "--stop") {
    if (!*v)
      return bad("--stop wants a non-empty string");
    o.stops.push_back(v);
  } else if (arg == "--result")
    o.resultFile = v;
  else if (arg == "--max-tokens") {
    if (!parseI64(v, 1, INT32_MAX, n))
      return bad("--max-tokens must be at least 1 (got '" + std::string(v) +
                 "')");
    o.maxTokens = n;
  } else if (arg == "--top-k") {
    if (!parseI64(v, 0, INT32_MAX, n))
      return bad("--top-k must be >= 0 (0 = off), got '" + std::string(v) +
                 "'");
    o.sampling.topK = n;
  } else if (arg == "--repeat-last-n") {
    if (!parseI64(v, -1, INT32_MAX, n))
      return bad("--repeat-last-n must be >= -1 (-1 = all, 0 = off), got '" +
                 std::string(v) + "'");
    o.sampling.repeatLastN = n;
  } else if (arg == "--seed") {
    char *end = nullptr;
    errno = 0;
    unsigned long long s = std::strtoull(v, &end, 10);
    if (end == v || *end || errno || *v == '-')
      return bad("--seed must be a non-negative integer (got '" +
                 std::string(v) + "')");
    o.sampling.seed = s;
    o.seedGiven = true;
  } else {
    float f = 0;
    if (!parseFloat(v, f))
      return bad(arg + " wants a number (got '" + std::string(v) + "')");
    if (arg == "--temp")
      o.sampling.temperature = f;
    else if (arg == "--top-p")
      o.sampling.topP = f;
    else if (arg == "--min-p")
      o.sampling.minP = f;
    else
      o.sampling.repeatPenalty = f;
  }
  return 1;
}

int runGenerate(const GenerateOptions &opts) {
  GenerateOptions o = opts;
  std::string err = validateSamplingParams(o.sampling);
  if (!err.empty())
    return genFail(err);
  int sources = (!o.prompts.empty()) + (!o.promptsFile.empty()) +
                (!o.promptIds.empty());
  if (o.interactive && sources)
    return genFail("--interactive reads the prompts from stdin; drop "
                   "--prompt/--prompts-file/--prompt-ids");
  if (sources > 1)
    return genFail("give the prompts one way: --prompt, --prompts-file or "
                   "--prompt-ids");
  if (!o.promptsFile.empty()) {
    std::ifstream in(o.promptsFile, std::ios::binary);
    if (!in)
      return genFail("--prompts-file " + o.promptsFile + ": cannot read: " +
                     std::strerror(errno));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty())
        o.prompts.push_back(line);
    if (o.prompts.empty())
      return genFail("--prompts-file " + o.promptsFile + ": no prompt in it");
  }
  for (size_t k = 0; k < o.prompts.size(); ++k) {
    size_t at = invalidUtf8At(o.prompts[k]);
    if (at != std::string::npos)
      return genFail("prompt " + std::to_string(k) +
                     " is not valid UTF-8 (byte " + std::to_string(at) +
                     "); pass text in UTF-8 or token ids with --prompt-ids");
  }
  if (o.chat && !o.promptIds.empty())
    return genFail("--chat applies the chat template to text; it cannot be "
                   "used with --prompt-ids");

  // --- Manifest and the decode entry -------------------------------------------
  Manifest m;
  if (!loadManifest(o.bundle, m, &err))
    return genFail(err);
  const Entry *entry = m.findEntry("decode");
  if (!entry) {
    std::string names;
    for (const Entry &e : m.entries)
      names += (names.empty() ? "" : ", ") + e.name;
    return genFail(o.bundle + ": the bundle has no 'decode' entry (entries: " +
                   names + "); generation needs an LLM compiled by loomc "
                   "(e.g. loomc model.gguf -o out/); run other entries with "
                   "--entry/--input");
  }
  GenJob job;
  job.o = &o;
  job.m = &m;
  job.entry = entry;
  bool haveTokens = false, havePositions = false;
  for (size_t k = 0; k < entry->inputs.size(); ++k) {
    const TensorSpec &t = entry->inputs[k];
    std::string where = "entry 'decode' input '" + t.name + "'";
    if (!t.state.empty()) { // kv_cache, validated by the manifest reader
      StateArg s;
      s.index = k;
      s.shape = t.shape;
      job.states.push_back(s);
    } else if (t.name == "tokens") {
      if (t.shape.size() != 2 || t.dtype != DType::I64)
        return genFail(where + ": expected i64 [batch, seq], got " +
                       std::string(dtypeName(t.dtype)) + " " +
                       shapeString(t.shape));
      job.tokensArg = k;
      haveTokens = true;
    } else if (t.name == "positions") {
      if (t.shape.size() != 1 || t.dtype != DType::I64)
        return genFail(where + ": expected i64 [seq], got " +
                       std::string(dtypeName(t.dtype)) + " " +
                       shapeString(t.shape));
      job.positionsArg = k;
      havePositions = true;
    } else {
      return genFail(where + " is neither 'tokens', 'positions' nor a "
                     "kv_cache state; generation cannot feed it");
    }
  }
  if (!haveTokens || !havePositions)
    return genFail("entry 'decode' lacks a 'tokens' or 'positions' input");
  if (job.states.empty())
    return genFail("entry 'decode' has no kv_cache state inputs: this bundle "
                   "has the old past/present decode; recompile it with this "
                   "loomc (the runtime now owns the KV cache)");
  {
    size_t k = 0;
    while (k < entry->outputs.size() && entry->outputs[k].name != "logits")
      ++k;
    if (k == entry->outputs.size())
      k = 0;
    if (entry->outputs.empty() || entry->outputs[k].rank != 2 ||
        entry->outputs[k].dtype != DType::F32)
      return genFail("entry 'decode' has no f32 rank-2 'logits' output");
    job.logitsOut = k;
  }
  job.vocab = m.llm.llm ? m.llm.vocabSize : 0;
  int64_t modelCtx = m.llm.llm ? m.llm.contextLength : 0;

  // --- Ranks and sequences ------------------------------------------------------
  bool useMpi = false;
  int64_t mpiRank = 0;
  std::vector<int64_t> localRanks;
  if (!selectRanks(o.bundle, m, o.backend, o.backendGiven, o.ranks, useMpi,
                   mpiRank, localRanks, &err))
    return genFail(err);
  for (size_t a = 0; a < m.meshAxes.size(); ++a) {
    if (m.meshAxes[a] != "dp")
      continue;
    std::string why = cooperatingAxis(o.bundle, m, *entry, a);
    if (!why.empty()) {
      std::fprintf(stderr, "loom-run: note: mesh axis 'dp' holds one sequence "
                           "(%s)\n", why.c_str());
      continue;
    }
    job.dpMask |= uint64_t(1) << a;
    job.dpSize *= m.meshShape[a];
  }
  job.mpMask = ~job.dpMask & ((uint64_t(1) << m.meshAxes.size()) - 1);

  // --- Tokenizer and prompts ----------------------------------------------------
#ifdef LOOM_RUN_HAVE_TOKENIZER
  std::unique_ptr<loom::tok::Tokenizer> tokenizer;
#endif
  bool needTok = !o.prompts.empty() || o.interactive || o.chat ||
                 !o.stops.empty();
  if (!m.tokenizer.format.empty()) {
#ifdef LOOM_RUN_HAVE_TOKENIZER
    const std::string &file = m.tokenizer.file;
    auto r = m.tokenizer.format == "gguf"
                 ? loom::tok::Tokenizer::fromGguf(file)
                 : loom::tok::Tokenizer::fromHfJson(file);
    if (r) {
      tokenizer = r.take();
      job.tok = tokenizer.get();
    } else if (needTok) {
      return genFail("tokenizer: " + r.error().message);
    } else {
      // Token ids in and out work without it (no end-of-generation stop).
      std::fprintf(stderr, "loom-run: note: no tokenizer (%s); printing token "
                           "ids\n", r.error().message.c_str());
    }
#else
    if (needTok)
      return genFail("this loom-run was built without the tokenizer library; "
                     "pass token ids with --prompt-ids");
#endif
  } else if (needTok) {
    return genFail(o.bundle + ": the bundle has no tokenizer (manifest.json "
                   "has no \"tokenizer\"), so --prompt/--chat/--stop/"
                   "--interactive cannot be used; pass token ids with "
                   "--prompt-ids (and --input for single entry runs)");
  }
#ifdef LOOM_RUN_HAVE_TOKENIZER
  if (job.tok && (o.chat || o.interactive)) {
    auto f = loom::tok::detectChatFormat(job.tok->chatTemplate());
    if (f) {
      job.chatFormat = *f;
      job.chatFormatKnown = true;
    } else if (o.chat) {
      return genFail("--chat: " + f.error().message);
    }
  }
  if (o.systemGiven && !job.chatFormatKnown)
    return genFail("--system needs --chat or --interactive with a model "
                   "whose chat template is known");
  for (const std::string &p : o.prompts) {
    std::string text = p;
    if (o.chat) {
      std::vector<loom::tok::ChatMessage> msgs;
      if (o.systemGiven)
        msgs.push_back({"system", o.system});
      msgs.push_back({"user", p});
      text = loom::tok::applyChatTemplate(job.chatFormat, msgs, true,
                                          *job.tok);
    }
    auto r = job.tok->encode(text, true, true);
    if (!r)
      return genFail("prompt: " + r.error().message);
    std::vector<int32_t> ids = r.take();
    if (ids.size() >= 2 && ids[0] == job.tok->bos() &&
        ids[1] == job.tok->bos())
      ids.erase(ids.begin());
    Sequence s;
    s.prompt = std::move(ids);
    job.seqs.push_back(std::move(s));
  }
#else
  if (o.systemGiven)
    return genFail("--system needs the tokenizer library");
#endif
  for (const std::string &p : o.promptIds) {
    bool ok = false;
    Sequence s;
    s.prompt = parseIdList(p, ok);
    if (!ok)
      return genFail("--prompt-ids '" + p + "': expected token ids like "
                     "1,2,3");
    job.seqs.push_back(std::move(s));
  }
  if (o.interactive) {
    if (job.dpSize > 1)
      return genFail("--interactive runs one conversation; this bundle has "
                     "dp=" + std::to_string(job.dpSize));
    job.seqs.assign(1, Sequence());
  }
  for (size_t g = 0; g < job.seqs.size() && !o.interactive; ++g) {
    if (job.seqs[g].prompt.empty())
      return genFail("prompt " + std::to_string(g) + " has no tokens");
    if (job.vocab)
      for (int32_t t : job.seqs[g].prompt)
        if (t >= job.vocab)
          return genFail("prompt " + std::to_string(g) + ": token id " +
                         std::to_string(t) + " is outside the vocabulary of " +
                         std::to_string(job.vocab));
  }
  // One sequence per batch row of a dp group's ranks.
  int64_t nseq = int64_t(job.seqs.size());
  const TensorSpec &tokSpec = entry->inputs[job.tokensArg];
  if (tokSpec.shape[0] > 0)
    job.batchLocal = tokSpec.shape[0];
  else
    job.batchLocal = std::max<int64_t>(nseq / job.dpSize, 1);
  if (job.batchLocal * job.dpSize != nseq)
    return genFail(
        std::to_string(nseq) + " prompt(s) given, but the bundle (mesh " +
        m.meshString() + ", batch " +
        (tokSpec.shape[0] > 0 ? std::to_string(tokSpec.shape[0])
                              : std::string("?")) +
        " per rank) runs " +
        (tokSpec.shape[0] > 0
             ? std::to_string(job.batchLocal * job.dpSize)
             : "a multiple of " + std::to_string(job.dpSize)) +
        " sequence(s): give one prompt per sequence (repeat --prompt)");
  for (int64_t d = 0; d < job.dpSize && !o.interactive; ++d)
    for (int64_t b = 1; b < job.batchLocal; ++b)
      if (job.seqs[size_t(d * job.batchLocal + b)].prompt.size() !=
          job.seqs[size_t(d * job.batchLocal)].prompt.size())
        return genFail("the prompts of one batch must have the same number "
                       "of tokens: one 'positions' input serves the batch "
                       "(sequences " + std::to_string(d * job.batchLocal) +
                       " and " + std::to_string(d * job.batchLocal + b) +
                       " have " +
                       std::to_string(
                           job.seqs[size_t(d * job.batchLocal)].prompt.size()) +
                       " and " +
                       std::to_string(job.seqs[size_t(d * job.batchLocal + b)]
                                          .prompt.size()) +
                       " tokens)");

  // --- Context length and memory --------------------------------------------
  if (o.ctx && modelCtx && o.ctx > modelCtx)
    return genFail("--ctx " + std::to_string(o.ctx) + " is beyond the model's "
                   "context length " + std::to_string(modelCtx) +
                   "; pass --ctx " + std::to_string(modelCtx) + " or less");
  if (!o.ctx && !modelCtx)
    return genFail("the manifest does not give the model's context_length; "
                   "pass --ctx N");
  // Cache bytes per position, per rank.
  double perPosition = double(stateBytesPerPosition(*entry));
  double weightBytes = 0;
  std::set<std::tuple<std::string, int64_t, int64_t>> unique;
  for (int64_t r : localRanks) {
    auto it = m.ranks[size_t(r)].weights.find(entry->name);
    if (it != m.ranks[size_t(r)].weights.end())
      for (const WeightSlice &w : it->second)
        if (unique.insert({w.file, w.offset, w.nbytes}).second)
          weightBytes += double(w.nbytes);
  }
  double avail = double(availableMemory());
  double nLocal = double(localRanks.size());
  int64_t ctx = o.ctx ? o.ctx : modelCtx;
  if (avail > 0) {
    double need = weightBytes + nLocal * perPosition * double(ctx);
    if (need > avail) {
      int64_t fit = perPosition > 0
                        ? int64_t((avail * 0.9 - weightBytes) /
                                  (nLocal * perPosition))
                        : 0;
      if (!o.ctx && fit >= 1) {
        std::fprintf(stderr, "loom-run: the model's context %lld does not "
                             "fit in memory; using --ctx %lld\n",
                     (long long)ctx, (long long)fit);
        ctx = fit;
      } else {
        char buf[512];
        std::snprintf(buf, sizeof(buf),
                      "--ctx %lld needs %s per rank (weights %s + KV cache "
                      "%s) x %zu local rank(s), but only %s is available; "
                      "pass a smaller --ctx%s",
                      (long long)ctx,
                      humanBytes(weightBytes / nLocal +
                                 perPosition * double(ctx)).c_str(),
                      humanBytes(weightBytes / nLocal).c_str(),
                      humanBytes(perPosition * double(ctx)).c_str(),
                      localRanks.size(), humanBytes(avail).c_str(),
                      fit >= 1 ? (" (at most " + std::to_string(fit) +
                                  " fits)").c_str()
                               : "");
        return genFail(buf);
      }
    }
  }
  job.ctx = ctx;
  for (StateArg &s : job.states) {
    s.shape[size_t(entry->inputs[s.index].ctxDim)] = ctx;
    int64_t n = dtypeSize(entry->inputs[s.index].dtype);
    for (int64_t d : s.shape)
      n *= d;
    s.bytes = n;
  }
  for (size_t g = 0; g < job.seqs.size() && !o.interactive; ++g)
    if (int64_t(job.seqs[g].prompt.size()) >= ctx)
      return genFail("prompt " + std::to_string(g) + " has " +
                     std::to_string(job.seqs[g].prompt.size()) +
                     " tokens, which does not leave room to generate in "
                     "--ctx " + std::to_string(ctx) +
                     "; pass a larger --ctx or a shorter prompt");

  if (o.sampling.temperature > 0 && !o.seedGiven) {
    o.sampling.seed = std::random_device()();
    std::fprintf(stderr, "loom-run: sampling seed %llu (pass --seed to "
                         "repeat this run)\n",
                 (unsigned long long)o.sampling.seed);
  }
  if (!o.resultFile.empty()) {
    // Fail now, not after the run, if the file cannot be written.
    fs::path dir = fs::path(o.resultFile).parent_path();
    std::error_code ec;
    if (!dir.empty() && !fs::is_directory(dir, ec))
      return genFail("--result " + o.resultFile + ": no directory " +
                     dir.string());
  }
  bool printer = !useMpi || mpiRank == 0;
  job.stream = job.seqs.size() == 1;
#ifdef LOOM_RUN_HAVE_TOKENIZER
  job.printIds = !job.tok;
#else
  job.printIds = true;
#endif

  // --- Library and weights ----------------------------------------------------
  std::map<std::string, EntryFn> fns;
  if (!loadLibrary(o.bundle, m, fns, &err))
    return genFail(err);
  job.fn = fns.at("decode");
  MappedWeights mapped;
  if (!mapWeights(o.bundle, m, *entry, localRanks, o.progress, mapped, &err))
    return genFail(err);
  job.weights = std::move(mapped.perRank);

  // --- Run ----------------------------------------------------------------------
  loom::rt::LaunchOptions launch;
  launch.timeoutSeconds = o.timeout;
  launch.tracePath = o.trace;
  launch.onFailure = loom::rt::OnFailure::Return;
  launch.threadsPerRank = o.threads;
  auto body = [&job](loom_rt_ctx *ctx) {
    RankGen g(job, ctx);
    return g.run();
  };
  std::vector<int64_t> mesh = m.meshShape;
  if (mesh.empty())
    mesh.push_back(1);
  int rc = useMpi ? loom::rt::runMpi(mesh, body, launch)
                  : loom::rt::runThreads(int(m.numRanks), mesh, body, launch);
  if (rc != 0)
    return genFail("generation failed (" +
                   std::string(useMpi ? "mpi" : "threads") + " backend, " +
                   std::to_string(m.numRanks) + " ranks)");
  if (!printer)
    return 0;
  bool withText = false;
#ifdef LOOM_RUN_HAVE_TOKENIZER
  withText = job.tok != nullptr;
#endif
  if (!job.stream) {
    for (size_t g = 0; g < job.final.size(); ++g) {
      const Sequence &s = job.final[g];
      std::printf("=== sequence %zu (%s) ===\n", g, s.stop.c_str());
      if (withText) {
        TextStream ts;
        std::string t = ts.push(s.text) + ts.flush();
        std::fwrite(t.data(), 1, t.size(), stdout);
      } else {
        for (size_t k = 0; k < s.generated.size(); ++k)
          std::printf("%s%d", k ? " " : "", s.generated[k]);
      }
      std::fputc('\n', stdout);
    }
    std::fflush(stdout);
  } else if (!job.final.empty() && job.final[0].stop == "context") {
    std::fprintf(stderr, "loom-run: stopped at the end of the context "
                         "(--ctx %lld)\n", (long long)job.ctx);
  }
  if (o.bench)
    printBench(job, useMpi);
  if (!o.resultFile.empty() && !writeResult(o.resultFile, job, withText, &err))
    return genFail(err);
  return 0;
}

} // namespace loom::run
