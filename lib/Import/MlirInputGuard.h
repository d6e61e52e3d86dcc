//===- MlirInputGuard.h - refuse .mlir text the upstream parser crashes on ===//
//
// MLIR 22's parser aborts (a signal, not a diagnostic) on a DenseArrayAttr
// of index elements, `array<index: 1>`: the element type is not one the
// attribute supports and the parser reaches an unreachable. The bug is
// upstream (docs/FORMATS.md, "Known upstream bugs"); until it is fixed
// loomc and loom-opt scan their .mlir input for the spelling first and
// refuse it with a message naming the line. Header-only so that loom-opt,
// which does not link the importers, can use it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_IMPORT_MLIRINPUTGUARD_H
#define LOOM_LIB_IMPORT_MLIRINPUTGUARD_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace loom {

/// The message for the first construct of `text` the MLIR parser would
/// crash on, or nullopt. `file` names the input in the message.
inline std::optional<std::string> findParserCrashers(llvm::StringRef text,
                                                     llvm::StringRef file) {
  size_t line = 1;
  while (!text.empty()) {
    auto [cur, rest] = text.split('\n');
    llvm::StringRef code = cur;
    // A comment cannot crash the parser.
    if (size_t c = code.find("//"); c != llvm::StringRef::npos)
      code = code.take_front(c);
    for (size_t at = code.find("array"); at != llvm::StringRef::npos;
         at = code.find("array", at + 5)) {
      llvm::StringRef tail = code.drop_front(at + 5).ltrim();
      if (!tail.consume_front("<"))
        continue;
      tail = tail.ltrim();
      if (!tail.consume_front("index"))
        continue;
      if (!tail.empty() && (std::isalnum(static_cast<unsigned char>(tail[0])) ||
                            tail[0] == '_'))
        continue;
      return (file + ":" + llvm::Twine(line) + ":" + llvm::Twine(at + 1) +
              ": array<index: ...> (a dense array of index elements) is not "
              "supported: MLIR 22's parser aborts on it (an upstream bug); "
              "use array<i64: ...>")
          .str();
    }
    text = rest;
    ++line;
  }
  return std::nullopt;
}

} // namespace loom

#endif // LOOM_LIB_IMPORT_MLIRINPUTGUARD_H
