//===- loom/runtime/Generate.h - text generation on a bundle ----*- C++ -*-===//
//
// Executor::generate: tokenizes the prompt(s) with the model's tokenizer
// (the manifest names it), allocates the KV cache (the `decode` entry's
// `kv_cache` state arguments, docs/BUNDLE.md) once per rank for `ctx`
// positions, prefills through `decode` with the whole prompt, then calls
// `decode` once per token, sampling on each sequence's first model-parallel
// rank and agreeing on the token through the runtime's collectives. Text
// pieces and tokens reach the caller through callbacks as they are made.
// loom-run's --prompt/--chat/--interactive are flags around it
// (docs/LOOM-RUN.md); docs/RUNTIME.md says who owns the cache and how ranks
// agree on tokens.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_GENERATE_H
#define LOOM_RUNTIME_GENERATE_H

#include "loom/runtime/Sampler.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::run {

/// What to generate. Messages that name a setting use loom-run's flag for
/// it (--ctx, --seed, ...).
struct GenerateOptions {
  std::vector<std::string> prompts;            ///< text, one sequence each
  std::vector<std::vector<int32_t>> promptIds; ///< token ids, one each
  bool chat = false; ///< wrap each text prompt in the chat template
  std::string system;
  bool systemGiven = false;
  /// A conversation: user turns come from GenerateCallbacks::readTurn and
  /// the cache is kept between turns.
  bool interactive = false;
  int64_t maxTokens = 256;
  int64_t ctx = 0; ///< 0: the model's context length (capped by memory)
  SamplingParams sampling;
  bool seedGiven = false; ///< false with temperature > 0: a random seed
  std::vector<std::string> stops;
  bool ignoreEog = false; ///< always maxTokens (benchmarks)
};

/// Called on the process that runs global rank 0 (from its thread).
struct GenerateCallbacks {
  /// The text of sequence `seq` as it is generated (UTF-8 pieces, held
  /// back while they may still become a stop string; the last piece has
  /// `final` set).
  std::function<void(size_t seq, std::string_view piece, bool final)> onText;
  /// Every generated token of sequence `seq` (`index`: 0, 1, ...); an
  /// end-of-generation token is not reported.
  std::function<void(size_t seq, int32_t token, size_t index)> onToken;
  /// Interactive: the next user turn into `line`; false at the end.
  std::function<bool(std::string &line)> readTurn;
  /// Notes worth showing (the chosen seed, a context cut to fit memory).
  std::function<void(const std::string &note)> onNote;
};

struct GeneratedSequence {
  std::vector<int32_t> prompt;
  std::vector<int32_t> ids;
  std::string text; ///< stop string cut off (empty without a tokenizer)
  std::string stop; ///< eog | max-tokens | stop-string | context
};

/// Timings of rank 0 (docs/LOOM-RUN.md, "--bench with generation").
struct GenerateBench {
  int64_t prefillTokens = 0;
  double prefillMs = 0;
  int64_t decodeSteps = 0, decodeTokens = 0;
  double decodeMs = 0, decodeCommMs = 0, decodeFnMs = 0;
};

struct GenerateResult {
  std::vector<GeneratedSequence> sequences; ///< on the rank-0 process
  GenerateBench bench;
  int64_t ctx = 0;
  bool withText = false; ///< the bundle's tokenizer was loaded
  bool jobFailed = false;
  std::vector<std::string> messages; ///< when the job failed
};

/// `bytes` as UTF-8 text to print (what the streamed pieces add up to).
std::string printableText(const std::string &bytes);

/// Why `sources` ways of giving prompts (text, a file, ids) do not go
/// together (with `interactive`: none may be given); empty when they do.
std::string promptSourcesError(int sources, bool interactive);

/// Offset of the first byte of `s` that is not valid UTF-8, or npos.
size_t invalidUtf8At(std::string_view s);

} // namespace loom::run

#endif // LOOM_RUNTIME_GENERATE_H
