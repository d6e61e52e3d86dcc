//===- runtime/cuda/WorkspaceTable.cpp - the entries' device workspaces ---===//

#include "WorkspaceTable.h"

#include <cstdio>

namespace loom::cuda {

uint64_t WorkspaceTable::get(const void *key, int64_t bytes, std::string *error,
                             int64_t slot) {
  if (!key || bytes <= 0) {
    *error = "a workspace needs a key and a positive size (got " +
             std::to_string(bytes) + " bytes)";
    return 0;
  }
  std::lock_guard<std::mutex> lock(mu);
  auto it = spaces.find({key, slot});
  if (it != spaces.end()) {
    if (it->second.bytes != bytes) {
      char at[32];
      std::snprintf(at, sizeof(at), "%p", key);
      *error = std::string("the workspace of key ") + at + " has " +
               std::to_string(it->second.bytes) + " bytes, not " +
               std::to_string(bytes) +
               " (one entry's memory plan has one size)";
      return 0;
    }
    return it->second.ptr;
  }
  Space s;
  if (!ops.alloc(bytes, &s.ptr, error))
    return 0;
  s.bytes = bytes;
  held += bytes;
  spaces.emplace(std::make_pair(key, slot), s);
  return s.ptr;
}

void WorkspaceTable::releaseAll() {
  std::lock_guard<std::mutex> lock(mu);
  for (auto &[key, s] : spaces)
    ops.free(s.ptr);
  spaces.clear();
  held = 0;
}

int64_t WorkspaceTable::bytes() const {
  std::lock_guard<std::mutex> lock(mu);
  return held;
}

size_t WorkspaceTable::size() const {
  std::lock_guard<std::mutex> lock(mu);
  return spaces.size();
}

uint64_t WorkspaceTable::find(const void *key, int64_t slot) const {
  std::lock_guard<std::mutex> lock(mu);
  auto it = spaces.find({key, slot});
  return it == spaces.end() ? 0 : it->second.ptr;
}

} // namespace loom::cuda
