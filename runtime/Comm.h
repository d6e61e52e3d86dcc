//===- runtime/Comm.h - Communicator interface and rank context -*- C++ -*-===//
//
// Internal C++ API of the runtime. Every communicator (threads, mpi, later
// nccl) implements `Comm`; one Comm object exists per rank and is owned by
// the launcher. The C ABI entry points (Context.cpp) validate arguments,
// resolve the group of an axes_mask (cached in the context), and forward to
// the rank's Comm.
//
// Contract of every Comm method:
//  - arguments are already validated (dtype/op in range, counts >= 0,
//    pointers non-null when the count is non-zero, peers in range);
//  - it returns only on success; on any failure (timeout, dead peer, job
//    aborted by another rank) it calls fail(), which never returns;
//  - collectives of a group are called by all members in the same order.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_COMM_H
#define LOOM_RUNTIME_COMM_H

#include "loom/runtime/Gemm.h"
#include "loom/runtime/Runtime.h"
#include "loom/runtime/abi.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace loom::rt {

class Comm;
class ThreadPool;

/// Backend-specific part of a group (a shared-memory rendezvous, an
/// MPI_Comm, ...).
class GroupImpl {
public:
  virtual ~GroupImpl();
};

/// The process group of one axes_mask, as seen from one rank.
struct Group {
  uint64_t mask = 0;            ///< normalised: only bits of existing axes
  int64_t size = 1;             ///< p
  int64_t index = 0;            ///< this rank's index in the group
  std::vector<int64_t> members; ///< global ranks, by group index
  std::unique_ptr<GroupImpl> impl;
};

/// What the rank is doing now, for error messages (set at each ABI entry).
struct OpDesc {
  const char *name = "";
  int32_t dtype = -1;
  int32_t op = -1;
  int64_t count = -1;
  int64_t inner = -1;
  uint64_t mask = 0;
  int64_t peer = -1;
  int64_t tag = -1;
  bool hasMask = false;
};

struct TraceEvent {
  const char *name;
  int64_t ns;
  char phase; // 'B' or 'E'
};

/// A complete ("X") trace event with a category and arguments (the
/// pipeline schedule's stage calls and boundary transfers, docs/RUNTIME.md
/// "Trace").
struct TraceSpan {
  std::string name;
  const char *cat; ///< "pipeline", "p2p" (string literal)
  int64_t startNs, endNs;
  std::string args; ///< a JSON object's text, or empty
};

/// A non-blocking point-to-point operation in flight (Comm::isend/irecv),
/// completed by Comm::wait. Backend-specific state lives in `impl`.
class P2PImpl {
public:
  virtual ~P2PImpl();
};
struct P2PRequest {
  bool active = false;
  bool isSend = false;
  int32_t dtype = 0;
  void *buf = nullptr; ///< receive buffer (sends: null)
  int64_t count = 0, peer = -1, tag = -1;
  std::unique_ptr<P2PImpl> impl;
};

/// Chunk [lo, hi) of member i when count elements of es bytes are split in
/// p pieces aligned to 64 bytes: the split of the threads backend's
/// reduce-scatter phase, which the single-device communicator keeps too (so
/// both sum in the same order and give the same bits).
inline void reduceChunk(int64_t count, int64_t p, int64_t es, int64_t i,
                        int64_t &lo, int64_t &hi) {
  int64_t align = std::max<int64_t>(1, 64 / es);
  int64_t per = ((count + p - 1) / p + align - 1) / align * align;
  lo = std::min(i * per, count);
  hi = std::min(lo + per, count);
}

} // namespace loom::rt

