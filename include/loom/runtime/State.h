//===- State.h - runtime-owned state of an entry (KV caches) ----*- C++ -*-===//
//
// Entry inputs marked "state": "kv_cache" in the manifest are buffers the
// launcher allocates (zero-filled), owns and passes to every call; the
// entry writes them in place (docs/BUNDLE.md, docs/LOOM-RUN.md). This file
// chooses their context length (--ctx), makes the zero-filled arrays, checks
// the positions against the context, and names the files they are written
// to. No LLVM, no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_STATE_H
#define LOOM_RUNTIME_STATE_H

#include "loom/runtime/Manifest.h"
#include "loom/runtime/Npy.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loom::run {

/// Whether the entry has state inputs.
bool hasState(const Entry &e);

/// Bytes of one position of every state input of `e` (one rank).
int64_t stateBytesPerPosition(const Entry &e);

/// The context length of the state buffers. `requested` (> 0: --ctx) must
/// not exceed the model's context_length (when the bundle has one) and must
/// fit in `availableBytes` for `copies` copies of the state; 0 takes the
/// context of `given` (initial state files, shape[ctx_dim]) when there is
/// one, else the model's context_length capped so that the buffers fit.
/// All given files must agree. False with a one-line message otherwise.
bool chooseContext(const Manifest &m, const Entry &e, int64_t requested,
                   const std::vector<const NpyArray *> &given, int64_t copies,
                   int64_t availableBytes, int64_t &ctx, std::string *error);

/// The same with the shapes of the initial state arrays (one per state
/// input in order; empty: not given).
bool chooseContextForShapes(
    const Manifest &m, const Entry &e, int64_t requested,
    const std::vector<std::vector<int64_t>> &givenShapes, int64_t copies,
    int64_t availableBytes, int64_t &ctx, std::string *error);

/// A zero-filled array for state input `spec` with `ctx` positions; null
/// when out of memory.
std::unique_ptr<NpyArray> zeroState(const TensorSpec &spec, int64_t ctx);

/// For an entry with state: the "positions" input must be contiguous
/// (positions[0] + i) and end within the context. `positions` may be null
/// (no such input: nothing to check).
bool checkPositions(const Entry &e, const NpyArray *positions, int64_t ctx,
                    std::string *error);

/// The same on a raw "positions" array (null: nothing to check).
bool checkPositions(const Entry &e, const std::vector<int64_t> &shape,
                    int64_t itemSize, const int64_t *positions, int64_t ctx,
                    std::string *error);

/// Memory the launcher may still use (MemAvailable), in bytes; a large
/// number when unknown.
int64_t availableMemory();

/// The file a state buffer is written to under --output: <name>.npy, or
/// <name>.rank<R>.npy with --all-ranks.
std::string stateFileName(const TensorSpec &spec, int64_t rank, bool allRanks);

} // namespace loom::run

#endif // LOOM_RUNTIME_STATE_H
