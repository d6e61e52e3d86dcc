//===- runtime/Context.cpp - C ABI entry points -----------------*- C++ -*-===//
//
// Validates the arguments of every ABI call, resolves groups, records what
// the rank is doing (for failure messages), traces, and forwards to the
// rank's communicator.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "DType.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

using namespace loom::rt;

namespace loom::rt {

GroupImpl::~GroupImpl() = default;
Comm::~Comm() = default;

const char *dtypeName(int32_t dtype) {
  static const char *const names[] = {"f32", "f16", "bf16", "f64",
                                      "i8",  "i32", "i64",  "u8"};
  return dtype >= 0 && dtype < LOOM_RT_NUM_DTYPES ? names[dtype] : "?";
}

const char *reduceOpName(int32_t op) {
  static const char *const names[] = {"sum", "prod", "max", "min"};
  return op >= 0 && op < LOOM_RT_NUM_REDUCE_OPS ? names[op] : "?";
}

CommStats commStats(const loom_rt_ctx *ctx) {
  return {ctx->commNs, ctx->commCalls};
}

double defaultTimeoutSeconds() {
  if (const char *env = std::getenv("LOOM_COLLECTIVE_TIMEOUT_S")) {
    char *end = nullptr;
    double v = std::strtod(env, &end);
    if (end != env && v > 0)
      return v;
    std::fprintf(stderr,
                 "loom-rt: warning: ignoring LOOM_COLLECTIVE_TIMEOUT_S='%s' "
                 "(want a positive number of seconds)\n",
                 env);
  }
  return 60.0;
}

namespace {
thread_local loom_rt_ctx *CurrentCtx = nullptr;
} // namespace

loom_rt_ctx *threadContext() { return CurrentCtx; }
ThreadContextScope::ThreadContextScope(loom_rt_ctx *ctx) : saved(CurrentCtx) {
  CurrentCtx = ctx;
}
ThreadContextScope::~ThreadContextScope() { CurrentCtx = saved; }

std::string describeCall(const CollSig &s) {
  static const char *const kinds[] = {
      "?",          "barrier",        "all_reduce",
      "all_gather", "reduce_scatter", "all_to_all"};
  std::string d = kinds[s.kind >= 1 && s.kind <= 5 ? s.kind : 0];
  if (s.kind == kBarrier)
    return d;
  d += "(dtype=" + std::string(dtypeName(int32_t(s.dtype)));
  if (s.op >= 0)
    d += ", op=" + std::string(reduceOpName(int32_t(s.op)));
  if (s.kind == kAllReduce)
    d += ", count=" + std::to_string(s.count);
  else if (s.kind == kAllToAll)
    d += ", block=" + std::to_string(s.count);
  else
    d += ", outer=" + std::to_string(s.count) +
         ", inner=" + std::to_string(s.inner);
  return d + ")";
}

std::string collectiveMismatch(const std::vector<int64_t> &members,
                               const CollSig &mine, int64_t peer,
                               const CollSig &theirs) {
  std::string group;
  for (int64_t m : members)
    group += (group.empty() ? "" : ",") + std::to_string(m);
  return "collective mismatch in the group of ranks {" + group +
         "}: this rank called " + describeCall(mine) + " but rank " +
         std::to_string(peer) + " called " + describeCall(theirs) +
         " (every member must make the same collective calls in the same "
         "order)";
}

int64_t deadlineAfter(double seconds) {
  // 1e9 s (31 years), inf and anything larger: no deadline. int64(x * 1e9)
  // of a larger x is undefined (it wrapped to a deadline in the past).
  int64_t now = loom_rt_now_ns();
  if (!(seconds < 1e9))
    return INT64_MAX;
  return now + int64_t(std::max(0.0, seconds) * 1e9);
}

std::string formatFailure(const loom_rt_ctx &ctx, const std::string &reason) {
  std::ostringstream os;
  os << "loom-rt: rank " << ctx.rank;
  if (ctx.dims.size() > 1) {
    os << " (coords [";
    for (size_t i = 0; i < ctx.coords.size(); ++i)
      os << (i ? "," : "") << ctx.coords[i];
    os << "])";
  }
  const OpDesc &d = ctx.current;
  if (d.name && *d.name) {
    os << ": " << d.name << "(";
    const char *sep = "";
    // Each known field as `name=value`, comma-separated.
    auto field = [&](const char *name, auto value) {
      os << sep << name << "=" << value;
      sep = ", ";
    };
    if (d.dtype >= 0)
      field("dtype", dtypeName(d.dtype));
    if (d.op >= 0)
      field("op", reduceOpName(d.op));
    if (d.count >= 0)
      field("count", d.count);
    if (d.inner >= 0)
      field("inner", d.inner);
    if (d.peer >= 0)
      field("peer", d.peer);
    if (d.tag >= 0)
      field("tag", d.tag);
    if (d.hasMask) {
      uint64_t mask = d.mask;
      if (ctx.dims.size() < 64)
        mask &= (uint64_t(1) << ctx.dims.size()) - 1;
      char buf[32];
      std::snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)mask);
      os << sep << "axes_mask=" << buf;
    }
    os << ") failed";
  }
  os << ": " << reason;
  return os.str();
}

