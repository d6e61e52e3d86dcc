//===- runtime/cuda/Device.cpp - devices, memory, modules, launch, graphs -===//
//
// The C ABI of include/loom/runtime/cuda.h over the driver table of
// Driver.cpp. Each entry point validates its arguments, makes the device's
// primary context current on the calling thread (a rank may run on any
// thread) and turns a driver error into a message naming the call.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/cuda.h"

#include "Device.h"
#include "Driver.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace loom::cuda;

namespace {

/// Driver or "no CUDA device" error.
const Driver *drv() {
  std::string err;
  const Driver *d = driver(&err);
  if (!d)
    setError(err);
  return d;
}

#define LOOM_CU(call, expr)                                                    \
  do {                                                                         \
    CUresult r_ = (expr);                                                      \
    if (r_ != kCudaSuccess)                                                    \
      return cuFail(call, r_);                                                 \
  } while (0)

int32_t current(loom_cuda_device *dev, const char *call) {
  if (!dev)
    return setError(std::string(call) + ": null device (open one with "
                                        "loom_cuda_open)");
  CUresult r = dev->drv->cuCtxSetCurrent(dev->ctx);
  if (r != kCudaSuccess)
    return cuFail(call, r);
  return 0;
}

CUstream cs(loom_cuda_stream s) { return static_cast<CUstream>(s); }

} // namespace

struct loom_cuda_module {
  loom_cuda_device *dev;
  CUmodule mod;
};

struct loom_cuda_graph {
  loom_cuda_device *dev;
  CUgraph graph;
  CUgraphExec exec;
};

struct loom_cuda_event {
  loom_cuda_device *dev;
  CUevent ev;
};

extern "C" {

int32_t loom_cuda_abi_version(void) { return LOOM_CUDA_ABI_VERSION; }

const char *loom_cuda_last_error(void) {
  static thread_local std::string copy;
  copy = lastErrorMessage();
  return copy.c_str();
}

int32_t loom_cuda_device_count(int32_t *count) {
  if (!count)
    return setError("loom_cuda_device_count: null count");
  *count = 0;
  const Driver *d = drv();
  if (!d)
    return -1;
  int n = 0;
  LOOM_CU("cuDeviceGetCount", d->cuDeviceGetCount(&n));
  *count = n;
  return ok();
}

int32_t loom_cuda_open(int32_t ordinal, loom_cuda_device **out) {
  if (!out)
    return setError("loom_cuda_open: null out");
  *out = nullptr;
  const Driver *d = drv();
  if (!d)
    return -1;
  int n = 0;
  LOOM_CU("cuDeviceGetCount", d->cuDeviceGetCount(&n));
  if (ordinal < 0 || ordinal >= n)
    return setError("no CUDA device: device " + std::to_string(ordinal) +
                    " does not exist (the driver reports " + std::to_string(n) +
                    " device(s))");
  auto dev = std::make_unique<loom_cuda_device>();
  dev->drv = d;
  dev->ordinal = ordinal;
  LOOM_CU("cuDeviceGet", d->cuDeviceGet(&dev->device, ordinal));
  LOOM_CU("cuDevicePrimaryCtxRetain",
          d->cuDevicePrimaryCtxRetain(&dev->ctx, dev->device));
  LOOM_CU("cuCtxSetCurrent", d->cuCtxSetCurrent(dev->ctx));
  int major = 0, minor = 0;
  LOOM_CU("cuDeviceGetAttribute",
          d->cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor,
                                  dev->device));
  LOOM_CU("cuDeviceGetAttribute",
          d->cuDeviceGetAttribute(&minor, kAttrComputeCapabilityMinor,
                                  dev->device));
  dev->sm = major * 10 + minor;
  char name[128] = {0};
  d->cuDeviceGetName(name, sizeof name - 1, dev->device);
  dev->name = name;
  *out = dev.release();
  return ok();
}

void loom_cuda_close(loom_cuda_device *dev) {
  if (!dev)
    return;
  dev->drv->cuCtxSetCurrent(dev->ctx);
  dev->drv->cuCtxSynchronize();
  for (auto &[key, handle] : dev->blas)
    destroyBlasHandle(handle);
  dev->drv->cuDevicePrimaryCtxRelease(dev->device);
  delete dev;
}

