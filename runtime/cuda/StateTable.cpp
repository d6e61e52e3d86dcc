//===- runtime/cuda/StateTable.cpp - device copies of state buffers -------===//

#include "StateTable.h"

#include <cstdio>

namespace loom::cuda {

namespace {
std::string addr(const void *p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}
} // namespace

bool StateTable::lookup(const void *host, int64_t bytes, Copy *&out,
                        std::string *error) {
  out = nullptr;
  if (!host || bytes <= 0) {
    *error = "a state buffer needs a host address and a positive size (got " +
             std::to_string(bytes) + " bytes)";
    return false;
  }
  auto it = copies.find(host);
  if (it != copies.end()) {
    if (it->second.bytes != bytes) {
      *error = "the state buffer at " + addr(host) + " has a device copy of " +
               std::to_string(it->second.bytes) + " bytes, not " +
               std::to_string(bytes) +
               " (a state's context changes only after a reset)";
      return false;
    }
    out = &it->second;
    return true;
  }
  Copy c;
  if (!ops.allocZero(bytes, &c.ptr, error))
    return false;
  c.bytes = bytes;
  held += bytes;
  out = &copies.emplace(host, c).first->second;
  return true;
}

uint64_t StateTable::get(const void *host, int64_t bytes, std::string *error) {
  std::lock_guard<std::mutex> lock(mu);
  Copy *c = nullptr;
  return lookup(host, bytes, c, error) ? c->ptr : 0;
}

bool StateTable::write(const void *host, int64_t bytes, std::string *error) {
  std::lock_guard<std::mutex> lock(mu);
  Copy *c = nullptr;
  return lookup(host, bytes, c, error) &&
         ops.toDevice(c->ptr, host, bytes, error);
}

bool StateTable::read(void *host, int64_t bytes, std::string *error) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = copies.find(host);
  if (it == copies.end()) {
    *error = "no device copy of the state buffer at " + addr(host);
    return false;
  }
  if (it->second.bytes != bytes) {
    *error = "the state buffer at " + addr(host) + " has a device copy of " +
             std::to_string(it->second.bytes) + " bytes, not " +
             std::to_string(bytes);
    return false;
  }
  return ops.toHost(host, it->second.ptr, bytes, error);
}

bool StateTable::release(const void *host) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = copies.find(host);
  if (it == copies.end())
    return false;
  ops.free(it->second.ptr);
  held -= it->second.bytes;
  copies.erase(it);
  return true;
}

void StateTable::releaseAll() {
  std::lock_guard<std::mutex> lock(mu);
  for (auto &[host, c] : copies)
    ops.free(c.ptr);
  copies.clear();
  held = 0;
}

int64_t StateTable::bytes() const {
  std::lock_guard<std::mutex> lock(mu);
  return held;
}

size_t StateTable::size() const {
  std::lock_guard<std::mutex> lock(mu);
  return copies.size();
}

uint64_t StateTable::find(const void *host) const {
  std::lock_guard<std::mutex> lock(mu);
  auto it = copies.find(host);
  return it == copies.end() ? 0 : it->second.ptr;
}

} // namespace loom::cuda