void failCurrent(loom_rt_ctx &ctx, const std::string &reason) {
  ctx.comm->fail(ctx, formatFailure(ctx, reason));
  __builtin_unreachable();
}

bool initContext(loom_rt_ctx &ctx, const std::vector<int64_t> &dims,
                 int64_t rank, std::string *error) {
  if (dims.size() > LOOM_RT_MAX_AXES) {
    *error = "mesh has " + std::to_string(dims.size()) + " axes (max " +
             std::to_string(LOOM_RT_MAX_AXES) + ")";
    return false;
  }
  int64_t world = 1;
  for (int64_t d : dims) {
    if (d <= 0) {
      *error = "mesh dimension " + std::to_string(d) + " is not positive";
      return false;
    }
    world *= d;
  }
  if (rank < 0 || rank >= world) {
    *error = "rank " + std::to_string(rank) + " outside a mesh of " +
             std::to_string(world) + " ranks";
    return false;
  }
  ctx.dims = dims;
  ctx.worldSize = world;
  ctx.rank = rank;
  ctx.coords.assign(dims.size(), 0);
  int64_t r = rank;
  for (int i = int(dims.size()) - 1; i >= 0; --i) {
    ctx.coords[i] = r % dims[i];
    r /= dims[i];
  }
  return true;
}

Group &getGroup(loom_rt_ctx &ctx, uint64_t mask, bool withImpl) {
  int nd = int(ctx.dims.size());
  if (nd < 64)
    mask &= (uint64_t(1) << nd) - 1;
  auto it = ctx.groups.find(mask);
  if (it != ctx.groups.end()) {
    Group &g = *it->second;
    if (withImpl && !g.impl)
      g.impl = ctx.comm->createGroup(ctx, g);
    return g;
  }

  auto g = std::make_unique<Group>();
  g->mask = mask;
  std::vector<int> axes;
  for (int a = 0; a < nd; ++a)
    if (mask & (uint64_t(1) << a))
      axes.push_back(a);
  int64_t p = 1, idx = 0;
  for (int a : axes) {
    p *= ctx.dims[a];
    idx = idx * ctx.dims[a] + ctx.coords[a];
  }
  g->size = p;
  g->index = idx;
  g->members.resize(p);
  std::vector<int64_t> c = ctx.coords;
  for (int64_t j = 0; j < p; ++j) {
    int64_t r = j;
    for (int k = int(axes.size()) - 1; k >= 0; --k) {
      c[axes[k]] = r % ctx.dims[axes[k]];
      r /= ctx.dims[axes[k]];
    }
    int64_t gr = 0;
    for (int a = 0; a < nd; ++a)
      gr = gr * ctx.dims[a] + c[a];
    g->members[j] = gr;
  }
  if (withImpl)
    g->impl = ctx.comm->createGroup(ctx, *g);
  Group &ref = *g;
  ctx.groups.emplace(mask, std::move(g));
  return ref;
}

