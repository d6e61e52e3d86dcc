//===- runtime/cuda/Mgpu.cpp - the mgpu* ABI of MLIR's gpu-to-llvm --------===//
//
// MLIR's `gpu-to-llvm` turns gpu.launch_func, gpu.alloc, gpu.memcpy, ...
// into calls to mgpu* functions that upstream implements in
// libmlir_cuda_runtime.so, which Debian does not ship. These are Loom's,
// with upstream's signatures, over the same dlopen'ed driver: the host code
// of a GPU program links against libloom_runtime_cuda instead.
//
// Unlike upstream (which prints an error and carries on), a failure here is
// fatal with a message naming the call, as everywhere in the Loom runtime
// ABI: generated code does not check errors.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/cuda.h"

#include "../Comm.h"
#include "Device.h"
#include "Driver.h"
#include "StateTable.h"
#include "WorkspaceTable.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

using namespace loom::cuda;

namespace {

std::atomic<loom_cuda_fatal_fn> fatalHandler{nullptr};
std::atomic<int32_t> defaultOrdinal{0};
std::mutex devMu;
loom_cuda_device *devices[64] = {};

/// Prints the message and ends the process at once: _Exit, not exit, so
/// that no static destructor runs (MLIR's generated code unloads its
/// modules from one, which would call back into a runtime that just
/// failed).
[[noreturn]] void fatal(const char *call, const std::string &why) {
  std::string msg = std::string("loom-cuda: ") + call + " failed: " + why;
  if (loom_cuda_fatal_fn fn = fatalHandler.load())
    fn(msg.c_str());
  std::fprintf(stderr, "%s\n", msg.c_str());
  std::fflush(nullptr);
  std::_Exit(1);
}

/// The default device, opened on first use and current on this thread.
loom_cuda_device *dev(const char *call) {
  int32_t ord = defaultOrdinal.load();
  if (ord < 0 || ord >= 64)
    fatal(call, "device " + std::to_string(ord) + " is out of range");
  loom_cuda_device *d;
  std::string error;
  {
    std::lock_guard<std::mutex> lock(devMu);
    if (!devices[ord] && loom_cuda_open(ord, &devices[ord]) != 0)
      error = lastErrorMessage();
    d = devices[ord];
  }
  if (!d)
    fatal(call, error);
  CUresult r = d->drv->cuCtxSetCurrent(d->ctx);
  if (r != kCudaSuccess)
    fatal(call, "cuCtxSetCurrent: " + resultString(r));
  return d;
}

void check(const char *call, CUresult r) {
  if (r != kCudaSuccess)
    fatal(call, resultString(r));
}

CUstream cs(void *s) { return static_cast<CUstream>(s); }

//===----------------------------------------------------------------------===//
// CUDA graphs of entry calls (loom_cuda_mgpu_graph_begin)
//===----------------------------------------------------------------------===//

/// A page-locked buffer, kept for the (entry, rank) pair's next calls.
struct Pinned {
  void *p = nullptr;
  size_t bytes = 0;
};
struct GraphCache {
  CUgraphExec exec = nullptr;
  std::vector<Pinned> in, out; ///< by order of the copies in a call
  bool ran = false;            ///< the pair's first call ran as it is
};
std::mutex graphMu;
std::map<std::pair<const void *, const void *>, GraphCache> graphs;
std::atomic<int64_t> graphLaunches{0}, graphInstantiations{0}, graphUpdates{0};

/// This thread's armed call.
struct Session {
  GraphCache *cache = nullptr; ///< armed: capture the next stream
  CUstream stream = nullptr;   ///< being captured
  size_t nIn = 0, nOut = 0;
  struct Out {
    void *host;
    const void *staged;
    size_t bytes;
  };
  std::vector<Out> outs; ///< copied out after the launch
};
thread_local Session session;

/// The i-th page-locked buffer of `v`, at least `bytes` long.
void *pinnedBuffer(loom_cuda_device *d, std::vector<Pinned> &v, size_t i,
                   size_t bytes) {
  if (v.size() <= i)
    v.resize(i + 1);
  Pinned &b = v[i];
  if (b.bytes < bytes) {
    if (b.p)
      d->drv->cuMemFreeHost(b.p);
    void *p = nullptr;
    check("cuMemHostAlloc", d->drv->cuMemHostAlloc(&p, bytes ? bytes : 1, 0));
    b = {p, bytes};
  }
  return b.p;
}

/// Whether `p` is device or page-locked memory (else pageable host).
bool notPageable(loom_cuda_device *d, const void *p) {
  unsigned type = 0;
  return d->drv->cuPointerGetAttribute(&type, kPointerAttributeMemoryType,
                                       reinterpret_cast<CUdeviceptr>(p)) ==
         kCudaSuccess;
}

/// Ends the capture of `stream`, launches the graph and waits for it, then
/// copies the staged results out.
void launchCaptured(loom_cuda_device *d, CUstream stream) {
  Session &s = session;
  CUgraph g = nullptr;
  check("cuStreamEndCapture", d->drv->cuStreamEndCapture(stream, &g));
  GraphCache &c = *s.cache;
  bool updated = false;
  if (c.exec) {
    char info[64] = {}; // CUgraphExecUpdateResultInfo
    updated = d->drv->cuGraphExecUpdate(c.exec, g, info) == kCudaSuccess;
    if (!updated) {
      d->drv->cuGraphExecDestroy(c.exec);
      c.exec = nullptr;
    }
  }
  if (updated) {
    ++graphUpdates;
  } else {
    CUresult r = d->drv->cuGraphInstantiateWithFlags(&c.exec, g, 0);
    if (r != kCudaSuccess) {
      d->drv->cuGraphDestroy(g);
      fatal("cuGraphInstantiateWithFlags", resultString(r));
    }
    ++graphInstantiations;
  }
  d->drv->cuGraphDestroy(g);
  check("cuGraphLaunch", d->drv->cuGraphLaunch(c.exec, stream));
  ++graphLaunches;
  check("cuStreamSynchronize", d->drv->cuStreamSynchronize(stream));
  for (const Session::Out &o : s.outs)
    std::memcpy(o.host, o.staged, o.bytes);
  s = Session(); // the rest of the call runs as it is
}

} // namespace

