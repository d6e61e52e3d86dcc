//===- MlirInputGuard.h - refuse .mlir text the upstream parser crashes on ===//
//
// MLIR 22's parser dies of SIGSEGV (a signal, not a diagnostic) on a
// DenseArrayAttr of index elements, `array<index: 1>`: parseDenseArrayAttr
// asks the element type for getIntOrFloatBitWidth(), which index does not
// have, and a release build reads through a bad cast. The bug is upstream
// (docs/FORMATS.md, "Known upstream bugs"); until it is fixed loomc and
// loom-opt scan their .mlir input for the construct first and refuse it with
// a message naming the place. The scan is a small lexer, not a line grep:
// it skips comments and string literals, lets whitespace and line breaks sit
// between `array`, `<` and the element type, and follows type aliases
// (`!t = index` ... `array<!t: 1>` crashes the same way). Header-only so
// that loom-opt, which does not link the importers, can use it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_IMPORT_MLIRINPUTGUARD_H
#define LOOM_LIB_IMPORT_MLIRINPUTGUARD_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cctype>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loom {

namespace detail {

/// The tokens of MLIR text that matter to the guard: identifiers (with the
/// sigils `!`, `#`, `%`, `@`, `^` kept in front), punctuation, and nothing
/// for comments, whitespace and string literals.
struct GuardToken {
  llvm::StringRef text;
  size_t offset;
};

inline bool isIdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '.';
}

inline std::vector<GuardToken> guardTokens(llvm::StringRef text) {
  std::vector<GuardToken> tokens;
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n')
        ++i;
    } else if (c == '"') {
      // A string ends at the next unescaped quote (or, unterminated, at the
      // end of the line, as the MLIR lexer reports it).
      for (++i; i < n && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      ++i;
    } else if (isIdChar(c) || c == '!' || c == '#' || c == '%' || c == '@' ||
               c == '^') {
      size_t start = i++;
      while (i < n && isIdChar(text[i]))
        ++i;
      tokens.push_back({text.slice(start, i), start});
    } else {
      tokens.push_back({text.substr(i, 1), i});
      ++i;
    }
  }
  return tokens;
}

} // namespace detail

/// The message for the first construct of `text` the MLIR parser would
/// crash on, or nullopt. `file` names the input in the message.
inline std::optional<std::string> findParserCrashers(llvm::StringRef text,
                                                     llvm::StringRef file) {
  std::vector<detail::GuardToken> tokens = detail::guardTokens(text);
  // Type aliases, `!name = <first token of the type>`.
  llvm::StringMap<llvm::StringRef> aliases;
  for (size_t i = 0; i + 2 < tokens.size(); ++i)
    if (tokens[i].text.starts_with("!") && tokens[i].text.size() > 1 &&
        tokens[i + 1].text == "=" && (i == 0 || tokens[i - 1].text != "<"))
      aliases.try_emplace(tokens[i].text, tokens[i + 2].text);
  auto isIndex = [&](llvm::StringRef type) {
    // Follow aliases of aliases; a cycle is the parser's error, not a crash.
    for (int depth = 0; depth < 64; ++depth) {
      if (type == "index")
        return true;
      auto it = aliases.find(type);
      if (it == aliases.end())
        return false;
      type = it->second;
    }
    return false;
  };
  for (size_t i = 0; i + 2 < tokens.size(); ++i) {
    if (tokens[i].text != "array" || tokens[i + 1].text != "<" ||
        !isIndex(tokens[i + 2].text))
      continue;
    llvm::StringRef before = text.take_front(tokens[i].offset);
    size_t line = before.count('\n') + 1;
    size_t lineStart = before.rfind('\n');
    size_t column = lineStart == llvm::StringRef::npos
                        ? tokens[i].offset + 1
                        : tokens[i].offset - lineStart;
    return (file + ":" + llvm::Twine(line) + ":" + llvm::Twine(column) +
            ": array<index: ...> (a dense array of index elements) is not "
            "supported: MLIR 22's parser crashes on it (an upstream bug, "
            "docs/FORMATS.md); use array<i64: ...>")
        .str();
  }
  return std::nullopt;
}

} // namespace loom

#endif // LOOM_LIB_IMPORT_MLIRINPUTGUARD_H
