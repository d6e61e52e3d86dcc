//===- Generate.h - text generation in loom-run -----------------*- C++ -*-===//
//
// `loom-run out/ --prompt "..."`: tokenizes the prompt(s), allocates the KV
// cache (the `decode` entry's `kv_cache` state arguments, docs/BUNDLE.md) once
// per rank for --ctx positions, prefills through `decode` with the whole
// prompt, then calls `decode` once per token, sampling on each sequence's
// first model-parallel rank and agreeing on the token through the runtime's
// collectives. See docs/LOOM-RUN.md (flags, output, --bench) and
// docs/RUNTIME.md (who owns the cache, how ranks agree on tokens).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUN_GENERATE_H
#define LOOM_RUN_GENERATE_H

#include "Sampler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::run {

/// "N" for --threads N, else "D (default)" with the default for the ranks
/// of this host (thread ranks share the process; under MPI the runtime
/// counts the host's ranks).
std::string threadsString(int threads, bool mpi, int64_t ranks);

struct GenerateOptions {
  // Shared with the one-entry run (filled by loom-run.cpp).
  std::string bundle;
  int ranks = 0;
  std::string backend = "threads";
  bool backendGiven = false;
  double timeout = 0;
  std::string trace;
  bool progress = false;
  bool bench = false;
  int threads = 0; ///< --threads per rank; 0: the runtime's default

  // Generation flags (parseGenerateFlag).
  std::vector<std::string> prompts;   ///< --prompt, repeatable
  std::string promptsFile;            ///< --prompts-file: one per line
  std::vector<std::string> promptIds; ///< --prompt-ids, repeatable
  bool chat = false;
  std::string system;
  bool systemGiven = false;
  bool interactive = false;
  int64_t maxTokens = 256;
  int64_t ctx = 0; ///< 0: the model's context length (capped by memory)
  SamplingParams sampling;
  bool seedGiven = false;
  std::vector<std::string> stops;
  bool ignoreEog = false; ///< --ignore-eog (benchmarks: always max-tokens)
  std::string resultFile; ///< --result FILE.json
  bool anyFlag = false;   ///< any generation flag was given

  /// True when any flag asked for generation.
  bool requested() const {
    return !prompts.empty() || !promptsFile.empty() || !promptIds.empty() ||
           interactive;
  }
};

/// The generation flags' help text (for loom-run --help).
extern const char *const kGenerateUsage;

/// If argv[i] is a generation flag, consumes it (and its value: i advances)
/// and returns 1; 0 when it is not one; -1 after printing a one-line error
/// to stderr (bad value).
int parseGenerateFlag(int argc, char **argv, int &i, GenerateOptions &o);

/// Runs the generation; returns the process exit status.
int runGenerate(const GenerateOptions &o);

} // namespace loom::run

#endif // LOOM_RUN_GENERATE_H