extern "C" {

loom_cuda_fatal_fn loom_cuda_set_fatal_handler(loom_cuda_fatal_fn fn) {
  return fatalHandler.exchange(fn);
}

void mgpuSetDefaultDevice(int32_t device) { defaultOrdinal.store(device); }

void *mgpuModuleLoad(void *data, size_t size) {
  loom_cuda_device *d = dev("mgpuModuleLoad");
  // The size is 0 when the caller does not know it (upstream ignores it):
  // the ELF header check then reads at most the 64-byte header.
  int64_t n = size ? int64_t(size) : 64;
  int32_t sm = loom_cuda_cubin_sm(data, n);
  if (sm >= 0 && loom_cuda_check_arch(sm, d->sm) != 0)
    fatal("mgpuModuleLoad", "device " + std::to_string(d->ordinal) + " (" +
                                d->name + "): " + lastErrorMessage());
  CUmodule m = nullptr;
  check("mgpuModuleLoad", d->drv->cuModuleLoadData(&m, data));
  return m;
}

void *mgpuModuleLoadJIT(void *data, int /*optLevel*/) {
  // PTX: the driver compiles it for the device (optimisation level: the
  // driver's default).
  loom_cuda_device *d = dev("mgpuModuleLoadJIT");
  CUmodule m = nullptr;
  check("mgpuModuleLoadJIT", d->drv->cuModuleLoadData(&m, data));
  return m;
}

void mgpuModuleUnload(void *module) {
  loom_cuda_device *d = dev("mgpuModuleUnload");
  check("mgpuModuleUnload",
        d->drv->cuModuleUnload(static_cast<CUmodule>(module)));
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  loom_cuda_device *d = dev("mgpuModuleGetFunction");
  CUfunction f = nullptr;
  CUresult r =
      d->drv->cuModuleGetFunction(&f, static_cast<CUmodule>(module), name);
  if (r != kCudaSuccess)
    fatal("mgpuModuleGetFunction", std::string("kernel '") +
                                       (name ? name : "") +
                                       "': " + resultString(r));
  return f;
}

void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *stream, void **params, void **extra,
                      size_t /*paramCount*/) {
  loom_cuda_device *d = dev("mgpuLaunchKernel");
  check("mgpuLaunchKernel",
        d->drv->cuLaunchKernel(static_cast<CUfunction>(function), unsigned(gx),
                               unsigned(gy), unsigned(gz), unsigned(bx),
                               unsigned(by), unsigned(bz), unsigned(smem),
                               cs(stream), params, extra));
}

