//===- Loader.h - loading a bundle for the ranks of loom-run ----*- C++ -*-===//
//
// What a run of one entry (loom-run.cpp) and text generation (Generate.cpp)
// share: the manifest, the library and its entry points, the weight slices
// mapped and prefaulted before any rank starts, and each rank's weights bound
// to its context as memref descriptors (docs/BUNDLE.md).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUN_LOADER_H
#define LOOM_RUN_LOADER_H

#include "loom/runtime/Executor.h"
#include "loom/runtime/Gemm.h"
#include "loom/runtime/Manifest.h"
#include "loom/runtime/Npy.h"

#include "loom/runtime/Runtime.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace loom::run {

using EntryFn = void (*)(void **);

/// The runtime ABI's dtype (LOOM_RT_*) of a manifest dtype (i1 travels as
/// u8, one byte).
int32_t rtDtype(DType t);

/// Reads and validates `<bundle>/manifest.json`; false + *error (one line).
bool loadManifest(const std::string &bundle, Manifest &m, std::string *error);

/// dlopen()s the bundle's library and resolves every entry's symbol
/// (entry name -> function). The library stays loaded until exit. A CUDA
/// bundle's constants are uploaded here (loom_gpu_upload_constants).
bool loadLibrary(const std::string &bundle, const Manifest &m,
                 std::map<std::string, EntryFn> &fns, std::string *error);

/// The checks of a run that depend on the bundle's target: a CUDA bundle
/// needs one rank on the threads backend, the CUDA runtime in this process
/// (the mgpu* functions that its library calls; loom-run links it when
/// built with CUDA) and a device of one of its chips with memory for its
/// plan; it becomes the default device of the generated host code. A CPU
/// bundle refuses the CUDA options. False + *error (one line).
/// `deviceMemory` (optional): the CUDA device's free memory in bytes when
/// the bundle opens (its total when the driver cannot tell; 0 for a CPU
/// bundle).
bool checkTarget(const std::string &bundle, const Manifest &m,
                 const OpenOptions &options, std::string *error,
                 int64_t *deviceMemory = nullptr);

/// The device bytes that the local `ranks`, sharing one CUDA device (the
/// single-device communicator; one rank under NCCL), need for `entry`:
/// each rank's compile-time plan (`peak_bytes`: its workspace and its
/// resident weights), less the weights they share. A weight that is not
/// split between them is one slice of one mapped file, which the resident
/// table keeps once (keyed by its host address); a split weight's
/// contiguous copy is the rank's own. 0 when the manifest has no plan.
int64_t cudaDeviceBytes(const Manifest &m, const std::string &entry,
                        const std::vector<int64_t> &ranks);

/// The memory check of a CUDA bundle once its ranks are known: every
/// entry's `cudaDeviceBytes` for `ranks` against the device's
/// free `deviceMemory`. False + *error (one line, naming the entry, the
/// ranks and both sizes).
bool checkCudaMemory(const std::string &bundle, const Manifest &m,
                     const std::vector<int64_t> &ranks, int64_t deviceMemory,
                     std::string *error);

/// CUDA graphs around one entry call on this thread (OpenOptions::
/// cudaGraphs): begin arms the call of `entry` (its function) for `rank`
/// (its context), end disarms it; no-ops without the CUDA runtime.
void cudaGraphBegin(const void *entry, const void *rank);
void cudaGraphEnd();

/// After a CUDA bundle's entry ran: the device copies of its weights stay
/// (loom_cuda_mgpu_resident); freed when the executor closes.
void releaseCudaResident();

/// A CUDA bundle's state (KV caches, docs/GPU.md "KV cache on the device"):
/// the executor's host buffer of a state is only the key of its device copy
/// (loom_cuda_mgpu_state), which lives until released. Register makes the
/// copy (zero-filled on the device) before the first call; write copies
/// the host buffer to it (an initial state given by the caller); read
/// copies it back into the host buffer (the state asked for after a run);
/// release frees it (a reset, or the host buffer freed). Each is fatal,
/// with the runtime's message, when the device fails; false + *error when
/// this process has no CUDA runtime.
bool cudaStateRegister(void *host, int64_t bytes, std::string *error);
bool cudaStateWrite(const void *host, int64_t bytes, std::string *error);
bool cudaStateRead(void *host, int64_t bytes, std::string *error);
void cudaStateRelease(const void *host);

/// The rank and world size of this process as told by mpirun (before MPI is
/// initialised); singleton (0, 1) otherwise.
void mpiEnvRank(int64_t &rank, int64_t &size);

/// The backend and the ranks this process runs: under MPI (--backend mpi,
/// or started by mpirun unless a backend was given) this process's rank,
/// else every rank as a thread. `ranks` (0: unset) must match the bundle.
bool selectRanks(const std::string &bundle, const Manifest &m,
                 const std::string &backend, bool backendGiven, int ranks,
                 bool &useMpi, int64_t &mpiRank,
                 std::vector<int64_t> &localRanks, std::string *error);

