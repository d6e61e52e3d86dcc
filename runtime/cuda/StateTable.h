//===- runtime/cuda/StateTable.h - device copies of state buffers ---------===//
//
// The KV caches of a CUDA bundle (entry arguments with `loom.state`) live on
// the device for as long as the bundle is loaded: the executor's host
// buffer of a cache is only the key of its device copy, which the generated
// code gets through loom_cuda_mgpu_state(host, bytes) at every call and
// writes in place. Unlike the weights' resident copies (read-only, keyed by
// host address and size) a state is mutable, so one host address has one
// copy: a second size for the same address is an error, never a second
// copy. The table is device-neutral (its device operations are callbacks),
// so that it is tested without a GPU (test/gpu/runtime/StateTableTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_STATETABLE_H
#define LOOM_RUNTIME_CUDA_STATETABLE_H

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace loom::cuda {

/// Device operations of a StateTable; each returns false with `*error` set.
struct StateOps {
  /// A zero-filled device buffer of `bytes`, complete when it returns.
  std::function<bool(int64_t bytes, uint64_t *out, std::string *error)>
      allocZero;
  std::function<void(uint64_t ptr)> free;
  /// Synchronous copies between a host buffer and a device buffer.
  std::function<bool(uint64_t dst, const void *src, int64_t bytes,
                     std::string *error)>
      toDevice;
  std::function<bool(void *dst, uint64_t src, int64_t bytes,
                     std::string *error)>
      toHost;
};

class StateTable {
public:
  explicit StateTable(StateOps ops) : ops(std::move(ops)) {}
  ~StateTable() { releaseAll(); }

  /// The device copy of the state at `host`: made (zero-filled) on the
  /// first call, the same address on every later one. 0 with `*error` when
  /// the device refuses, or when `host` is known with another size.
  uint64_t get(const void *host, int64_t bytes, std::string *error);
  /// Copies the host buffer into the device copy (made when absent): an
  /// initial state given by the caller.
  bool write(const void *host, int64_t bytes, std::string *error);
  /// Copies the device copy into the host buffer (the state asked for
  /// after a run). False when `host` has no copy.
  bool read(void *host, int64_t bytes, std::string *error);
  /// Frees the copy of `host` (a reset, or its host buffer freed), if any.
  /// True when there was one.
  bool release(const void *host);
  void releaseAll();

  /// Bytes of device memory held, and the number of copies.
  int64_t bytes() const;
  size_t size() const;
  /// The device copy of `host`, 0 when none (tests).
  uint64_t find(const void *host) const;

private:
  struct Copy {
    uint64_t ptr = 0;
    int64_t bytes = 0;
  };
  bool lookup(const void *host, int64_t bytes, Copy *&out, std::string *error);
  StateOps ops;
  mutable std::mutex mu;
  std::map<const void *, Copy> copies;
  int64_t held = 0;
};

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_STATETABLE_H
