//===- loom/runtime/NpyName.h - tensor names as .npy file names -*- C++ -*-===//
//
// loom-run writes each output (and, with --output, each state input) to
// `<stem>.npy`. Tensor names come from the model and need not be file names
// (ONNX's `gpu_0/softmax_1`, `input:0`), so the stem is the name with every
// byte outside [A-Za-z0-9._-] replaced by '_', and a '_' put in front of a
// stem that is empty or starts with '.' (no hidden files, never `.` or
// `..`). The manifest keeps the real name; two names of one entry that map
// to the same stem are refused by name, by loomc when it writes the bundle
// and by the manifest reader (docs/BUNDLE.md, "File names"). Header-only,
// no LLVM: lib/Bundle and the runtime share it.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_NPYNAME_H
#define LOOM_RUNTIME_NPYNAME_H

#include <map>
#include <string>
#include <vector>

namespace loom {

/// The file name stem of tensor `name` (see above); `name` itself when it
/// is already a safe file name.
inline std::string npyFileStem(const std::string &name) {
  std::string s;
  if (name.empty() || name[0] == '.')
    s = "_";
  for (char ch : name) {
    bool safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    s += safe ? ch : '_';
  }
  return s;
}

/// Empty when the names map to distinct stems, else a one-line message
/// naming the first two that clash and what to do.
inline std::string npyStemClash(const std::vector<std::string> &names) {
  std::map<std::string, const std::string *> seen;
  for (const std::string &n : names) {
    auto [it, fresh] = seen.emplace(npyFileStem(n), &n);
    if (!fresh)
      return "outputs '" + *it->second + "' and '" + n +
             "' would both be written to '" + it->first +
             ".npy' (names are mapped to file names: bytes outside "
             "[A-Za-z0-9._-] become '_'); rename one of them in the model";
  }
  return "";
}

} // namespace loom

#endif // LOOM_RUNTIME_NPYNAME_H