/// One weight slice of one rank, checked and mapped before the ranks start.
struct PlannedWeight {
  std::string path; ///< resolved
  int64_t offset = 0, nbytes = 0;
  std::vector<int64_t> shape, strides;
  /// Packed at load for the f32 GEMM (the manifest's "gemm_b"; null packed:
  /// not), shared by every run's binding of the weight.
  loom::rt::LoadPackedWeight gemm;
  /// A CUDA bundle's strided slice (a partitioned weight not contiguous in
  /// its file), copied contiguous once at load and bound by every run: the
  /// device keeps one resident copy per host address, so the address must
  /// not change between runs. Null otherwise.
  std::shared_ptr<char> contiguous;
  int64_t contiguousBytes = 0;
};

/// Every local rank's weight slices of one entry, mapped and prefaulted.
struct MappedWeights {
  /// Declared before perRank so that it is destroyed after it: a packed copy
  /// (keyed by the mapped address) dies before its mapping is unmapped.
  std::vector<std::shared_ptr<const MappedFile>> keep;
  std::map<int64_t, std::vector<PlannedWeight>> perRank; ///< manifest order
  int64_t bytes = 0;                                     ///< all local ranks
  size_t slices = 0;
};

/// Maps, checks and prefaults the slices of `entry` of every rank in
/// `localRanks` (a progress bar on stderr when `progress`).
bool mapWeights(const std::string &bundle, const Manifest &m,
                const Entry &entry, const std::vector<int64_t> &localRanks,
                bool progress, MappedWeights &out, std::string *error);

/// A CUDA bundle's weights, mapped: uploaded to the device now (the
/// runtime's resident copies, keyed by host address, that the generated
/// host code then finds), so that no entry call uploads them.
bool uploadCudaWeights(const MappedWeights &weights, std::string *error);

/// A memref descriptor {allocated, aligned, offset, sizes, strides} as words.
std::vector<int64_t> makeDescriptor(const void *data,
                                    const std::vector<int64_t> &shape,
                                    const std::vector<int64_t> &strides);

/// A rank's weights registered with its context, as the descriptors to pass
/// (manifest order) and the contiguous copies made for strided or
/// interleaved slices.
struct BoundWeights {
  std::vector<std::vector<int64_t>> descs;
  std::vector<Buffer> owned;
  std::set<const void *> notOwned; ///< pointers an output may alias
};

/// Registers `weights` (this rank's, from mapWeights) as weights 0..n-1 of
/// `ctx` and builds their descriptors.
bool bindWeights(loom_rt_ctx *ctx, const Entry &e,
                 const std::vector<PlannedWeight> &weights, BoundWeights &out,
                 std::string *error);

/// A view of output `k` in the results buffer.
struct OutputView {
  void *allocated;
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
};

std::vector<OutputView> outputViews(const Entry &e,
                                    const std::vector<int64_t> &words);

/// Pipeline boundaries (pipelined runs and generation share them): copies
/// output view `v` of `o` into `buf` as one contiguous row-major array,
/// reallocating it when its `capacity` bytes are too few; sets `shape` and
/// returns the element count. Fails the rank on out of memory.
int64_t packOutput(loom_rt_ctx *ctx, const OutputSpec &o, const OutputView &v,
                   Buffer &buf, int64_t &capacity, std::vector<int64_t> &shape);

/// Receives boundary input `t` from rank `src`: its shape (tag + 1), checked
/// against the manifest's, then its data (tag) into a fresh buffer.
Buffer recvBoundary(loom_rt_ctx *ctx, const TensorSpec &t, int64_t src,
                    int64_t tag, std::vector<int64_t> &shape);

/// Frees each distinct `allocated` pointer of the outputs that is not the
/// allocated pointer of an input or weight (BUNDLE.md). MLIR marks memory it
/// did not allocate (constant globals) with allocated = 0xdeadbeef: never
/// freed either.
void freeOutputs(const Entry &e, const std::vector<int64_t> &words,
                 const std::set<const void *> &notOwned);

/// The state buffers of one entry: per local rank, one per state input.
struct EntryState {
  int64_t ctx = 0;
  std::map<int64_t, std::vector<Array>> perRank; ///< state input order
};

/// What an open bundle holds (Executor.cpp runs entries, Generate.cpp
/// generates).
struct Executor::Impl {
  std::string bundle;
  OpenOptions opts;
  Manifest m;
  std::map<std::string, EntryFn> fns;
  bool useMpi = false;
  int64_t mpiRank = 0;
  std::vector<int64_t> localRanks;
  std::map<std::string, MappedWeights> mapped; ///< by entry
  std::map<std::string, EntryState> state;     ///< by entry
  /// A CUDA bundle: the device's free memory at open (checkTarget), for the
  /// plans and the KV cache.
  int64_t deviceMemory = 0;
};

/// The failures of the ranks of one job: reported at once (through
/// OpenOptions::onRankError, as "rank R: <what>") and kept for the Error.
struct RankErrors {
  const OpenOptions *open = nullptr;
  std::mutex mu;
  std::vector<std::string> messages;
  void report(int64_t rank, const std::string &msg);
};

/// The launch options of an open bundle's jobs.
loom::rt::LaunchOptions launchOptions(const OpenOptions &o);

} // namespace loom::run

#endif // LOOM_RUN_LOADER_H
