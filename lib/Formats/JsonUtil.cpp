//===- JsonUtil.cpp - Exception-free JSON parsing for the readers ---------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "JsonUtil.h"

#include <limits>

using namespace loom::fmt;
using namespace loom::fmt::detail;

namespace {
/// Builds the DOM through nlohmann's own SAX DOM builder, but records the
/// position and message of a syntax error instead of throwing.
class RecordingSax {
public:
  using Dom = nlohmann::detail::json_sax_dom_parser<Json>;
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  explicit RecordingSax(Json &root) : dom(root, /*allow_exceptions=*/false) {}

  bool null() { return dom.null(); }
  bool boolean(bool v) { return dom.boolean(v); }
  bool number_integer(number_integer_t v) { return dom.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return dom.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t &s) {
    return dom.number_float(v, s);
  }
  bool string(string_t &v) { return dom.string(v); }
  bool binary(binary_t &v) { return dom.binary(v); }
  bool start_object(std::size_t n) { return dom.start_object(n); }
  bool key(string_t &v) { return dom.key(v); }
  bool end_object() { return dom.end_object(); }
  bool start_array(std::size_t n) { return dom.start_array(n); }
  bool end_array() { return dom.end_array(); }
  template <typename Exception>
  bool parse_error(std::size_t position, const std::string &,
                   const Exception &ex) {
    failed = true;
    errorPosition = position;
    errorMessage = ex.what();
    return false;
  }

  bool failed = false;
  std::size_t errorPosition = 0;
  std::string errorMessage;

private:
  Dom dom;
};
} // namespace

Result<Json> loom::fmt::detail::parseJson(std::string_view text,
                                          std::string_view fileName,
                                          uint64_t baseOffset) {
  Json root;
  RecordingSax sax(root);
  bool ok = Json::sax_parse(text.begin(), text.end(), &sax);
  if (!ok || sax.failed) {
    // nlohmann counts positions from 1 (the character just read).
    uint64_t at = baseOffset + (sax.errorPosition ? sax.errorPosition - 1 : 0);
    std::string what = sax.errorMessage;
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    if (auto close = what.find("] "); close != std::string::npos)
      what = what.substr(close + 2);
    return makeError(fileName, ": byte ", at, ": invalid JSON: ", what);
  }
  return root;
}

std::optional<int64_t> loom::fmt::detail::asNonNegativeInt(const Json &v) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0)
      return std::nullopt;
    return i;
  }
  return std::nullopt;
}

std::optional<uint64_t> loom::fmt::detail::asUInt64(const Json &v) {
  if (v.is_number_unsigned())
    return v.get<uint64_t>();
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0)
      return std::nullopt;
    return static_cast<uint64_t>(i);
  }
  return std::nullopt;
}

std::string_view loom::fmt::detail::jsonKind(const Json &v) {
  switch (v.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::object:
    return "an object";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
    return "an integer";
  case Json::value_t::number_float:
    return "a floating-point number";
  case Json::value_t::binary:
    return "binary data";
  case Json::value_t::discarded:
    return "a discarded value";
  }
  return "a value";
}

uint64_t loom::fmt::detail::keyOffset(std::string_view text,
                                      std::string_view key,
                                      uint64_t baseOffset) {
  std::string quoted;
  quoted.reserve(key.size() + 2);
  quoted += '"';
  quoted += key;
  quoted += '"';
  size_t at = text.find(quoted);
  return baseOffset + (at == std::string_view::npos ? 0 : at);
}