void writeTrace(const std::string &path,
                const std::vector<const loom_rt_ctx *> &ctxs) {
  std::ofstream os(path);
  if (!os) {
    std::fprintf(stderr, "loom-rt: cannot write trace '%s': %s\n", path.c_str(),
                 std::strerror(errno));
    return;
  }
  os << "{\"traceEvents\":[\n";
  bool first = true;
  for (const loom_rt_ctx *c : ctxs) {
    for (const TraceEvent &e : c->trace) {
      os << (first ? "" : ",\n") << "{\"name\":\"";
      for (const char *s = e.name; *s; ++s)
        if (*s == '"' || *s == '\\')
          os << '\\' << *s;
        else if (unsigned(*s) >= 0x20)
          os << *s;
      os << "\",\"ph\":\"" << e.phase << "\",\"pid\":0,\"tid\":" << c->rank
         << ",\"ts\":" << (e.ns / 1000) << "." << ((e.ns % 1000) / 100) << "}";
      first = false;
    }
  }
  // Complete events (the pipeline schedule): microsecond times with
  // three decimals, the arguments as written.
  for (const loom_rt_ctx *c : ctxs) {
    for (const TraceSpan &e : c->spans) {
      os << (first ? "" : ",\n") << "{\"name\":\"";
      for (char ch : e.name)
        if (ch == '"' || ch == '\\')
          os << '\\' << ch;
        else if (unsigned(ch) >= 0x20)
          os << ch;
      char ts[64], dur[64];
      std::snprintf(ts, sizeof(ts), "%.3f", double(e.startNs) / 1000.0);
      std::snprintf(dur, sizeof(dur), "%.3f",
                    double(e.endNs - e.startNs) / 1000.0);
      os << "\",\"cat\":\"" << e.cat
         << "\",\"ph\":\"X\",\"pid\":0,\"tid\":" << c->rank << ",\"ts\":" << ts
         << ",\"dur\":" << dur;
      if (!e.args.empty())
        os << ",\"args\":" << e.args;
      os << "}";
      first = false;
    }
  }
  os << "\n]}\n";
}

} // namespace loom::rt

//===----------------------------------------------------------------------===//
// C ABI
//===----------------------------------------------------------------------===//

namespace {

// Marks the op being executed; traces it when tracing is on.
struct OpScope {
  loom_rt_ctx &ctx;
  int64_t start;
  OpScope(loom_rt_ctx &c, const OpDesc &d) : ctx(c), start(loom_rt_now_ns()) {
    ctx.current = d;
    if (ctx.tracing)
      ctx.trace.push_back({d.name, start, 'B'});
    ctx.comm->poll(ctx);
  }
  ~OpScope() {
    int64_t end = loom_rt_now_ns();
    ctx.commNs += end - start;
    ++ctx.commCalls;
    if (ctx.tracing)
      ctx.trace.push_back({ctx.current.name, end, 'E'});
    ctx.current = OpDesc();
  }
};

OpDesc desc(const char *name, int32_t dtype, int32_t op, int64_t count,
            uint64_t mask, bool hasMask = true) {
  OpDesc d;
  d.name = name;
  d.dtype = dtype;
  d.op = op;
  d.count = count;
  d.mask = mask;
  d.hasMask = hasMask;
  return d;
}

void checkDtype(loom_rt_ctx &ctx, int32_t dtype) {
  if (dtypeSize(dtype) == 0)
    failCurrent(ctx, "invalid dtype " + std::to_string(dtype));
}
void checkOp(loom_rt_ctx &ctx, int32_t op) {
  if (op < 0 || op >= LOOM_RT_NUM_REDUCE_OPS)
    failCurrent(ctx, "invalid reduce op " + std::to_string(op));
}
void checkCount(loom_rt_ctx &ctx, int64_t n, const char *what) {
  if (n < 0)
    failCurrent(ctx, std::string("negative ") + what + " " + std::to_string(n));
}
void checkPtr(loom_rt_ctx &ctx, const void *p, int64_t n, const char *what) {
  if (!p && n > 0)
    failCurrent(ctx, std::string("null ") + what + " buffer");
}
void checkPeer(loom_rt_ctx &ctx, int64_t peer, int64_t tag) {
  if (peer < 0 || peer >= ctx.worldSize)
    failCurrent(ctx, "peer rank " + std::to_string(peer) +
                         " outside the world of " +
                         std::to_string(ctx.worldSize) + " ranks");
  if (tag < 0 || tag > 32767)
    failCurrent(ctx, "tag " + std::to_string(tag) + " outside [0, 32767]");
}

} // namespace

