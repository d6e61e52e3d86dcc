//===- ManifestTestUtil.h - helpers of the manifest unit tests --*- C++ -*-===//
//
// Parsing a manifest text that must be accepted or refused, and editing one
// key of it: shared by ManifestTest.cpp and StateTest.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUN_UNITTESTS_MANIFESTTESTUTIL_H
#define LOOM_RUN_UNITTESTS_MANIFESTTESTUTIL_H

#include "loom/runtime/Manifest.h"

#include <gtest/gtest.h>

#include <string>

namespace loom::run::test {

/// The manifest of `text`, which must parse.
inline Manifest parsed(const std::string &text) {
  Manifest m;
  std::string err;
  EXPECT_TRUE(parseManifest(text, 1, m, &err)) << err;
  return m;
}

/// The message refusing `text`, which must not parse.
inline std::string parseError(const std::string &text) {
  Manifest m;
  std::string err;
  EXPECT_FALSE(parseManifest(text, 1, m, &err));
  return err;
}

/// `s` with the first `from` replaced by `to` (`from` must occur).
inline std::string replaced(std::string s, const std::string &from,
                            const std::string &to) {
  size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos)
    s.replace(p, from.size(), to);
  return s;
}

} // namespace loom::run::test

#endif // LOOM_RUN_UNITTESTS_MANIFESTTESTUTIL_H
