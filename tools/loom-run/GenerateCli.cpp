//===- GenerateCli.cpp - loom-run's generation flags ----------------------===//
//
// Flags in, text out: the prompts reach Executor::generate as a request, the
// text comes back through its callbacks (streamed when there is one
// sequence), and the sequences, the --bench figures and --result are
// written from its result on the process of rank 0.
//
//===----------------------------------------------------------------------===//

#include "GenerateCli.h"

#include "loom/runtime/Runtime.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

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

/// --result: the prompts, ids, text and stop reason of every sequence (and
/// the --bench figures), written to a temporary name and renamed.
bool writeResult(const std::string &path, const GenerateResult &res, bool bench,
                 std::string *error) {
  Json root;
  root["sequences"] = Json::array();
  for (const GeneratedSequence &s : res.sequences) {
    Json j;
    j["prompt_ids"] = s.prompt;
    j["ids"] = s.ids;
    if (res.withText)
      j["text"] = s.text;
    j["stop"] = s.stop;
    root["sequences"].push_back(j);
  }
  if (bench) {
    const GenerateBench &b = res.bench;
    root["bench"] = {{"prefill_tokens", b.prefillTokens},
                     {"prefill_ms", b.prefillMs},
                     {"decode_steps", b.decodeSteps},
                     {"decode_tokens", b.decodeTokens},
                     {"decode_ms", b.decodeMs},
                     {"decode_entry_ms", b.decodeFnMs},
                     {"decode_collectives_ms", b.decodeCommMs}};
  }
  root["ctx"] = res.ctx;
  std::string text =
      root.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::string tmp = path + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close(); // a full disk shows at the flush
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

/// "N" for --threads N, else "D (default)" with the default for the ranks
/// of this host (thread ranks share the process; under MPI the runtime
/// counts the host's ranks).
std::string threadsString(int threads, bool mpi, int64_t ranks) {
  if (threads > 0)
    return std::to_string(threads);
  if (mpi)
    return "default";
  return std::to_string(loom::rt::defaultRankThreads(int(ranks))) +
         " (default)";
}

void printBench(const Executor &ex, const GenerateResult &res) {
  const GenerateBench &b = res.bench;
  const Manifest &m = ex.manifest();
  double steps = double(std::max<int64_t>(b.decodeSteps, 1));
  double perTok = b.decodeMs / steps, fn = b.decodeFnMs / steps,
         comm = b.decodeCommMs / steps;
  std::printf(
      "loom-run bench: model %s, %lld rank(s) (mesh %s), %s, ctx "
      "%lld, %zu sequence(s), %s thread(s) per rank\n",
      m.model.c_str(), (long long)m.numRanks, m.meshString().c_str(),
      backendName(ex.usesMpi()), (long long)res.ctx, res.sequences.size(),
      threadsString(ex.options().threadsPerRank, ex.usesMpi(), m.numRanks)
          .c_str());
  std::printf("  GEMM: %s\n", loom::rt::gemmBackend().c_str());
  std::printf("  prefill: %lld tokens in %.3f ms = %.1f tokens/s\n",
              (long long)b.prefillTokens, b.prefillMs,
              b.prefillMs > 0 ? double(b.prefillTokens) * 1e3 / b.prefillMs
                              : 0.0);
  std::printf("  decode:  %lld tokens in %lld steps, %.3f ms = %.1f "
              "tokens/s\n",
              (long long)b.decodeTokens, (long long)b.decodeSteps, b.decodeMs,
              b.decodeMs > 0 ? double(b.decodeTokens) * 1e3 / b.decodeMs : 0.0);
  std::printf("  per step: %.3f ms = compute %.3f + collectives %.3f + "
              "sampling/agreement %.3f (rank 0)\n",
              perTok, fn - comm, comm, perTok - fn);
  std::fflush(stdout);
}

/// The prompts of --prompts-file and --prompt-ids into the request.
int readPrompts(const GenerateFlags &f, GenerateOptions &o) {
  int sources =
      (!o.prompts.empty()) + (!f.promptsFile.empty()) + (!f.promptIds.empty());
  if (std::string why = promptSourcesError(sources, o.interactive);
      !why.empty())
    return genFail(why);
  if (!f.promptsFile.empty()) {
    std::ifstream in(f.promptsFile, std::ios::binary);
    if (!in)
      return genFail("--prompts-file " + f.promptsFile +
                     ": cannot read: " + std::strerror(errno));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty())
        o.prompts.push_back(line);
    if (o.prompts.empty())
      return genFail("--prompts-file " + f.promptsFile + ": no prompt in it");
  }
  for (const std::string &p : f.promptIds) {
    bool ok = false;
    o.promptIds.push_back(parseIdList(p, ok));
    if (!ok)
      return genFail("--prompt-ids '" + p +
                     "': expected token ids like "
                     "1,2,3");
  }
  if (!f.resultFile.empty()) {
    // Fail now, not after the run, if the file cannot be written.
    fs::path dir = fs::path(f.resultFile).parent_path();
    std::error_code ec;
    if (!dir.empty() && !fs::is_directory(dir, ec))
      return genFail("--result " + f.resultFile + ": no directory " +
                     dir.string());
  }
  return -1;
}

