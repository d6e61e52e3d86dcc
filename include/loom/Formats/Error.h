//===- Error.h - Error and Result types of the format readers ---*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The format readers use the one result type of the plain C++ libraries
// (loom/Support/Result.h, shared with the runtime): every failure is a value,
// an Error that carries one human-readable message naming the file, the
// tensor or key, and the byte offset at which the input is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FORMATS_ERROR_H
#define LOOM_FORMATS_ERROR_H

#include "loom/Support/Result.h"

namespace loom::fmt {
using loom::Error;
using loom::makeError;
using loom::Result;
using loom::Status;
using loom::success;
} // namespace loom::fmt

/// The readers' spelling of LOOM_ASSIGN / LOOM_CHECK.
#define LOOM_FMT_ASSIGN(var, expr) LOOM_ASSIGN(var, expr)
#define LOOM_FMT_CHECK(expr) LOOM_CHECK(expr)

#endif // LOOM_FORMATS_ERROR_H