int32_t loom_cuda_free_memory(loom_cuda_device *dev, int64_t *freeBytes) {
  if (!freeBytes)
    return setError("loom_cuda_free_memory: null out");
  if (current(dev, "loom_cuda_free_memory"))
    return -1;
  const Driver *d = dev->drv;
  size_t free = 0, total = 0;
  if (d->cuMemGetInfo) {
    LOOM_CU("cuMemGetInfo", d->cuMemGetInfo(&free, &total));
  } else {
    LOOM_CU("cuDeviceTotalMem", d->cuDeviceTotalMem(&free, dev->device));
  }
  *freeBytes = int64_t(free);
  return ok();
}

int32_t loom_cuda_info(loom_cuda_device *dev, loom_cuda_device_info *info) {
  if (!info)
    return setError("loom_cuda_info: null info");
  if (current(dev, "loom_cuda_info"))
    return -1;
  std::memset(info, 0, sizeof *info);
  std::snprintf(info->name, sizeof info->name, "%s", dev->name.c_str());
  info->sm = dev->sm;
  const Driver *d = dev->drv;
  int sms = 0, memClockKHz = 0, busBits = 0, version = 0;
  d->cuDeviceGetAttribute(&sms, kAttrMultiprocessorCount, dev->device);
  d->cuDeviceGetAttribute(&memClockKHz, kAttrMemoryClockRate, dev->device);
  d->cuDeviceGetAttribute(&busBits, kAttrGlobalMemoryBusWidth, dev->device);
  d->cuDriverGetVersion(&version);
  size_t total = 0;
  d->cuDeviceTotalMem(&total, dev->device);
  info->multiprocessors = sms;
  info->total_memory = int64_t(total);
  // DDR/HBM: two transfers per clock.
  info->peak_bandwidth = 2.0 * memClockKHz * 1e3 * (busBits / 8.0);
  info->driver_version = version;
  return ok();
}

//===----------------------------------------------------------------------===//
// Memory and streams
//===----------------------------------------------------------------------===//

int32_t loom_cuda_malloc(loom_cuda_device *dev, int64_t bytes,
                         loom_cuda_ptr *out) {
  if (!out || bytes < 0)
    return setError("loom_cuda_malloc: null out or negative size");
  *out = 0;
  if (current(dev, "loom_cuda_malloc"))
    return -1;
  CUdeviceptr p = 0;
  CUresult r = dev->drv->cuMemAlloc(&p, size_t(bytes ? bytes : 1));
  if (r != kCudaSuccess)
    return setError("loom_cuda_malloc(" + std::to_string(bytes) +
                    " bytes) on device " + std::to_string(dev->ordinal) +
                    " failed: " + resultString(r));
  *out = p;
  return ok();
}

int32_t loom_cuda_free(loom_cuda_device *dev, loom_cuda_ptr ptr) {
  if (!ptr)
    return ok();
  if (current(dev, "loom_cuda_free"))
    return -1;
  LOOM_CU("cuMemFree", dev->drv->cuMemFree(ptr));
  return ok();
}

int32_t loom_cuda_copy_to_device(loom_cuda_device *dev, loom_cuda_ptr dst,
                                 const void *src, int64_t bytes,
                                 loom_cuda_stream stream) {
  if (bytes < 0 || (bytes && (!dst || !src)))
    return setError("loom_cuda_copy_to_device: null buffer or negative size");
  if (current(dev, "loom_cuda_copy_to_device"))
    return -1;
  if (!bytes)
    return ok();
  LOOM_CU("cuMemcpyHtoDAsync",
          dev->drv->cuMemcpyHtoDAsync(dst, src, size_t(bytes), cs(stream)));
  LOOM_CU("cuStreamSynchronize", dev->drv->cuStreamSynchronize(cs(stream)));
  return ok();
}

int32_t loom_cuda_copy_to_host(loom_cuda_device *dev, void *dst,
                               loom_cuda_ptr src, int64_t bytes,
                               loom_cuda_stream stream) {
  if (bytes < 0 || (bytes && (!dst || !src)))
    return setError("loom_cuda_copy_to_host: null buffer or negative size");
  if (current(dev, "loom_cuda_copy_to_host"))
    return -1;
  if (!bytes)
    return ok();
  LOOM_CU("cuMemcpyDtoHAsync",
          dev->drv->cuMemcpyDtoHAsync(dst, src, size_t(bytes), cs(stream)));
  LOOM_CU("cuStreamSynchronize", dev->drv->cuStreamSynchronize(cs(stream)));
  return ok();
}