/// The sequences of a batch, each under a header (one sequence streams).
void printSequences(const GenerateResult &res) {
  for (size_t g = 0; g < res.sequences.size(); ++g) {
    const GeneratedSequence &s = res.sequences[g];
    std::printf("=== sequence %zu (%s) ===\n", g, s.stop.c_str());
    if (res.withText) {
      std::string t = printableText(s.text);
      std::fwrite(t.data(), 1, t.size(), stdout);
    } else {
      for (size_t k = 0; k < s.ids.size(); ++k)
        std::printf("%s%d", k ? " " : "", s.ids[k]);
    }
    std::fputc('\n', stdout);
  }
  std::fflush(stdout);
}

} // namespace

int parseGenerateFlag(int argc, char **argv, int &i, GenerateFlags &f) {
  GenerateOptions &o = f.request;
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
      "--prompt",     "--prompts-file", "--prompt-ids",     "--system",
      "--max-tokens", "--stop",         "--temp",           "--top-k",
      "--top-p",      "--min-p",        "--repeat-penalty", "--repeat-last-n",
      "--seed",       "--result"};
  bool known =
      arg == "--chat" || arg == "--interactive" || arg == "--ignore-eog";
  for (const char *f : withValue)
    known = known || arg == f;
  if (!known)
    return 0;
  f.anyFlag = true;
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
    f.promptsFile = v;
  else if (arg == "--prompt-ids")
    f.promptIds.push_back(v);
  else if (arg == "--system") {
    o.system = v;
    o.systemGiven = true;
  } else if (arg == "--stop") {
    if (!*v)
      return bad("--stop wants a non-empty string");
    o.stops.push_back(v);
  } else if (arg == "--result")
    f.resultFile = v;
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

int runGenerate(const std::string &bundle, const GenerateFlags &flags,
                const OpenOptions &open, bool bench) {
  GenerateOptions o = flags.request;
  if (int rc = readPrompts(flags, o); rc >= 0)
    return rc;
  auto ex = Executor::open(bundle, open);
  if (!ex)
    return genFail(ex.error().message);
  bool stream =
      (o.interactive ? 1 : o.prompts.size() + o.promptIds.size()) == 1;
  GenerateCallbacks cb;
  cb.onText = [stream](size_t g, std::string_view piece, bool) {
    if (!stream || piece.empty())
      return;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  cb.onNote = [](const std::string &note) {
    std::fprintf(stderr, "loom-run: %s\n", note.c_str());
  };
  cb.readTurn = [](std::string &line) {
    std::fputs("\n> ", stdout);
    std::fflush(stdout);
    return bool(std::getline(std::cin, line));
  };
  GenerateResult res;
  if (Status st = (*ex)->generate(o, cb, res); !st)
    return genFail(
        !res.jobFailed
            ? st.error().message
            : "generation failed (" +
                  std::string(backendName((*ex)->usesMpi())) + " backend, " +
                  std::to_string((*ex)->manifest().numRanks) + " ranks)");
  if ((*ex)->usesMpi() && (*ex)->localRanks().front() != 0)
    return 0;
  if (!stream)
    printSequences(res);
  else if (!o.interactive)
    std::fputc('\n', stdout), std::fflush(stdout);
  if (stream && !res.sequences.empty() && res.sequences[0].stop == "context")
    std::fprintf(stderr,
                 "loom-run: stopped at the end of the context "
                 "(--ctx %lld)\n",
                 (long long)res.ctx);
  if (bench)
    printBench(**ex, res);
  std::string err;
  if (!flags.resultFile.empty() &&
      !writeResult(flags.resultFile, res, bench, &err))
    return genFail(err);
  return 0;
}

} // namespace loom::run