void *mgpuStreamCreate(void) {
  loom_cuda_device *d = dev("mgpuStreamCreate");
  CUstream s = nullptr;
  check("mgpuStreamCreate", d->drv->cuStreamCreate(&s, kStreamNonBlocking));
  if (session.cache && !session.stream) {
    check("cuStreamBeginCapture",
          d->drv->cuStreamBeginCapture(s, kCaptureModeRelaxed));
    session.stream = s;
  }
  return s;
}

void mgpuStreamDestroy(void *stream) {
  loom_cuda_device *d = dev("mgpuStreamDestroy");
  check("mgpuStreamDestroy", d->drv->cuStreamDestroy(cs(stream)));
}

void mgpuStreamSynchronize(void *stream) {
  loom_cuda_device *d = dev("mgpuStreamSynchronize");
  if (session.stream && session.stream == cs(stream))
    return launchCaptured(d, cs(stream));
  check("mgpuStreamSynchronize", d->drv->cuStreamSynchronize(cs(stream)));
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  loom_cuda_device *d = dev("mgpuStreamWaitEvent");
  check("mgpuStreamWaitEvent",
        d->drv->cuStreamWaitEvent(cs(stream), static_cast<CUevent>(event), 0));
}

void *mgpuEventCreate(void) {
  loom_cuda_device *d = dev("mgpuEventCreate");
  CUevent e = nullptr;
  // Timing off, as upstream: events only order streams.
  check("mgpuEventCreate", d->drv->cuEventCreate(&e, 0x2));
  return e;
}

void mgpuEventDestroy(void *event) {
  loom_cuda_device *d = dev("mgpuEventDestroy");
  check("mgpuEventDestroy",
        d->drv->cuEventDestroy(static_cast<CUevent>(event)));
}

void mgpuEventSynchronize(void *event) {
  loom_cuda_device *d = dev("mgpuEventSynchronize");
  check("mgpuEventSynchronize",
        d->drv->cuEventSynchronize(static_cast<CUevent>(event)));
}

void mgpuEventRecord(void *event, void *stream) {
  loom_cuda_device *d = dev("mgpuEventRecord");
  check("mgpuEventRecord",
        d->drv->cuEventRecord(static_cast<CUevent>(event), cs(stream)));
}

void *mgpuMemAlloc(uint64_t bytes, void * /*stream*/, bool isHostShared) {
  loom_cuda_device *d = dev("mgpuMemAlloc");
  CUdeviceptr p = 0;
  if (bytes == 0)
    return nullptr;
  CUresult r = isHostShared ? d->drv->cuMemAllocManaged(&p, bytes, 1)
                            : d->drv->cuMemAlloc(&p, bytes);
  if (r != kCudaSuccess)
    fatal("mgpuMemAlloc", std::to_string(bytes) + " bytes: " + resultString(r));
  return reinterpret_cast<void *>(p);
}

void mgpuMemFree(void *ptr, void * /*stream*/) {
  if (!ptr)
    return;
  loom_cuda_device *d = dev("mgpuMemFree");
  check("mgpuMemFree", d->drv->cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)));
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  loom_cuda_device *d = dev("mgpuMemcpy");
  if (session.stream && session.stream == cs(stream)) {
    // Captured: pageable host memory through the pair's page-locked
    // buffers (an input's bytes now, a result's after the launch).
    GraphCache &c = *session.cache;
    if (!notPageable(d, src)) {
      void *staged = pinnedBuffer(d, c.in, session.nIn++, bytes);
      std::memcpy(staged, src, bytes);
      src = staged;
    }
    if (!notPageable(d, dst)) {
      void *staged = pinnedBuffer(d, c.out, session.nOut++, bytes);
      session.outs.push_back({dst, staged, bytes});
      dst = staged;
    }
  }
  // Unified addressing: the driver infers the direction.
  check("mgpuMemcpy", d->drv->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                            reinterpret_cast<CUdeviceptr>(src),
                                            bytes, cs(stream)));
}

void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream) {
  loom_cuda_device *d = dev("mgpuMemset32");
  check("mgpuMemset32",
        d->drv->cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                 count, cs(stream)));
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  loom_cuda_device *d = dev("mgpuMemset16");
  check("mgpuMemset16",
        d->drv->cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                 count, cs(stream)));
}