int32_t loom_cuda_copy_device(loom_cuda_device *dev, loom_cuda_ptr dst,
                              loom_cuda_ptr src, int64_t bytes,
                              loom_cuda_stream stream) {
  if (bytes < 0 || (bytes && (!dst || !src)))
    return setError("loom_cuda_copy_device: null buffer or negative size");
  if (current(dev, "loom_cuda_copy_device"))
    return -1;
  if (bytes)
    LOOM_CU("cuMemcpyDtoDAsync",
            dev->drv->cuMemcpyDtoDAsync(dst, src, size_t(bytes), cs(stream)));
  return ok();
}

int32_t loom_cuda_memset(loom_cuda_device *dev, loom_cuda_ptr dst,
                         uint8_t value, int64_t bytes,
                         loom_cuda_stream stream) {
  if (bytes < 0 || (bytes && !dst))
    return setError("loom_cuda_memset: null buffer or negative size");
  if (current(dev, "loom_cuda_memset"))
    return -1;
  if (bytes)
    LOOM_CU("cuMemsetD8Async",
            dev->drv->cuMemsetD8Async(dst, value, size_t(bytes), cs(stream)));
  return ok();
}

int32_t loom_cuda_stream_create(loom_cuda_device *dev, loom_cuda_stream *out) {
  if (!out)
    return setError("loom_cuda_stream_create: null out");
  *out = nullptr;
  if (current(dev, "loom_cuda_stream_create"))
    return -1;
  CUstream s = nullptr;
  LOOM_CU("cuStreamCreate", dev->drv->cuStreamCreate(&s, kStreamNonBlocking));
  *out = s;
  return ok();
}

int32_t loom_cuda_stream_destroy(loom_cuda_device *dev,
                                 loom_cuda_stream stream) {
  if (!stream)
    return ok();
  if (current(dev, "loom_cuda_stream_destroy"))
    return -1;
  LOOM_CU("cuStreamDestroy", dev->drv->cuStreamDestroy(cs(stream)));
  return ok();
}

int32_t loom_cuda_stream_sync(loom_cuda_device *dev, loom_cuda_stream stream) {
  if (current(dev, "loom_cuda_stream_sync"))
    return -1;
  LOOM_CU("cuStreamSynchronize", dev->drv->cuStreamSynchronize(cs(stream)));
  return ok();
}

int32_t loom_cuda_event_create(loom_cuda_device *dev, loom_cuda_event **out) {
  if (!out)
    return setError("loom_cuda_event_create: null out");
  *out = nullptr;
  if (current(dev, "loom_cuda_event_create"))
    return -1;
  CUevent e = nullptr;
  LOOM_CU("cuEventCreate", dev->drv->cuEventCreate(&e, kEventDefault));
  *out = new loom_cuda_event{dev, e};
  return ok();
}

int32_t loom_cuda_event_record(loom_cuda_event *ev, loom_cuda_stream stream) {
  if (!ev)
    return setError("loom_cuda_event_record: null event");
  if (current(ev->dev, "loom_cuda_event_record"))
    return -1;
  LOOM_CU("cuEventRecord", ev->dev->drv->cuEventRecord(ev->ev, cs(stream)));
  return ok();
}

int32_t loom_cuda_event_elapsed_ms(loom_cuda_event *start, loom_cuda_event *end,
                                   float *ms) {
  if (!start || !end || !ms)
    return setError("loom_cuda_event_elapsed_ms: null argument");
  if (current(end->dev, "loom_cuda_event_elapsed_ms"))
    return -1;
  LOOM_CU("cuEventSynchronize", end->dev->drv->cuEventSynchronize(end->ev));
  LOOM_CU("cuEventElapsedTime",
          end->dev->drv->cuEventElapsedTime(ms, start->ev, end->ev));
  return ok();
}

void loom_cuda_event_destroy(loom_cuda_event *ev) {
  if (!ev)
    return;
  ev->dev->drv->cuCtxSetCurrent(ev->dev->ctx);
  ev->dev->drv->cuEventDestroy(ev->ev);
  delete ev;
}

//===----------------------------------------------------------------------===//
// Modules and kernels
//===----------------------------------------------------------------------===//

