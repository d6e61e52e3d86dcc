//===- BundleCheck.h - checks of a bundle before dlopen ---------*- C++ -*-===//
//
// What loom-run checks between reading manifest.json and dlopen'ing the
// library (docs/LOOM-RUN.md, "Before dlopen"): the library is a complete
// ELF shared object (a truncated one would die of SIGBUS inside dlopen),
// it is the library the manifest was written for (integrity hashes), and
// the host CPU has every feature the code was generated for (target).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_BUNDLECHECK_H
#define LOOM_RUNTIME_BUNDLECHECK_H

#include "loom/runtime/Manifest.h"

#include <string>
#include <vector>

namespace loom::run {

/// Checks that `path` is a regular file holding a 64-bit little-endian ELF
/// shared object whose program and section headers, and every loadable
/// segment and section, lie inside the file. The message names what is
/// short or wrong.
bool checkElfLibrary(const std::string &path, std::string *error);

/// Compares the library's bytes and the manifest's entries with the hashes
/// of manifest.json's "integrity" (refused when absent).
bool checkBundleIntegrity(const Manifest &m, const std::string &libPath,
                          std::string *error);

/// Whether this CPU has the x86 feature `name` (LLVM's spelling: "avx2",
/// "avx512f", "fma", "f16c", ...). Unknown names: false.
bool hostHasCpuFeature(const std::string &name);

/// The features of `target` that the host lacks.
std::vector<std::string> missingCpuFeatures(const TargetInfo &target);

} // namespace loom::run

#endif // LOOM_RUNTIME_BUNDLECHECK_H