namespace {
/// Device copies of host buffers that do not change between calls (weights,
/// constants), by host address and size, on the default device.
std::mutex residentMu;
std::map<std::pair<const void *, uint64_t>, CUdeviceptr> resident;
int64_t residentBytes = 0;
} // namespace

void *loom_cuda_mgpu_resident(void *host, int64_t bytes) {
  loom_cuda_device *d = dev("loom_cuda_mgpu_resident");
  if (bytes <= 0)
    return nullptr;
  std::lock_guard<std::mutex> lock(residentMu);
  auto key = std::make_pair(static_cast<const void *>(host), uint64_t(bytes));
  auto it = resident.find(key);
  if (it != resident.end())
    return reinterpret_cast<void *>(it->second);
  loom_cuda_ptr p = 0;
  if (loom_cuda_malloc(d, bytes, &p) != 0 ||
      loom_cuda_copy_to_device(d, p, host, bytes, nullptr) != 0)
    fatal("loom_cuda_mgpu_resident",
          std::to_string(bytes) + " bytes: " + lastErrorMessage());
  resident.emplace(key, p);
  residentBytes += bytes;
  return reinterpret_cast<void *>(p);
}

int64_t loom_cuda_mgpu_resident_bytes(void) {
  std::lock_guard<std::mutex> lock(residentMu);
  return residentBytes;
}

void loom_cuda_mgpu_release_resident(void) {
  std::lock_guard<std::mutex> lock(residentMu);
  if (!resident.empty()) {
    loom_cuda_device *d = dev("loom_cuda_mgpu_release_resident");
    for (auto &[key, p] : resident)
      loom_cuda_free(d, p);
  }
  resident.clear();
  residentBytes = 0;
}

namespace {
/// Device copies of state buffers (KV caches): mutable, one per host
/// address, made zero-filled by the first loom_cuda_mgpu_state. Never
/// destroyed (a static destructor at exit would call a driver that may be
/// gone; the executor releases them when it closes).
StateTable &stateTable() {
  static StateTable *table = new StateTable(StateOps{
      [](int64_t bytes, uint64_t *out, std::string *error) {
        loom_cuda_device *d = dev("loom_cuda_mgpu_state");
        loom_cuda_ptr p = 0;
        // Zeroed on the legacy stream and waited for: the program's
        // stream is non-blocking, so it must not start before the fill.
        if (loom_cuda_malloc(d, bytes, &p) != 0 ||
            loom_cuda_memset(d, p, 0, bytes, nullptr) != 0 ||
            loom_cuda_stream_sync(d, nullptr) != 0) {
          if (p)
            loom_cuda_free(d, p);
          *error = std::to_string(bytes) + " bytes: " + lastErrorMessage();
          return false;
        }
        *out = p;
        return true;
      },
      [](uint64_t p) {
        loom_cuda_free(dev("loom_cuda_mgpu_release_state"), p);
      },
      [](uint64_t dst, const void *src, int64_t bytes, std::string *error) {
        loom_cuda_device *d = dev("loom_cuda_mgpu_state_write");
        // (Synchronous: the copy waits for its stream.)
        if (loom_cuda_copy_to_device(d, dst, src, bytes, nullptr) != 0) {
          *error = lastErrorMessage();
          return false;
        }
        return true;
      },
      [](void *dst, uint64_t src, int64_t bytes, std::string *error) {
        loom_cuda_device *d = dev("loom_cuda_mgpu_state_read");
        if (loom_cuda_copy_to_host(d, dst, src, bytes, nullptr) != 0) {
          *error = lastErrorMessage();
          return false;
        }
        return true;
      }});
  return *table;
}
} // namespace

void *loom_cuda_mgpu_state(void *host, int64_t bytes) {
  std::string error;
  uint64_t p = stateTable().get(host, bytes, &error);
  if (!p)
    fatal("loom_cuda_mgpu_state", error);
  return reinterpret_cast<void *>(p);
}

void loom_cuda_mgpu_state_write(const void *host, int64_t bytes) {
  std::string error;
  if (!stateTable().write(host, bytes, &error))
    fatal("loom_cuda_mgpu_state_write", error);
}

void loom_cuda_mgpu_state_read(void *host, int64_t bytes) {
  std::string error;
  if (!stateTable().read(host, bytes, &error))
    fatal("loom_cuda_mgpu_state_read", error);
}