/// The opaque per-rank context of the C ABI.
struct loom_rt_ctx {
  loom::rt::Comm *comm = nullptr;
  std::vector<int64_t> dims;   ///< mesh shape
  std::vector<int64_t> coords; ///< this rank's coordinates
  int64_t rank = 0;
  int64_t worldSize = 1;
  double timeoutSeconds = 60;
  std::unordered_map<uint64_t, std::unique_ptr<loom::rt::Group>> groups;
  std::vector<const void *> weights;
  std::vector<std::shared_ptr<const loom::MappedFile>> mappings;
  loom::rt::OpDesc current;
  bool tracing = false;
  std::vector<loom::rt::TraceEvent> trace;
  std::vector<loom::rt::TraceSpan> spans;
  std::vector<char> scratch; ///< backend scratch (e.g. f16 -> f32 staging)
  /// Time spent in, and number of, communication calls (commStats()).
  int64_t commNs = 0;
  int64_t commCalls = 0;
  /// Threads of this rank (loom_rt_parallel_for; ThreadPool.h) and why its
  /// workers are not pinned (empty when they are, or when it has one).
  int numThreads = 1;
  std::shared_ptr<loom::rt::ThreadPool> pool;
  std::string pinNote;
  /// Weights packed at load for the f32 GEMM, by the address the generated
  /// code passes (registerLoadPackedWeight; read-only while the rank runs).
  std::unordered_map<const void *, loom::rt::LoadPackedWeight> loadPacked;
};

namespace loom::rt {

class Comm {
public:
  virtual ~Comm();
  virtual const char *name() const = 0;

  /// Creates the backend part of `group` (called once per mask per rank, at
  /// the group's first use; for the members of one group in the same order).
  virtual std::unique_ptr<GroupImpl> createGroup(loom_rt_ctx &ctx,
                                                 const Group &group) = 0;

  virtual void allReduce(loom_rt_ctx &ctx, Group &g, int32_t dtype, int32_t op,
                         const void *in, void *out, int64_t count) = 0;
  virtual void allGather(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                         const void *in, void *out, int64_t outer,
                         int64_t inner) = 0;
  virtual void reduceScatter(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                             int32_t op, const void *in, void *out,
                             int64_t outer, int64_t inner) = 0;
  virtual void allToAll(loom_rt_ctx &ctx, Group &g, int32_t dtype,
                        const void *in, void *out, int64_t block) = 0;
  virtual void barrier(loom_rt_ctx &ctx, Group &g) = 0;
  virtual void send(loom_rt_ctx &ctx, int32_t dtype, const void *buf,
                    int64_t count, int64_t dst, int64_t tag) = 0;
  virtual void recv(loom_rt_ctx &ctx, int32_t dtype, void *buf, int64_t count,
                    int64_t src, int64_t tag) = 0;
  virtual void sendRecv(loom_rt_ctx &ctx, int32_t dtype, const void *sendBuf,
                        int64_t sendCount, int64_t dst, void *recvBuf,
                        int64_t recvCount, int64_t src, int64_t tag) = 0;

  /// Non-blocking point to point (global ranks, FIFO per (src, dst, tag)
  /// like send/recv): start the transfer and return; `wait` completes it
  /// (the send buffer may be reused, the receive buffer holds the data),
  /// failing the job on timeout, a dead peer or a size mismatch like the
  /// blocking calls. A request is waited for exactly once. The threads
  /// backend copies a send at once (eager) and matches a receive at its
  /// wait; MPI uses MPI_Isend / MPI_Irecv / MPI_Wait.
  virtual void isend(loom_rt_ctx &ctx, int32_t dtype, const void *buf,
                     int64_t count, int64_t dst, int64_t tag,
                     P2PRequest &req) = 0;
  virtual void irecv(loom_rt_ctx &ctx, int32_t dtype, void *buf, int64_t count,
                     int64_t src, int64_t tag, P2PRequest &req) = 0;
  virtual void wait(loom_rt_ctx &ctx, P2PRequest &req) = 0;

  /// Called at every ABI entry: fails fast if the job is already failing.
  virtual void poll(loom_rt_ctx &ctx) = 0;