int32_t loom_cuda_cubin_sm(const void *image, int64_t size) {
  // ELF64 little-endian with e_machine EM_CUDA (190); the SM is in e_flags:
  // bits 0-7 for ELF ABI version < 8 (CUDA <= 12.x), bits 8-15 from 8 on.
  const auto *b = static_cast<const unsigned char *>(image);
  if (!b || size < 64 ||
      std::memcmp(b,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      b[4] != 2 || b[5] != 1)
    return -1;
  unsigned machine = b[18] | b[19] << 8;
  if (machine != 190)
    return -1;
  uint32_t flags = uint32_t(b[48]) | uint32_t(b[49]) << 8 |
                   uint32_t(b[50]) << 16 | uint32_t(b[51]) << 24;
  return b[8] >= 8 ? int32_t((flags >> 8) & 0xff) : int32_t(flags & 0xff);
}

int32_t loom_cuda_check_arch(int32_t cubinSm, int32_t deviceSm) {
  if (cubinSm / 10 == deviceSm / 10 && cubinSm % 10 <= deviceSm % 10)
    return ok();
  return setError("cubin is for sm_" + std::to_string(cubinSm) +
                  " but the device is sm_" + std::to_string(deviceSm) +
                  ": a cubin runs only on its own major architecture; "
                  "recompile the kernels with --chip=sm_" +
                  std::to_string(deviceSm));
}

int32_t loom_cuda_module_load(loom_cuda_device *dev, const void *image,
                              int64_t size, loom_cuda_module **out) {
  if (!out || !image || size <= 0)
    return setError("loom_cuda_module_load: null or empty image");
  *out = nullptr;
  if (current(dev, "loom_cuda_module_load"))
    return -1;
  int32_t sm = loom_cuda_cubin_sm(image, size);
  if (sm >= 0 && loom_cuda_check_arch(sm, dev->sm) != 0)
    return setError("loom_cuda_module_load on device " +
                    std::to_string(dev->ordinal) + " (" + dev->name +
                    "): " + lastErrorMessage());
  // cuModuleLoadData reads PTX as a NUL-terminated string: copy PTX text
  // that is not terminated.
  std::string ptx;
  const void *data = image;
  if (sm < 0 && static_cast<const char *>(image)[size - 1] != '\0') {
    ptx.assign(static_cast<const char *>(image), size_t(size));
    data = ptx.c_str();
  }
  CUmodule m = nullptr;
  CUresult r = dev->drv->cuModuleLoadData(&m, data);
  if (r != kCudaSuccess)
    return setError("loom_cuda_module_load on device " +
                    std::to_string(dev->ordinal) + " (" + dev->name + ", sm_" +
                    std::to_string(dev->sm) +
                    "): cuModuleLoadData failed: " + resultString(r));
  *out = new loom_cuda_module{dev, m};
  return ok();
}

int32_t loom_cuda_module_load_file(loom_cuda_device *dev, const char *path,
                                   loom_cuda_module **out) {
  if (!path)
    return setError("loom_cuda_module_load_file: null path");
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return setError(std::string("loom_cuda_module_load_file: cannot read '") +
                    path + "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                          std::istreambuf_iterator<char>());
  if (bytes.empty())
    return setError(std::string("loom_cuda_module_load_file: '") + path +
                    "' is empty");
  if (loom_cuda_module_load(dev, bytes.data(), int64_t(bytes.size()), out))
    return setError(std::string("'") + path + "': " + lastErrorMessage());
  return 0;
}

void loom_cuda_module_unload(loom_cuda_module *mod) {
  if (!mod)
    return;
  mod->dev->drv->cuCtxSetCurrent(mod->dev->ctx);
  mod->dev->drv->cuModuleUnload(mod->mod);
  delete mod;
}

int32_t loom_cuda_launch(loom_cuda_module *mod, const char *kernel,
                         const uint32_t grid[3], const uint32_t block[3],
                         uint32_t shared, loom_cuda_stream stream,
                         void **params) {
  if (!mod || !kernel || !grid || !block)
    return setError("loom_cuda_launch: null argument");
  if (current(mod->dev, "loom_cuda_launch"))
    return -1;
  CUfunction fn = nullptr;
  CUresult r = mod->dev->drv->cuModuleGetFunction(&fn, mod->mod, kernel);
  if (r != kCudaSuccess)
    return setError(std::string("loom_cuda_launch: no kernel '") + kernel +
                    "' in the module (" + resultString(r) + ")");
  r = mod->dev->drv->cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0],
                                    block[1], block[2], shared, cs(stream),
                                    params, nullptr);
  if (r != kCudaSuccess)
    return setError(std::string("loom_cuda_launch of '") + kernel +
                    "' failed: " + resultString(r));
  return ok();
}

