//===- runtime/cuda/WorkspaceTable.h - the entries' device workspaces -----===//
//
// Every buffer of a call of a CUDA entry (its allocations and the device
// copies of its inputs) lives at an offset, computed at compile time, in
// one device workspace per entry (loom-gpu-host-program, docs/GPU.md "The
// memory plan"). The generated code gets the workspace through
// loom_cuda_mgpu_workspace(key, bytes) at every call: allocated on the
// first call for that key, the same device address on every later one,
// freed when the bundle closes (or on a reset). The key is the address of
// a per-entry global of the bundle; its size is the plan's, a compile-time
// constant, so another size for one key is an error. The table is
// device-neutral (its device operations are callbacks), so that it is
// tested without a GPU (test/gpu/runtime/WorkspaceTableTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_WORKSPACETABLE_H
#define LOOM_RUNTIME_CUDA_WORKSPACETABLE_H

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace loom::cuda {

/// Device operations of a WorkspaceTable.
struct WorkspaceOps {
  /// A device buffer of `bytes` (contents undefined); false with `*error`
  /// set when the device refuses.
  std::function<bool(int64_t bytes, uint64_t *out, std::string *error)> alloc;
  std::function<void(uint64_t ptr)> free;
};

class WorkspaceTable {
public:
  explicit WorkspaceTable(WorkspaceOps ops) : ops(std::move(ops)) {}
  ~WorkspaceTable() { releaseAll(); }

  /// The workspace of `key` for the caller `slot`: allocated on the first
  /// call, the same address on every later one. 0 with `*error` when the
  /// device refuses, when `key` is null or `bytes` not positive, or when
  /// `key` is known with another size. Ranks that share a device (threads
  /// of one process: the single-device communicator) run the same entry at
  /// once, so each has its own workspace: `slot` is the calling rank (-1
  /// outside a rank).
  uint64_t get(const void *key, int64_t bytes, std::string *error,
               int64_t slot = -1);
  /// Frees every workspace (the bundle closed, or a reset: no call may be
  /// running). The next call allocates its workspace again.
  void releaseAll();

  /// Bytes of device memory held, and the number of workspaces.
  int64_t bytes() const;
  size_t size() const;
  /// The workspace of `key` for `slot`, 0 when none (tests).
  uint64_t find(const void *key, int64_t slot = -1) const;

private:
  struct Space {
    uint64_t ptr = 0;
    int64_t bytes = 0;
  };
  WorkspaceOps ops;
  mutable std::mutex mu;
  std::map<std::pair<const void *, int64_t>, Space> spaces;
  int64_t held = 0;
};

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_WORKSPACETABLE_H
