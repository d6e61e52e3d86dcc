//===- ImportFailure.cpp - importer errors as located diagnostics ---------===//

#include "lib/Import/ImportFailure.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace loom {

Location importLoc(MLIRContext *ctx, StringRef file, StringRef place) {
  Location fileLoc = NameLoc::get(StringAttr::get(ctx, file));
  if (place.empty())
    return fileLoc;
  return NameLoc::get(StringAttr::get(ctx, place), fileLoc);
}

void ImportFailure::set(MLIRContext *ctx, StringRef file, StringRef place,
                        const Twine &msg) {
  if (*this)
    return;
  message = msg.str();
  text = (file + ": " + (place.empty() ? "" : place + ": ") + message).str();
  loc = importLoc(ctx, file, place);
}

void ImportFailure::emit() const {
  Location at = loc ? Location(loc) : UnknownLoc::get(loc.getContext());
  emitError(at) << message;
}

namespace {

/// The length of a quoted name `<prefix>'...'` at the start of `s`
/// (followed by an optional " at byte N"), or 0.
size_t quotedPlace(StringRef s) {
  for (StringRef prefix : {"tensor '", "metadata key '", "key '", "shard '",
                           "weight '", "node '"}) {
    if (!s.starts_with(prefix))
      continue;
    size_t close = s.find('\'', prefix.size());
    if (close == StringRef::npos)
      return 0;
    size_t n = close + 1;
    StringRef tail = s.drop_front(n);
    if (tail.starts_with(" at byte ")) {
      size_t d = n + 9;
      while (d < s.size() && isdigit(static_cast<unsigned char>(s[d])))
        ++d;
      if (d > n + 9)
        n = d;
    }
    return n;
  }
  if (s.starts_with("byte ")) {
    size_t d = 5;
    while (d < s.size() && isdigit(static_cast<unsigned char>(s[d])))
      ++d;
    return d > 5 ? d : 0;
  }
  return 0;
}

} // namespace

ImportFailure failureFromText(MLIRContext *ctx, StringRef text) {
  ImportFailure f;
  f.text = text.str();
  StringRef rest = text;
  // "weights not found: <file>; <the fix>": located at the missing file.
  if (rest.consume_front("weights not found: ")) {
    f.loc =
        importLoc(ctx, rest.take_until([](char c) { return c == ';'; }), "");
    f.message = text.str();
    return f;
  }
  (void)(rest.consume_front("GGUF import: ") ||
         rest.consume_front("Hugging Face import: "));
  size_t colon = rest.find(": ");
  if (colon == StringRef::npos || colon == 0) {
    f.loc = UnknownLoc::get(ctx);
    f.message = text.str();
    return f;
  }
  StringRef file = rest.take_front(colon);
  rest = rest.drop_front(colon + 2);
  StringRef place;
  size_t n = quotedPlace(rest);
  if (n && rest.drop_front(n).starts_with(": ")) {
    place = rest.take_front(n);
    rest = rest.drop_front(n + 2);
  } else {
    // No place segment: the first tensor or key the message names.
    for (StringRef what : {"tensor '", "key '"}) {
      size_t at = rest.find(what);
      if (at == StringRef::npos)
        continue;
      size_t close = rest.find('\'', at + what.size());
      if (close != StringRef::npos) {
        place = rest.slice(at, close + 1);
        if (place.starts_with("key '") && at >= 9 &&
            rest.slice(at - 9, at) == "metadata ")
          place = rest.slice(at - 9, close + 1);
        break;
      }
    }
  }
  f.loc = importLoc(ctx, file, place);
  f.message = rest.str();
  return f;
}

} // namespace loom