extern "C" {

int32_t loom_rt_abi_version(void) { return LOOM_RT_ABI_VERSION; }

int64_t loom_rt_dtype_size(int32_t dtype) { return dtypeSize(dtype); }

int64_t loom_rt_rank(loom_rt_ctx *ctx) { return ctx->rank; }
int64_t loom_rt_world_size(loom_rt_ctx *ctx) { return ctx->worldSize; }
int32_t loom_rt_mesh_rank(loom_rt_ctx *ctx) {
  return int32_t(ctx->dims.size());
}
int64_t loom_rt_mesh_dim(loom_rt_ctx *ctx, int32_t axis) {
  return axis >= 0 && axis < int32_t(ctx->dims.size()) ? ctx->dims[axis] : 1;
}
int64_t loom_rt_coord(loom_rt_ctx *ctx, int32_t axis) {
  return axis >= 0 && axis < int32_t(ctx->coords.size()) ? ctx->coords[axis]
                                                         : 0;
}
int64_t loom_rt_group_size(loom_rt_ctx *ctx, uint64_t axes_mask) {
  return getGroup(*ctx, axes_mask, /*withImpl=*/false).size;
}
int64_t loom_rt_group_index(loom_rt_ctx *ctx, uint64_t axes_mask) {
  return getGroup(*ctx, axes_mask, /*withImpl=*/false).index;
}

void loom_rt_all_reduce(loom_rt_ctx *ctx, int32_t dtype, int32_t op,
                        const void *in, void *out, int64_t count,
                        uint64_t axes_mask) {
  OpScope s(*ctx, desc("all_reduce", dtype, op, count, axes_mask));
  checkDtype(*ctx, dtype);
  checkOp(*ctx, op);
  checkCount(*ctx, count, "count");
  checkPtr(*ctx, in, count, "input");
  checkPtr(*ctx, out, count, "output");
  Group &g = getGroup(*ctx, axes_mask);
  ctx->comm->allReduce(*ctx, g, dtype, op, in, out, count);
}

void loom_rt_all_gather(loom_rt_ctx *ctx, int32_t dtype, const void *in,
                        void *out, int64_t outer, int64_t inner,
                        uint64_t axes_mask) {
  OpDesc d = desc("all_gather", dtype, -1, outer, axes_mask);
  d.inner = inner;
  OpScope s(*ctx, d);
  checkDtype(*ctx, dtype);
  checkCount(*ctx, outer, "outer");
  checkCount(*ctx, inner, "inner");
  checkPtr(*ctx, in, outer * inner, "input");
  checkPtr(*ctx, out, outer * inner, "output");
  Group &g = getGroup(*ctx, axes_mask);
  ctx->comm->allGather(*ctx, g, dtype, in, out, outer, inner);
}

void loom_rt_reduce_scatter(loom_rt_ctx *ctx, int32_t dtype, int32_t op,
                            const void *in, void *out, int64_t outer,
                            int64_t inner, uint64_t axes_mask) {
  OpDesc d = desc("reduce_scatter", dtype, op, outer, axes_mask);
  d.inner = inner;
  OpScope s(*ctx, d);
  checkDtype(*ctx, dtype);
  checkOp(*ctx, op);
  checkCount(*ctx, outer, "outer");
  checkCount(*ctx, inner, "inner");
  checkPtr(*ctx, in, outer * inner, "input");
  checkPtr(*ctx, out, outer * inner, "output");
  Group &g = getGroup(*ctx, axes_mask);
  ctx->comm->reduceScatter(*ctx, g, dtype, op, in, out, outer, inner);
}

void loom_rt_all_to_all(loom_rt_ctx *ctx, int32_t dtype, const void *in,
                        void *out, int64_t block, uint64_t axes_mask) {
  OpScope s(*ctx, desc("all_to_all", dtype, -1, block, axes_mask));
  checkDtype(*ctx, dtype);
  checkCount(*ctx, block, "block");
  checkPtr(*ctx, in, block, "input");
  checkPtr(*ctx, out, block, "output");
  Group &g = getGroup(*ctx, axes_mask);
  ctx->comm->allToAll(*ctx, g, dtype, in, out, block);
}

void loom_rt_barrier(loom_rt_ctx *ctx, uint64_t axes_mask) {
  OpScope s(*ctx, desc("barrier", -1, -1, -1, axes_mask));
  Group &g = getGroup(*ctx, axes_mask);
  ctx->comm->barrier(*ctx, g);
}

void loom_rt_send(loom_rt_ctx *ctx, int32_t dtype, const void *buf,
                  int64_t count, int64_t dst_global_rank, int64_t tag) {
  OpDesc d = desc("send", dtype, -1, count, 0, false);
  d.peer = dst_global_rank;
  d.tag = tag;
  OpScope s(*ctx, d);
  checkDtype(*ctx, dtype);
  checkCount(*ctx, count, "count");
  checkPtr(*ctx, buf, count, "send");
  checkPeer(*ctx, dst_global_rank, tag);
  ctx->comm->send(*ctx, dtype, buf, count, dst_global_rank, tag);
}

void loom_rt_recv(loom_rt_ctx *ctx, int32_t dtype, void *buf, int64_t count,
                  int64_t src_global_rank, int64_t tag) {
  OpDesc d = desc("recv", dtype, -1, count, 0, false);
  d.peer = src_global_rank;
  d.tag = tag;
  OpScope s(*ctx, d);
  checkDtype(*ctx, dtype);
  checkCount(*ctx, count, "count");
  checkPtr(*ctx, buf, count, "receive");
  checkPeer(*ctx, src_global_rank, tag);
  ctx->comm->recv(*ctx, dtype, buf, count, src_global_rank, tag);
}

void loom_rt_sendrecv(loom_rt_ctx *ctx, int32_t dtype, const void *send_buf,
                      int64_t send_count, int64_t dst_global_rank,
                      void *recv_buf, int64_t recv_count,
                      int64_t src_global_rank, int64_t tag) {
  OpDesc d = desc("sendrecv", dtype, -1, send_count, 0, false);
  d.peer = dst_global_rank;
  d.tag = tag;
  OpScope s(*ctx, d);
  checkDtype(*ctx, dtype);
  checkCount(*ctx, send_count, "send count");
  checkCount(*ctx, recv_count, "receive count");
  checkPtr(*ctx, send_buf, send_count, "send");
  checkPtr(*ctx, recv_buf, recv_count, "receive");
  checkPeer(*ctx, dst_global_rank, tag);
  checkPeer(*ctx, src_global_rank, tag);
  ctx->comm->sendRecv(*ctx, dtype, send_buf, send_count, dst_global_rank,
                      recv_buf, recv_count, src_global_rank, tag);
}

const void *loom_rt_weight(loom_rt_ctx *ctx, int64_t index) {
  if (index < 0 || index >= int64_t(ctx->weights.size()) ||
      !ctx->weights[index]) {
    ctx->current = desc("weight", -1, -1, index, 0, false);
    failCurrent(*ctx, "weight " + std::to_string(index) +
                          " is not registered on this rank (" +
                          std::to_string(ctx->weights.size()) +
                          " slots registered)");
  }
  return ctx->weights[index];
}

void loom_rt_ctx_set_weight(loom_rt_ctx *ctx, int64_t index, const void *ptr) {
  if (index < 0) {
    ctx->current = desc("set_weight", -1, -1, index, 0, false);
    failCurrent(*ctx, "negative weight index");
  }
  if (index >= int64_t(ctx->weights.size()))
    ctx->weights.resize(index + 1, nullptr);
  ctx->weights[index] = ptr;
}

int32_t loom_rt_ctx_map_weight(loom_rt_ctx *ctx, int64_t index,
                               const char *path, int64_t offset, int64_t size,
                               char *err, int64_t err_size) {
  std::string error;
  if (mapWeight(ctx, index, path ? path : "", offset, size, &error))
    return 0;
  if (err && err_size > 0) {
    size_t n = std::min<size_t>(error.size(), size_t(err_size - 1));
    std::memcpy(err, error.data(), n);
    err[n] = 0;
  }
  return -1;
}

void loom_rt_abort(loom_rt_ctx *ctx, const char *msg) {
  ctx->current = OpDesc();
  ctx->comm->fail(
      *ctx, formatFailure(*ctx, std::string("aborted by loom_rt_abort: ") +
                                    (msg ? msg : "(no message)")));
  __builtin_unreachable();
}

void *loom_rt_malloc(int64_t bytes) {
  void *p = std::malloc(size_t(bytes > 0 ? bytes : 0));
  if (p || bytes <= 0)
    return p;
  std::string why = "out of memory: malloc of " + std::to_string(bytes) +
                    " bytes for a buffer of the generated code failed";
  if (loom_rt_ctx *ctx = threadContext()) {
    ctx->current = OpDesc();
    ctx->comm->fail(*ctx, formatFailure(*ctx, why));
  }
  std::fprintf(stderr, "loom-rt: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void loom_rt_index_error(loom_rt_ctx *ctx, const char *input, int64_t index,
                         int64_t lo, int64_t hi, const char *op) {
  std::string why = std::string(input ? input : "?") + ": id " +
                    std::to_string(index) + " out of range [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + ") in " +
                    (op ? op : "?");
  // Null from a function without the entry's context (a private function
  // the entry calls): the rank running on this thread.
  if (!ctx)
    ctx = threadContext();
  if (ctx) {
    ctx->current = OpDesc();
    ctx->comm->fail(*ctx, formatFailure(*ctx, why));
  }
  std::fprintf(stderr, "loom-rt: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void loom_rt_set_timeout(loom_rt_ctx *ctx, double seconds) {
  ctx->timeoutSeconds = seconds > 0 ? seconds : defaultTimeoutSeconds();
}
double loom_rt_get_timeout(loom_rt_ctx *ctx) { return ctx->timeoutSeconds; }

void loom_rt_trace_begin(loom_rt_ctx *ctx, const char *name) {
  if (ctx->tracing)
    ctx->trace.push_back({name ? name : "?", loom_rt_now_ns(), 'B'});
}
void loom_rt_trace_end(loom_rt_ctx *ctx, const char *name) {
  if (ctx->tracing)
    ctx->trace.push_back({name ? name : "?", loom_rt_now_ns(), 'E'});
}

int64_t loom_rt_now_ns(void) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Runtime-internal point to point and trace spans (Comm.h)
//===----------------------------------------------------------------------===//

namespace loom::rt {

P2PImpl::~P2PImpl() = default;

namespace {

/// Like OpScope, without the B/E trace events: the executor traces its
/// transfers as complete events with the schedule's names.
struct P2PScope {
  loom_rt_ctx &ctx;
  int64_t start;
  P2PScope(loom_rt_ctx &c, const char *name, int32_t dtype, int64_t count,
           int64_t peer, int64_t tag)
      : ctx(c), start(loom_rt_now_ns()) {
    OpDesc d = desc(name, dtype, -1, count, 0, false);
    d.peer = peer;
    d.tag = tag;
    ctx.current = d;
    ctx.comm->poll(ctx);
    checkDtype(ctx, dtype);
    checkCount(ctx, count, "count");
    checkPeer(ctx, peer, tag);
  }
  ~P2PScope() {
    ctx.commNs += loom_rt_now_ns() - start;
    ++ctx.commCalls;
    ctx.current = OpDesc();
  }
};

} // namespace

namespace {
/// Fills a request that is not in flight (failing the rank if it is).
void startRequest(loom_rt_ctx &ctx, P2PRequest &req, bool isSend, int32_t dtype,
                  void *buf, int64_t count, int64_t peer, int64_t tag) {
  if (req.active)
    failCurrent(ctx, "the request is still in flight (wait for it first)");
  req = P2PRequest();
  req.active = true;
  req.isSend = isSend;
  req.dtype = dtype;
  req.buf = buf;
  req.count = count;
  req.peer = peer;
  req.tag = tag;
}
} // namespace

void isend(loom_rt_ctx *ctx, int32_t dtype, const void *buf, int64_t count,
           int64_t dst, int64_t tag, P2PRequest &req) {
  P2PScope s(*ctx, "isend", dtype, count, dst, tag);
  checkPtr(*ctx, buf, count, "send");
  startRequest(*ctx, req, /*isSend=*/true, dtype, nullptr, count, dst, tag);
  ctx->comm->isend(*ctx, dtype, buf, count, dst, tag, req);
}

void irecv(loom_rt_ctx *ctx, int32_t dtype, void *buf, int64_t count,
           int64_t src, int64_t tag, P2PRequest &req) {
  P2PScope s(*ctx, "irecv", dtype, count, src, tag);
  checkPtr(*ctx, buf, count, "receive");
  startRequest(*ctx, req, /*isSend=*/false, dtype, buf, count, src, tag);
  ctx->comm->irecv(*ctx, dtype, buf, count, src, tag, req);
}

void wait(loom_rt_ctx *ctx, P2PRequest &req) {
  if (!req.active)
    return;
  P2PScope s(*ctx, req.isSend ? "wait(isend)" : "wait(irecv)", req.dtype,
             req.count, req.peer, req.tag);
  ctx->comm->wait(*ctx, req);
  req.active = false;
  req.impl.reset();
}

void failRank(loom_rt_ctx *ctx, const std::string &reason) {
  ctx->current = OpDesc();
  ctx->comm->fail(*ctx, formatFailure(*ctx, reason));
  __builtin_unreachable();
}

bool tracing(const loom_rt_ctx *ctx) { return ctx->tracing; }

void traceSpan(loom_rt_ctx *ctx, std::string name, const char *cat,
               int64_t startNs, int64_t endNs, std::string args) {
  if (ctx->tracing)
    ctx->spans.push_back(
        {std::move(name), cat, startNs, endNs, std::move(args)});
}

} // namespace loom::rt
