//===- Error.h - Error and Result types of the cost library -----*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The cost library is built without exceptions (the compiler uses
// -fno-exceptions), so a bad mesh spec or device name comes back as a value:
// an Error whose message names the field that is wrong and why.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COST_ERROR_H
#define LOOM_COST_ERROR_H

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace loom::cost {

/// A failure with a message for humans (it names the offending field).
struct Error {
  std::string message;
};

/// Either a value of type T or an Error (a stand-in for std::expected).
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : storage(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : storage(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return storage.index() == 0; }
  explicit operator bool() const { return ok(); }

  T &value() {
    assert(ok() && "value() on an error Result");
    return std::get<0>(storage);
  }
  const T &value() const {
    assert(ok() && "value() on an error Result");
    return std::get<0>(storage);
  }
  T &operator*() { return value(); }
  const T &operator*() const { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  const Error &error() const {
    assert(!ok() && "error() on a successful Result");
    return std::get<1>(storage);
  }

private:
  std::variant<T, Error> storage;
};

} // namespace loom::cost

#endif // LOOM_COST_ERROR_H