int64_t loom_cuda_mgpu_state_bytes(void) { return stateTable().bytes(); }

void loom_cuda_mgpu_release_state(const void *host) {
  if (host)
    stateTable().release(host);
  else
    stateTable().releaseAll();
}

namespace {
/// The entries' workspaces (the memory plan's buffers of a call), by the
/// address of a per-entry global. Never destroyed (as the state table).
WorkspaceTable &workspaceTable() {
  static WorkspaceTable *table = new WorkspaceTable(WorkspaceOps{
      [](int64_t bytes, uint64_t *out, std::string *error) {
        loom_cuda_device *d = dev("loom_cuda_mgpu_workspace");
        loom_cuda_ptr p = 0;
        if (loom_cuda_malloc(d, bytes, &p) != 0) {
          *error = std::to_string(bytes) + " bytes: " + lastErrorMessage();
          return false;
        }
        *out = p;
        return true;
      },
      [](uint64_t p) {
        loom_cuda_free(dev("loom_cuda_mgpu_release_workspace"), p);
      }});
  return *table;
}
} // namespace

void *loom_cuda_mgpu_workspace(const void *key, int64_t bytes) {
  std::string error;
  // One workspace per entry and rank: ranks sharing the device (threads of
  // this process) run the same entry at once.
  loom_rt_ctx *ctx = loom::rt::threadContext();
  uint64_t p =
      workspaceTable().get(key, bytes, &error, ctx ? loom_rt_rank(ctx) : -1);
  if (!p)
    fatal("loom_cuda_mgpu_workspace", error);
  return reinterpret_cast<void *>(p);
}

int64_t loom_cuda_mgpu_workspace_bytes(void) {
  return workspaceTable().bytes();
}

void loom_cuda_mgpu_release_workspace(void) { workspaceTable().releaseAll(); }

int32_t loom_cuda_mgpu_graph_begin(const void *entry, const void *rank) {
  loom_cuda_device *d = dev("loom_cuda_mgpu_graph_begin");
  const Driver *drv = d->drv;
  session = Session();
  if (!drv->cuGraphExecUpdate || !drv->cuMemHostAlloc || !drv->cuMemFreeHost ||
      !drv->cuPointerGetAttribute)
    return 0;
  std::lock_guard<std::mutex> lock(graphMu);
  GraphCache &c = graphs[{entry, rank}];
  if (!c.ran) {
    c.ran = true; // the first call allocates: not captured
    return 0;
  }
  session.cache = &c;
  return 1;
}

void loom_cuda_mgpu_graph_end(void) {
  if (session.stream)
    fatal("loom_cuda_mgpu_graph_end",
          "the entry call was captured into a CUDA graph but never "
          "synchronised its stream, so its work did not run");
  session = Session();
}

void loom_cuda_mgpu_graph_stats(int64_t *launches, int64_t *instantiations,
                                int64_t *updates) {
  if (launches)
    *launches = graphLaunches.load();
  if (instantiations)
    *instantiations = graphInstantiations.load();
  if (updates)
    *updates = graphUpdates.load();
}

void loom_cuda_mgpu_release_graphs(void) {
  std::lock_guard<std::mutex> lock(graphMu);
  if (graphs.empty())
    return;
  loom_cuda_device *d = dev("loom_cuda_mgpu_release_graphs");
  for (auto &[key, c] : graphs) {
    if (c.exec)
      d->drv->cuGraphExecDestroy(c.exec);
    for (auto *v : {&c.in, &c.out})
      for (Pinned &b : *v)
        if (b.p)
          d->drv->cuMemFreeHost(b.p);
  }
  graphs.clear();
}

void loom_cuda_mgpu_gemm(void *stream, int32_t dtype, int32_t transA,
                         int32_t transB, int64_t m, int64_t n, int64_t k,
                         void *a, void *b, void *c) {
  loom_cuda_device *d = dev("loom_cuda_mgpu_gemm");
  if (loom_cuda_gemm(d, dtype, transA, transB, m, n, k,
                     reinterpret_cast<loom_cuda_ptr>(a),
                     reinterpret_cast<loom_cuda_ptr>(b),
                     reinterpret_cast<loom_cuda_ptr>(c), stream) != 0)
    fatal("loom_cuda_mgpu_gemm", lastErrorMessage());
}
} // extern "C"