int32_t loom_cuda_qmatmul(loom_cuda_module *mod, const char *base,
                          loom_cuda_ptr w, loom_cuda_ptr x, loom_cuda_ptr y,
                          int64_t m, int64_t n, loom_cuda_stream stream) {
  if (!base || m <= 0 || n <= 0 || m > (int64_t(1) << 30))
    return setError("loom_cuda_qmatmul: bad base name or sizes (m=" +
                    std::to_string(m) + ", n=" + std::to_string(n) + ")");
  std::string name = base;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  if (m <= LOOM_CUDA_QMM_GEMV_MAX_BATCH) {
    name += "_gemv" + std::to_string(m);
    grid[0] = uint32_t((n + LOOM_CUDA_QMM_GEMV_ROWS_PER_BLOCK - 1) /
                       LOOM_CUDA_QMM_GEMV_ROWS_PER_BLOCK);
    block[0] = LOOM_CUDA_QMM_GEMV_THREADS;
  } else {
    name += "_tiled";
    grid[0] = uint32_t((n + LOOM_CUDA_QMM_TILE - 1) / LOOM_CUDA_QMM_TILE);
    grid[1] = uint32_t((m + LOOM_CUDA_QMM_TILE - 1) / LOOM_CUDA_QMM_TILE);
    block[0] = LOOM_CUDA_QMM_TILED_THREADS;
  }
  int32_t m32 = int32_t(m);
  void *params[] = {&w, &x, &y, &m32};
  return loom_cuda_launch(mod, name.c_str(), grid, block, 0, stream, params);
}

//===----------------------------------------------------------------------===//
// CUDA graphs
//===----------------------------------------------------------------------===//

int32_t loom_cuda_graph_begin(loom_cuda_device *dev, loom_cuda_stream stream) {
  if (!stream)
    return setError("loom_cuda_graph_begin: capture needs a created stream, "
                    "not the default stream");
  if (current(dev, "loom_cuda_graph_begin"))
    return -1;
  LOOM_CU("cuStreamBeginCapture",
          dev->drv->cuStreamBeginCapture(cs(stream), kCaptureModeThreadLocal));
  return ok();
}

int32_t loom_cuda_graph_end(loom_cuda_device *dev, loom_cuda_stream stream,
                            loom_cuda_graph **out) {
  if (!out || !stream)
    return setError("loom_cuda_graph_end: null out or default stream");
  *out = nullptr;
  if (current(dev, "loom_cuda_graph_end"))
    return -1;
  CUgraph g = nullptr;
  LOOM_CU("cuStreamEndCapture", dev->drv->cuStreamEndCapture(cs(stream), &g));
  CUgraphExec e = nullptr;
  CUresult r = dev->drv->cuGraphInstantiateWithFlags(&e, g, 0);
  if (r != kCudaSuccess) {
    dev->drv->cuGraphDestroy(g);
    return cuFail("cuGraphInstantiateWithFlags", r);
  }
  *out = new loom_cuda_graph{dev, g, e};
  return ok();
}

int32_t loom_cuda_graph_launch(loom_cuda_graph *graph,
                               loom_cuda_stream stream) {
  if (!graph)
    return setError("loom_cuda_graph_launch: null graph");
  if (current(graph->dev, "loom_cuda_graph_launch"))
    return -1;
  LOOM_CU("cuGraphLaunch",
          graph->dev->drv->cuGraphLaunch(graph->exec, cs(stream)));
  return ok();
}

void loom_cuda_graph_destroy(loom_cuda_graph *graph) {
  if (!graph)
    return;
  graph->dev->drv->cuCtxSetCurrent(graph->dev->ctx);
  graph->dev->drv->cuGraphExecDestroy(graph->exec);
  graph->dev->drv->cuGraphDestroy(graph->graph);
  delete graph;
}

} // extern "C"
