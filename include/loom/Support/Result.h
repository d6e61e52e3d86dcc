//===- loom/Support/Result.h - Error and Result (errors as values) -*- C++
//-*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The one result type of the plain C++ libraries (lib/Formats, lib/Tokenizer,
// the runtime's executor): they run on untrusted input and are built without
// exceptions, so every failure is a value: an Error that carries one
// human-readable message naming the file, the tensor or key, and the byte
// offset at which the input is wrong. No LLVM, no MLIR (the runtime uses it).
//
// Result<T> is a small stand-in for std::expected (g++ 12 does not ship it):
// it holds either a T or an Error. Status is Result<void>.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SUPPORT_RESULT_H
#define LOOM_SUPPORT_RESULT_H

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace loom {

/// A failure of a format reader, with a message for humans.
struct Error {
  std::string message;
};

/// Builds an Error from pieces that are streamed as text; numbers are written
/// in decimal. Example: makeError(file, ": tensor '", name, "' at byte ", 12).
template <typename... Args> Error makeError(const Args &...args) {
  std::string s;
  auto append = [&s](const auto &a) {
    using A = std::decay_t<decltype(a)>;
    if constexpr (std::is_same_v<A, bool>)
      s += a ? "true" : "false";
    else if constexpr (std::is_same_v<A, char>)
      s += a;
    else if constexpr (std::is_integral_v<A>)
      s += std::to_string(a);
    else if constexpr (std::is_floating_point_v<A>)
      s += std::to_string(a);
    else
      s += std::string_view(a);
  };
  (append(args), ...);
  return Error{std::move(s)};
}

/// Either a value of type T or an Error.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : storage(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : storage(std::in_place_index<1>, std::move(error)) {}

  /// True when this holds a value.
  explicit operator bool() const { return storage.index() == 0; }
  bool hasValue() const { return storage.index() == 0; }

  T &operator*() & {
    assert(hasValue() && "no value in a failed Result");
    return *std::get_if<0>(&storage);
  }
  const T &operator*() const & {
    assert(hasValue() && "no value in a failed Result");
    return *std::get_if<0>(&storage);
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }

  /// Moves the value out (the Result must hold one).
  T take() { return std::move(**this); }

  const Error &error() const {
    assert(!hasValue() && "no error in a successful Result");
    return *std::get_if<1>(&storage);
  }
  Error takeError() { return std::move(*std::get_if<1>(&storage)); }

private:
  std::variant<T, Error> storage;
};

/// Success or an Error.
template <> class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Error error) : failure(true), err(std::move(error)) {}

  explicit operator bool() const { return !failure; }
  bool hasValue() const { return !failure; }
  const Error &error() const { return err; }
  Error takeError() { return std::move(err); }

private:
  bool failure = false;
  Error err;
};

using Status = Result<void>;

inline Status success() { return Status(); }

} // namespace loom

/// Evaluates a Result-returning expression; on failure returns its Error from
/// the enclosing function, else binds the value to `var`.
#define LOOM_ASSIGN(var, expr)                                                 \
  auto var##OrErr = (expr);                                                    \
  if (!var##OrErr)                                                             \
    return var##OrErr.takeError();                                             \
  auto var = var##OrErr.take()

/// Evaluates a Status-returning expression and returns its Error on failure.
#define LOOM_CHECK(expr)                                                       \
  do {                                                                         \
    auto loomStatus = (expr);                                                  \
    if (!loomStatus)                                                           \
      return loomStatus.takeError();                                           \
  } while (false)

#endif // LOOM_SUPPORT_RESULT_H
