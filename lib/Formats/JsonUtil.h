//===- JsonUtil.h - Exception-free JSON parsing for the readers -*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Formats. nlohmann::json is used without exceptions
// (JSON_NOEXCEPTION: any throw would abort), so the readers only call members
// that cannot throw: they check is_*() before get<>(), use find() rather than
// at() or operator[] on a const object, and parse through a SAX wrapper that
// reports the byte position of a syntax error instead of throwing.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FORMATS_JSONUTIL_H
#define LOOM_FORMATS_JSONUTIL_H

#include "loom/Formats/Error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loom::fmt::detail {

using Json = nlohmann::json;

/// Parses `text`; on a syntax error the message names `fileName` and the
/// absolute byte offset (`baseOffset` + position in `text`).
Result<Json> parseJson(std::string_view text, std::string_view fileName,
                       uint64_t baseOffset);

/// A JSON integer that is >= 0 and fits int64.
std::optional<int64_t> asNonNegativeInt(const Json &value);
/// A JSON integer that fits uint64 (non-negative).
std::optional<uint64_t> asUInt64(const Json &value);

/// Short description of a JSON value's kind for messages ("a string").
std::string_view jsonKind(const Json &value);

/// The byte offset of the first `"key"` in `text` plus `baseOffset`, or
/// `baseOffset` when not found: a cheap way to point a message at a key.
uint64_t keyOffset(std::string_view text, std::string_view key,
                   uint64_t baseOffset);

} // namespace loom::fmt::detail

#endif // LOOM_FORMATS_JSONUTIL_H
