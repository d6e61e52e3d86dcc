//===- State.cpp - runtime-owned state of an entry (KV caches) -----------===//

#include "loom/runtime/State.h"
#include "loom/runtime/NpyName.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace loom::run {

bool hasState(const Entry &e) {
  for (const TensorSpec &t : e.inputs)
    if (!t.state.empty())
      return true;
  return false;
}

int64_t stateBytesPerPosition(const Entry &e) {
  int64_t total = 0;
  for (const TensorSpec &t : e.inputs) {
    if (t.state.empty())
      continue;
    int64_t n = dtypeSize(t.dtype);
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (int64_t(d) != t.ctxDim)
        n *= t.shape[d];
    total += n;
  }
  return total;
}

static std::string mib(int64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

bool chooseContext(const Manifest &m, const Entry &e, int64_t requested,
                   const std::vector<const NpyArray *> &given, int64_t copies,
                   int64_t availableBytes, int64_t &ctx, std::string *error) {
  std::vector<std::vector<int64_t>> shapes;
  for (const NpyArray *a : given)
    shapes.push_back(a ? a->shape : std::vector<int64_t>());
  return chooseContextForShapes(m, e, requested, shapes, copies, availableBytes,
                                ctx, error);
}

bool chooseContextForShapes(const Manifest &m, const Entry &e,
                            int64_t requested,
                            const std::vector<std::vector<int64_t>> &given,
                            int64_t copies, int64_t availableBytes,
                            int64_t &ctx, std::string *error) {
  int64_t perPos = stateBytesPerPosition(e) * std::max<int64_t>(copies, 1);
  int64_t limit = m.llm.llm ? m.llm.contextLength : 0;
  // Initial state files fix the context; they must agree.
  int64_t fromFiles = 0;
  size_t g = 0;
  for (const TensorSpec &t : e.inputs) {
    if (t.state.empty())
      continue;
    const std::vector<int64_t> *a = g < given.size() ? &given[g] : nullptr;
    ++g;
    if (!a || size_t(t.ctxDim) >= a->size())
      continue;
    int64_t c = (*a)[size_t(t.ctxDim)];
    if (fromFiles && c != fromFiles) {
      *error = "state input '" + t.name + "' has a context of " +
               std::to_string(c) + " positions but another state file has " +
               std::to_string(fromFiles) + "; give state files of one --ctx";
      return false;
    }
    fromFiles = c;
  }
  if (requested > 0 && fromFiles && requested != fromFiles) {
    *error = "--ctx " + std::to_string(requested) +
             " disagrees with the state files given (" +
             std::to_string(fromFiles) + " positions)";
    return false;
  }
  if (requested > 0 && limit > 0 && requested > limit) {
    *error = "--ctx " + std::to_string(requested) +
             " is beyond the model's "
             "context length " +
             std::to_string(limit) + "; pass --ctx " + std::to_string(limit) +
             " or less";
    return false;
  }
  // A CUDA entry's device buffers were planned for run-time sizes up to a
  // bound; the KV cache's context is one of them (the attention's scores
  // span the cache's rows).
  int64_t bound = 0;
  if (auto it = m.target.maxDim.find(e.name);
      m.target.isCuda() && it != m.target.maxDim.end())
    bound = it->second;
  ctx = requested > 0 ? requested : fromFiles;
  if (ctx > 0 && bound > 0 && ctx > bound) {
    *error = "a KV cache of " + std::to_string(ctx) +
             " positions is over the bound " + std::to_string(bound) +
             " that entry '" + e.name +
             "' was compiled for (its device memory plan); pass --ctx " +
             std::to_string(bound) + " or less, or recompile with loomc " +
             "--gpu-max-tokens " + std::to_string(ctx);
    return false;
  }
  if (bound > 0 && (limit <= 0 || bound < limit))
    limit = bound;
  if (ctx > 0) {
    if (perPos > 0 && ctx > availableBytes / perPos) {
      *error = "the KV cache of " + std::to_string(ctx) + " positions needs " +
               mib(ctx * perPos) + " but only " + mib(availableBytes) +
               " of memory is available; pass a smaller --ctx (at most " +
               std::to_string(availableBytes / perPos) + ")";
      return false;
    }
    return true;
  }
  if (limit <= 0) {
    *error = "entry '" + e.name +
             "' has a KV cache but the bundle names no "
             "context length; pass --ctx N";
    return false;
  }
  // The model's context, capped to half of the available memory.
  ctx = limit;
  if (perPos > 0)
    ctx = std::min(ctx, availableBytes / 2 / perPos);
  if (ctx < 1) {
    *error = "not enough memory for a KV cache of even one position (" +
             mib(perPos) + " per position, " + mib(availableBytes) +
             " available)";
    return false;
  }
  return true;
}

std::unique_ptr<NpyArray> zeroState(const TensorSpec &spec, int64_t ctx) {
  auto a = std::make_unique<NpyArray>();
  a->descr = npyDescr(spec.dtype);
  a->itemSize = dtypeSize(spec.dtype);
  a->shape = spec.shape;
  a->shape[size_t(spec.ctxDim)] = ctx;
  a->data = allocBuffer(a->numBytes(), /*zero=*/true);
  if (!a->data)
    return nullptr;
  return a;
}

bool checkPositions(const Entry &e, const NpyArray *positions, int64_t ctx,
                    std::string *error) {
  if (!positions)
    return true;
  return checkPositions(
      e, positions->shape, positions->itemSize,
      reinterpret_cast<const int64_t *>(positions->data.get()), ctx, error);
}

bool checkPositions(const Entry &e, const std::vector<int64_t> &shape,
                    int64_t itemSize, const int64_t *positions, int64_t ctx,
                    std::string *error) {
  if (!positions || !hasState(e))
    return true;
  if (shape.size() != 1 || itemSize != 8) {
    *error =
        "input 'positions' of entry '" + e.name + "' must be a 1-D int64 array";
    return false;
  }
  int64_t n = shape[0];
  std::vector<int64_t> p(size_t(std::max<int64_t>(n, 0)));
  if (n > 0)
    std::memcpy(p.data(), positions, size_t(n) * 8);
  for (int64_t i = 0; i < n; ++i)
    if (p[size_t(i)] != p[0] + i) {
      *error = "input 'positions' of entry '" + e.name +
               "' must be contiguous (positions[0] + i): positions[" +
               std::to_string(i) + "] is " + std::to_string(p[size_t(i)]) +
               ", not " + std::to_string(p[0] + i);
      return false;
    }
  if (n > 0 && (p[0] < 0 || p[0] > ctx - n)) {
    *error = "positions " + std::to_string(p[0]) + ".." +
             std::to_string(p[0] + n - 1) + " do not fit in the KV cache of " +
             std::to_string(ctx) + " positions; pass a larger --ctx";
    return false;
  }
  return true;
}

int64_t availableMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:")
      return kb * 1024;
  }
  return std::numeric_limits<int64_t>::max() / 4;
}

std::string stateFileName(const TensorSpec &spec, int64_t rank, bool allRanks) {
  std::string stem = npyFileStem(spec.name);
  return allRanks ? stem + ".rank" + std::to_string(rank) + ".npy"
                  : stem + ".npy";
}

} // namespace loom::run