  /// Fails the job with `message` (already formatted, see formatFailure).
  /// Never returns.
  [[noreturn]] virtual void fail(loom_rt_ctx &ctx,
                                 const std::string &message) = 0;
};

/// What a member calls at a collective meeting point. Ranks compare these
/// (threads: always, in shared memory at the first barrier; MPI: with
/// LOOM_CHECK_COLLECTIVES=1, one small all-gather) and fail with both sides
/// named instead of reading past a peer's buffer.
enum CollKind : int32_t {
  kBarrier = 1,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll
};
struct CollSig {
  int64_t kind = 0; ///< CollKind
  int64_t dtype = -1;
  int64_t op = -1;
  int64_t count = -1; ///< all_reduce count, gather/scatter outer, a2a block
  int64_t inner = -1;
  bool operator==(const CollSig &o) const {
    return kind == o.kind && dtype == o.dtype && op == o.op &&
           count == o.count && inner == o.inner;
  }
};
/// "all_reduce(dtype=f32, op=sum, count=8)", "barrier", ...
std::string describeCall(const CollSig &s);
/// The failure reason when this rank's `mine` differs from `theirs` of
/// global rank `peer` in the group of `members`.
std::string collectiveMismatch(const std::vector<int64_t> &members,
                               const CollSig &mine, int64_t peer,
                               const CollSig &theirs);

/// The context of the rank running on this thread (set by the launchers
/// around the rank body; null outside one): how loom_rt_malloc, which takes
/// no context, fails the right job.
loom_rt_ctx *threadContext();
struct ThreadContextScope {
  loom_rt_ctx *saved;
  explicit ThreadContextScope(loom_rt_ctx *ctx);
  ~ThreadContextScope();
};

/// "f32", ... ("?" out of range); "sum", ... ("?").
const char *dtypeName(int32_t dtype);
const char *reduceOpName(int32_t op);

/// loom_rt_now_ns() + seconds, saturated: INT64_MAX (no deadline) for
/// seconds >= 1e9, inf included.
int64_t deadlineAfter(double seconds);

/// "loom-rt: rank R (coords [..]): <op desc> failed: <reason>".
std::string formatFailure(const loom_rt_ctx &ctx, const std::string &reason);

/// Loads and starts the f32 GEMM library once (Gemm.cpp). The launchers call
/// it on their unpinned thread before any rank pins itself: OpenBLAS's
/// workers inherit the CPU mask of the thread that starts it.
void startGemm();

/// Fails the job from inside a Comm with `reason` for the current op.
[[noreturn]] void failCurrent(loom_rt_ctx &ctx, const std::string &reason);

/// Resolves (and caches) the group of `mask` for ctx. With `withImpl` the
/// backend part is created too (collective over the group's members under
/// MPI), so only collectives pass true; queries pass false.
Group &getGroup(loom_rt_ctx &ctx, uint64_t mask, bool withImpl = true);

/// Fills dims/coords/rank of a context. Returns false if the shape is bad.
bool initContext(loom_rt_ctx &ctx, const std::vector<int64_t> &dims,
                 int64_t rank, std::string *error);

/// Runtime-internal point to point for the executor's pipeline schedules
/// (not in abi.h: generated code does not call them). Arguments are
/// validated like loom_rt_send / loom_rt_recv; failures fail the job (never
/// return), a wait is traced and counted as communication.
void isend(loom_rt_ctx *ctx, int32_t dtype, const void *buf, int64_t count,
           int64_t dst, int64_t tag, P2PRequest &req);
void irecv(loom_rt_ctx *ctx, int32_t dtype, void *buf, int64_t count,
           int64_t src, int64_t tag, P2PRequest &req);
void wait(loom_rt_ctx *ctx, P2PRequest &req);
/// Fails the job of ctx's rank with `reason` (never returns).
[[noreturn]] void failRank(loom_rt_ctx *ctx, const std::string &reason);

/// Whether ctx records a trace; adds a complete event to it.
bool tracing(const loom_rt_ctx *ctx);
void traceSpan(loom_rt_ctx *ctx, std::string name, const char *cat,
               int64_t startNs, int64_t endNs, std::string args = {});

/// Writes the trace of `ctxs` as Chrome JSON (pid 0, tid = rank).
void writeTrace(const std::string &path,
                const std::vector<const loom_rt_ctx *> &ctxs);

} // namespace loom::rt

#endif // LOOM_RUNTIME_COMM_H
