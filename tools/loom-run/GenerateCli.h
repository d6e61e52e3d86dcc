//===- GenerateCli.h - loom-run's generation flags --------------*- C++ -*-===//
//
// `loom-run out/ --prompt "..."`: the flags, the prompts file, printing and
// --result around Executor::generate (include/loom/runtime/Generate.h). See
// docs/LOOM-RUN.md.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUN_GENERATECLI_H
#define LOOM_RUN_GENERATECLI_H

#include "loom/runtime/Executor.h"
#include "loom/runtime/Generate.h"

#include <string>
#include <vector>

namespace loom::run {

struct GenerateFlags {
  GenerateOptions request;
  std::string promptsFile;            ///< --prompts-file: one per line
  std::vector<std::string> promptIds; ///< --prompt-ids, as written
  std::string resultFile;             ///< --result FILE.json
  bool anyFlag = false;               ///< any generation flag was given

  /// True when any flag asked for generation.
  bool requested() const {
    return !request.prompts.empty() || !promptsFile.empty() ||
           !promptIds.empty() || request.interactive;
  }
};

/// The generation flags' help text (for loom-run --help).
extern const char *const kGenerateUsage;

/// If argv[i] is a generation flag, consumes it (and its value: i advances)
/// and returns 1; 0 when it is not one; -1 after printing a one-line error
/// to stderr (bad value).
int parseGenerateFlag(int argc, char **argv, int &i, GenerateFlags &f);

/// Runs the generation; returns the process exit status.
int runGenerate(const std::string &bundle, const GenerateFlags &flags,
                const OpenOptions &open, bool bench);

} // namespace loom::run

#endif // LOOM_RUN_GENERATECLI_H
