//===- test/gpu/emu/cuda_emulator.cpp - a CUDA driver that computes on the CPU
//===//
//
// libloom_cuda_emu.so: the CUDA driver ABI that runtime/cuda dlopens
// (LOOM_CUDA_DRIVER) and cuBLAS's cublasGemmEx (LOOM_CUBLAS), implemented
// on the CPU so that a whole `loomc --target=cuda --gpu-emulate` bundle
// runs with numbers where no GPU is (docs/GPU.md, "Emulation on the CPU").
// Unlike the recording fake (test/gpu/program/fake_cuda_driver.c), every
// call does what the device would: device memory is host memory, copies
// and memsets copy and set, streams run in order at once, and a kernel
// launch runs the kernel for every thread of every block, one after the
// other:
//  - kernels of an emulation image ("LOOMEMU1\0<module>\0", made by
//    loom-gpu-emulate-kernels) are host functions of the library that
//    holds the image, `__loom_emu_<module>__<kernel>(params, ctx)`;
//  - the generated quantized matmuls (`loom_qmm_*`) are computed from
//    their names (format, block, mode, scale, N, K, activations) over
//    test/gpu/QuantReference.h's dequantizer; their thread-level
//    arithmetic is checked by the gpu.emulation tests;
//  - cublasGemmEx is a plain column-major product with f32 accumulation;
//  - stream capture records the stream's work and a graph launch replays
//    it.
// A cubin, fatbin or PTX image loads, but launching one of its kernels is
// an error naming it (CUDA_ERROR_NOT_SUPPORTED). What this cannot show is
// anything of the NVPTX code itself (instruction selection, shuffles,
// shared memory, timing): that is scripts/gpu-check.sh's, on a device.
//
// Set LOOM_CUDA_EMU_TRACE=1 to print every launch on stderr.
//
//===----------------------------------------------------------------------===//

#include "loom/Support/QuantFormat.h"
#include "loom/runtime/cuda.h"
#include "test/gpu/QuantReference.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using CUresult = int;
using CUdeviceptr = uintptr_t;

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kInvalidImage = 200;
constexpr CUresult kNotFound = 500;
constexpr CUresult kNotSupported = 801;
constexpr CUresult kCaptureUnsupported = 900;
constexpr CUresult kCaptureInvalidated = 901;
constexpr CUresult kGraphUpdateFailure = 910;

/// f16 <-> f32 as the device converts (cvt.rn: round to nearest even,
/// subnormals kept): the compiler's _Float16.
float fromF16(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return float(v);
}
uint16_t toF16(float f) {
  _Float16 v = _Float16(f);
  uint16_t h;
  std::memcpy(&h, &v, 2);
  return h;
}

std::recursive_mutex mu;

/// Streams run their work at once, except while captured: then it is
/// recorded for the graph.
struct Graph {
  std::vector<std::function<void()>> work;
};
struct Stream {
  Graph *capture = nullptr;
  bool relaxed = false; ///< CU_STREAM_CAPTURE_MODE_RELAXED
};
Stream nullStream;
/// Streams being captured in the global or thread-local mode (while one
/// is, this thread may not allocate; relaxed captures do not count).
thread_local int capturing = 0;
/// Page-locked host memory (cuMemHostAlloc): the only host memory a copy
/// may touch while captured (a pageable copy is synchronous on a device).
std::map<uintptr_t, size_t> pinned;
bool isPinned(const void *p, size_t n) {
  auto a = uintptr_t(p);
  auto it = pinned.upper_bound(a);
  if (it == pinned.begin())
    return false;
  --it;
  return a + n <= it->first + it->second;
}
CUresult refuse(CUresult r, const std::string &why) {
  std::fprintf(stderr, "loom-cuda-emulator: %s\n", why.c_str());
  return r;
}

Stream *streamOf(void *s) { return s ? static_cast<Stream *>(s) : &nullStream; }

/// Runs `work` on stream `s` (now, or into the graph being captured).
CUresult enqueue(void *s, std::function<void()> work) {
  Stream *st = streamOf(s);
  if (st->capture)
    st->capture->work.push_back(std::move(work));
  else
    work();
  return kSuccess;
}

struct QmmSpec {
  loom::gpu::ref::Format format;
  bool halfAct = false;
};

/// The single-device communicator's reduction (runtime/cuda/
/// CudaDeviceOps.cpp, reduceKernelPtx): its PTX begins with
/// "// loom_reduce: <dtype> <op>".
struct ReduceSpec {
  std::string dtype, op;
};

struct Function {
  std::string name;
  void (*host)(void **, int64_t *) = nullptr; ///< an emulated kernel
  /// [n, bytes of each parameter] (loom-gpu-emulate-launchers).
  const int64_t *paramSizes = nullptr;
  bool qmm = false;
  QmmSpec spec;
  bool reduce = false;
  ReduceSpec reduceSpec;
};

struct Module {
  void *library = nullptr; ///< the library holding an emulation image
  std::string name;        ///< its gpu.module; empty: a cubin/PTX image
  bool reduce = false;     ///< the communicator's reduction PTX
  ReduceSpec reduceSpec;
  /// By name: the host code asks for a kernel's function at every launch.
  std::map<std::string, std::unique_ptr<Function>> functions;
};

bool trace() {
  static const bool on = [] {
    const char *e = std::getenv("LOOM_CUDA_EMU_TRACE");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  return on;
}

/// Parses `loom_qmm_<format>[_b<block>_<mode>_<scale>]_n<N>_k<K>_<act>_
/// (gemv<M>|tiled)` (QMatmulKernelGen's kernelBaseName).
bool parseQmm(std::string name, QmmSpec &out) {
  if (name.rfind("loom_qmm_", 0) != 0)
    return false;
  name = name.substr(9);
  auto cut = [&](std::string &rest) {
    size_t at = rest.rfind('_');
    if (at == std::string::npos)
      return std::string();
    std::string tail = rest.substr(at + 1);
    rest.resize(at);
    return tail;
  };
  std::string kind = cut(name);
  if (kind != "tiled" && kind.rfind("gemv", 0) != 0)
    return false;
  std::string act = cut(name), k = cut(name), n = cut(name);
  if (act != "f32" && act != "f16")
    return false;
  if (k.size() < 2 || k[0] != 'k' || n.size() < 2 || n[0] != 'n')
    return false;
  loom::gpu::ref::Format &f = out.format;
  f.act = act;
  f.n = std::atoll(n.c_str() + 1);
  f.k = std::atoll(k.c_str() + 1);
  out.halfAct = act == "f16";
  auto gguf = loom::quant::parseFormat(name);
  if (gguf && loom::quant::isGgufFormat(*gguf)) {
    f.format = name;
    f.block = 32;
    f.scale = "f16";
    f.mode =
        std::string(loom::quant::modeName(loom::quant::defaultMode(*gguf)));
    return f.n > 0 && f.k > 0;
  }
  std::string scale = cut(name), mode = cut(name), block = cut(name);
  auto m = loom::quant::parseMode(mode);
  auto fmt = loom::quant::parseFormat(name);
  if (!m || !fmt || block.size() < 2 || block[0] != 'b')
    return false;
  f.format = name;
  f.mode = std::string(loom::quant::modeName(*m));
  f.scale = scale;
  f.block = std::atoll(block.c_str() + 1);
  return f.n > 0 && f.k > 0 && f.block > 0 && f.k % f.block == 0;
}

/// Device allocations (base -> bytes), and the dequantized weights of the
/// quantized matmuls by their device address: weights are resident for the
/// life of a bundle; an entry goes when its allocation is freed or a copy
/// or memset writes into it (forget).
std::map<uintptr_t, size_t> allocations;
std::map<uintptr_t, std::pair<void *, size_t>> mappings; ///< mmap of each
std::map<std::pair<uintptr_t, std::string>, std::vector<float>> dequantized;

std::string specKey(const loom::gpu::ref::Format &f) {
  return f.format + "/" + f.mode + "/" + f.scale + "/" +
         std::to_string(f.block) + "/" + std::to_string(f.n) + "/" +
         std::to_string(f.k);
}

/// A write into device memory at [d, d + n): the dequantized copies of any
/// weight in the allocations it touches are stale.
void forget(uintptr_t d, size_t n) {
  std::lock_guard<std::recursive_mutex> lock(mu);
  if (dequantized.empty())
    return;
  auto a = allocations.upper_bound(d + (n ? n - 1 : 0));
  uintptr_t lo = d, hi = d + n;
  if (a != allocations.begin()) {
    --a;
    lo = std::min(lo, a->first);
    hi = std::max(hi, a->first + a->second);
  }
  for (auto it = dequantized.begin(); it != dequantized.end();)
    it = it->first.first >= lo && it->first.first < hi ? dequantized.erase(it)
                                                       : std::next(it);
}

const std::vector<float> &dequantize(const loom::gpu::ref::Format &f,
                                     const uint8_t *w) {
  std::lock_guard<std::recursive_mutex> lock(mu);
  auto key = std::make_pair(reinterpret_cast<uintptr_t>(w), specKey(f));
  auto it = dequantized.find(key);
  if (it != dequantized.end())
    return it->second;
  loom::gpu::ref::Layout l = loom::gpu::ref::layoutOf(f);
  std::vector<uint8_t> bytes(w, w + f.n * (f.k / l.block) * l.bb);
  return dequantized[key] = loom::gpu::ref::dequant(f, bytes);
}

/// y[m, n] = x[m, k] * dequant(w)[n, k]^T, f32 accumulation per output as
/// the kernels do (in double here: the reference).
void runQmm(const QmmSpec &s, void **params) {
  const uint8_t *w = *static_cast<uint8_t **>(params[0]);
  const void *x = *static_cast<void **>(params[1]);
  void *y = *static_cast<void **>(params[2]);
  int32_t m = *static_cast<int32_t *>(params[3]);
  const loom::gpu::ref::Format &f = s.format;
  const std::vector<float> &wf = dequantize(f, w);
  std::vector<float> xs(size_t(m) * size_t(f.k));
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = s.halfAct ? fromF16(static_cast<const uint16_t *>(x)[i])
                      : static_cast<const float *>(x)[i];
  for (int64_t j = 0; j < f.n; ++j) {
    const float *wr = wf.data() + size_t(j) * size_t(f.k);
    for (int32_t i = 0; i < m; ++i) {
      double acc = 0;
      const float *xr = xs.data() + size_t(i) * size_t(f.k);
      for (int64_t kk = 0; kk < f.k; ++kk)
        acc += double(xr[kk]) * double(wr[kk]);
      size_t at = size_t(i) * size_t(f.n) + size_t(j);
      if (s.halfAct)
        static_cast<uint16_t *>(y)[at] = toF16(float(acc));
      else
        static_cast<float *>(y)[at] = float(acc);
    }
  }
}

float fromBf16(uint16_t h);
uint16_t toBf16(float f);

/// loom_reduce(srcs, np, out, rows, cols, sstride, dstride): element (r, c)
/// of the output is member 0..np-1's element combined in member order, in
/// the kernel's accumulator (f32 for f16/bf16/f32, f64, 32-bit integers
/// for i8/u8/i32 so sums and products wrap to the same bytes, i64).
void runReduce(const ReduceSpec &s, void **params) {
  auto *const *srcs = *static_cast<char *const *const *>(params[0]);
  uint32_t np = *static_cast<uint32_t *>(params[1]);
  char *out = *static_cast<char **>(params[2]);
  uint64_t rows = *static_cast<uint64_t *>(params[3]);
  uint64_t cols = *static_cast<uint64_t *>(params[4]);
  uint64_t ss = *static_cast<uint64_t *>(params[5]);
  uint64_t ds = *static_cast<uint64_t *>(params[6]);
  const std::string &t = s.dtype;
  bool isFloat = t == "f32" || t == "f16" || t == "bf16" || t == "f64";
  size_t es = t == "f64" || t == "i64"    ? 8
              : t == "f32" || t == "i32"  ? 4
              : t == "f16" || t == "bf16" ? 2
                                          : 1;
  auto loadF = [&](const char *p) -> double {
    if (t == "f64")
      return *reinterpret_cast<const double *>(p);
    if (t == "f32")
      return *reinterpret_cast<const float *>(p);
    uint16_t h;
    std::memcpy(&h, p, 2);
    return t == "f16" ? fromF16(h) : fromBf16(h);
  };
  auto loadI = [&](const char *p) -> int64_t {
    if (t == "i64")
      return *reinterpret_cast<const int64_t *>(p);
    if (t == "i32")
      return *reinterpret_cast<const int32_t *>(p);
    return t == "i8" ? int64_t(*reinterpret_cast<const int8_t *>(p))
                     : int64_t(*reinterpret_cast<const uint8_t *>(p));
  };
  for (uint64_t e = 0; e < rows * cols; ++e) {
    uint64_t r = e / cols, c = e % cols;
    size_t so = size_t(r * ss + c) * es, dof = size_t(r * ds + c) * es;
    char *o = out + dof;
    if (isFloat) {
      // The f32 accumulator rounds each step (add.rn.f32 / mul.rn.f32).
      bool wide = t == "f64";
      double acc = loadF(srcs[0] + so);
      for (uint32_t m = 1; m < np; ++m) {
        double v = loadF(srcs[m] + so);
        double r2 = s.op == "sum"    ? acc + v
                    : s.op == "prod" ? acc * v
                    : s.op == "max"  ? (v > acc ? v : acc)
                                     : (v < acc ? v : acc);
        acc = wide ? r2 : double(float(r2));
      }
      if (t == "f64")
        *reinterpret_cast<double *>(o) = acc;
      else if (t == "f32")
        *reinterpret_cast<float *>(o) = float(acc);
      else {
        uint16_t h = t == "f16" ? toF16(float(acc)) : toBf16(float(acc));
        std::memcpy(o, &h, 2);
      }
    } else {
      int64_t acc = loadI(srcs[0] + so);
      for (uint32_t m = 1; m < np; ++m) {
        int64_t v = loadI(srcs[m] + so);
        acc = s.op == "sum"    ? int64_t(uint64_t(acc) + uint64_t(v))
              : s.op == "prod" ? int64_t(uint64_t(acc) * uint64_t(v))
              : s.op == "max"  ? (v > acc ? v : acc)
                               : (v < acc ? v : acc);
      }
      std::memcpy(o, &acc, es); // little-endian: the low bytes wrap
    }
  }
}

/// bf16 <-> f32 (round to nearest even).
float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) // NaN stays a (quiet) NaN
    return uint16_t((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

} // namespace

extern "C" {

// ---- initialisation, device queries ----------------------------------
CUresult cuInit(unsigned) { return kSuccess; }
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return kSuccess;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == kNotSupported   ? "CUDA_ERROR_NOT_SUPPORTED"
       : r == kNotFound     ? "CUDA_ERROR_NOT_FOUND"
       : r == kOutOfMemory  ? "CUDA_ERROR_OUT_OF_MEMORY"
       : r == kInvalidImage ? "CUDA_ERROR_INVALID_IMAGE"
                            : "CUDA_ERROR_INVALID_VALUE";
  return kSuccess;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == kNotSupported
           ? "the CUDA emulator runs only kernels compiled with loomc "
             "--gpu-emulate (and the quantized matmuls)"
           : "CUDA emulator error";
  return kSuccess;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return kSuccess;
}
CUresult cuDeviceGet(int *d, int ordinal) {
  if (ordinal != 0)
    return kInvalidValue;
  *d = 0;
  return kSuccess;
}
CUresult cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, size_t(len), "%s", LOOM_CUDA_EMULATOR_NAME);
  return kSuccess;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int) {
  // 75/76: compute capability 9.0; 16: SMs; 36: memory clock (kHz); 37:
  // bus width (bits).
  *v = attr == 75   ? 9
       : attr == 76 ? 0
       : attr == 16 ? 1
       : attr == 36 ? 1000000
       : attr == 37 ? 64
                    : 1024;
  return kSuccess;
}
// 64 GiB, or LOOM_CUDA_EMU_MEMORY bytes (the tests of loom-run's memory
// checks give a device smaller than a plan).
static size_t totalMemory() {
  if (const char *e = std::getenv("LOOM_CUDA_EMU_MEMORY"))
    return size_t(std::strtoull(e, nullptr, 10));
  return size_t(1) << 36;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int) {
  *b = totalMemory();
  return kSuccess;
}
static int contextToken;
CUresult cuDevicePrimaryCtxRetain(void **c, int) {
  *c = &contextToken;
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
CUresult cuCtxSetCurrent(void *) { return kSuccess; }
CUresult cuCtxSynchronize(void) { return kSuccess; }

// ---- memory -----------------------------------------------------------
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  if (capturing)
    return refuse(kCaptureUnsupported, "cuMemAlloc during stream capture");
  // 256-byte aligned as cuMemAlloc's, and ending (to the 256 bytes) at an
  // inaccessible guard page, so that a kernel reading or writing past the
  // end of a buffer faults here instead of reading a neighbour. New memory
  // holds garbage on a device: here a NaN pattern, so that a read before a
  // write shows.
  size_t bytes = (n + 255) / 256 * 256;
  if (!bytes)
    bytes = 256;
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t body = (bytes + page - 1) / page * page;
  void *map = mmap(nullptr, body + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    return kOutOfMemory;
  char *guard = static_cast<char *>(map) + body;
  mprotect(guard, page, PROT_NONE);
  char *q = guard - bytes;
  std::memset(q, 0xff, bytes);
  *p = reinterpret_cast<CUdeviceptr>(q);
  std::lock_guard<std::recursive_mutex> lock(mu);
  allocations[*p] = bytes;
  mappings[*p] = {map, body + page};
  return kSuccess;
}
// Free: the total less this process's allocations and LOOM_CUDA_EMU_USED
// bytes (another process's, for the tests of loom-run's free-memory check).
// Allocations are not refused past the total.
CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  size_t used = 0;
  if (const char *e = std::getenv("LOOM_CUDA_EMU_USED"))
    used = size_t(std::strtoull(e, nullptr, 10));
  {
    std::lock_guard<std::recursive_mutex> lock(mu);
    for (const auto &[p, bytes] : allocations)
      used += bytes;
  }
  *total = totalMemory();
  *free = used < *total ? *total - used : 0;
  return kSuccess;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  std::lock_guard<std::recursive_mutex> lock(mu);
  auto a = allocations.find(p);
  if (a == allocations.end())
    return p ? kInvalidValue : kSuccess;
  for (auto it = dequantized.begin(); it != dequantized.end();)
    it = it->first.first >= p && it->first.first < p + a->second
             ? dequantized.erase(it)
             : std::next(it);
  allocations.erase(a);
  auto m = mappings.find(p);
  munmap(m->second.first, m->second.second);
  mappings.erase(m);
  return kSuccess;
}
/// CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2): CU_MEMORYTYPE_DEVICE (2) inside an
/// allocation of this driver; any other pointer is unknown host memory
/// (CUDA_ERROR_INVALID_VALUE, as the driver answers).
/// Whether `p` is inside an allocation of this driver (call under `mu`).
static bool isDevice(CUdeviceptr p) {
  auto it = allocations.upper_bound(p);
  return it != allocations.begin() &&
         p < std::prev(it)->first + std::prev(it)->second;
}
CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
  std::lock_guard<std::recursive_mutex> lock(mu);
  if (attr != 2)
    return kNotSupported;
  if (isPinned(reinterpret_cast<const void *>(p), 1)) {
    *static_cast<unsigned *>(data) = 1; // CU_MEMORYTYPE_HOST
    return kSuccess;
  }
  if (!isDevice(p))
    return kInvalidValue;
  *static_cast<unsigned *>(data) = 2;
  return kSuccess;
}
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned) {
  return cuMemAlloc_v2(p, n);
}
/// A copy with host memory recorded into a graph must use page-locked
/// memory (a pageable copy is synchronous: unsupported in a capture).
static CUresult captureCheck(void *st, const void *host, size_t n) {
  if (!streamOf(st)->capture || isPinned(host, n))
    return kSuccess;
  return refuse(kCaptureUnsupported,
                "a copy with pageable host memory during stream capture "
                "(cudaErrorStreamCaptureUnsupported on a device): copy "
                "through page-locked memory");
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n,
                              void *st) {
  if (CUresult r = captureCheck(st, s, n))
    return r;
  return enqueue(st, [=] {
    forget(d, n);
    std::memcpy(reinterpret_cast<void *>(d), s, n);
  });
}
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
  if (CUresult r = captureCheck(st, d, n))
    return r;
  return enqueue(st,
                 [=] { std::memcpy(d, reinterpret_cast<const void *>(s), n); });
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n,
                              void *st) {
  return enqueue(st, [=] {
    forget(d, n);
    std::memmove(reinterpret_cast<void *>(d), reinterpret_cast<void *>(s), n);
  });
}
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
  if (streamOf(st)->capture) {
    // Unified addressing: a side outside the device's allocations is host
    // memory, which must be page-locked.
    std::lock_guard<std::recursive_mutex> lock(mu);
    for (CUdeviceptr p : {d, s})
      if (!isDevice(p))
        if (CUresult r = captureCheck(st, reinterpret_cast<void *>(p), n))
          return r;
  }
  return cuMemcpyDtoDAsync_v2(d, s, n, st);
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *s) {
  return enqueue(s, [=] {
    forget(d, n);
    std::memset(reinterpret_cast<void *>(d), v, n);
  });
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void *s) {
  return enqueue(s, [=] {
    forget(d, 2 * n);
    auto *p = reinterpret_cast<uint16_t *>(d);
    for (size_t i = 0; i < n; ++i)
      p[i] = v;
  });
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *s) {
  return enqueue(s, [=] {
    forget(d, 4 * n);
    auto *p = reinterpret_cast<uint32_t *>(d);
    for (size_t i = 0; i < n; ++i)
      p[i] = v;
  });
}

// ---- streams, events, graphs -----------------------------------------
CUresult cuStreamCreate(void **s, unsigned) {
  *s = new Stream();
  return kSuccess;
}
CUresult cuStreamDestroy_v2(void *s) {
  if (s)
    delete static_cast<Stream *>(s);
  return kSuccess;
}
CUresult cuStreamSynchronize(void *s) {
  if (streamOf(s)->capture)
    return refuse(kCaptureInvalidated,
                  "cuStreamSynchronize while a stream is captured (the "
                  "capture is invalidated on a device)");
  return kSuccess;
}
CUresult cuStreamWaitEvent(void *, void *, unsigned) { return kSuccess; }
static int eventToken;
CUresult cuEventCreate(void **e, unsigned) {
  *e = &eventToken;
  return kSuccess;
}
CUresult cuEventRecord(void *, void *) { return kSuccess; }
CUresult cuEventSynchronize(void *) { return kSuccess; }
CUresult cuEventElapsedTime_v2(float *ms, void *, void *) {
  *ms = 0;
  return kSuccess;
}
CUresult cuEventDestroy_v2(void *) { return kSuccess; }
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
  Stream *st = streamOf(s);
  if (st->capture)
    return kInvalidValue;
  st->capture = new Graph();
  st->relaxed = mode == 2;
  if (!st->relaxed)
    ++capturing;
  return kSuccess;
}
CUresult cuStreamEndCapture(void *s, void **g) {
  Stream *st = streamOf(s);
  if (!st->capture)
    return kInvalidValue;
  *g = st->capture;
  st->capture = nullptr;
  if (!st->relaxed)
    --capturing;
  return kSuccess;
}
CUresult cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long) {
  *e = new Graph(*static_cast<Graph *>(g));
  return kSuccess;
}
/// The exec takes the graph's work when it has as many nodes (a device
/// updates each node's parameters; another topology fails).
CUresult cuGraphExecUpdate_v2(void *e, void *g, void *) {
  auto *exec = static_cast<Graph *>(e);
  auto *graph = static_cast<Graph *>(g);
  if (exec->work.size() != graph->work.size())
    return kGraphUpdateFailure;
  exec->work = graph->work;
  return kSuccess;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned) {
  if (capturing)
    return refuse(kCaptureUnsupported, "cuMemHostAlloc during stream capture");
  *p = std::malloc(n ? n : 1);
  if (!*p)
    return kOutOfMemory;
  std::lock_guard<std::recursive_mutex> lock(mu);
  pinned[uintptr_t(*p)] = n;
  return kSuccess;
}
CUresult cuMemFreeHost(void *p) {
  std::lock_guard<std::recursive_mutex> lock(mu);
  if (!pinned.erase(uintptr_t(p)))
    return kInvalidValue;
  std::free(p);
  return kSuccess;
}
CUresult cuGraphLaunch(void *e, void *s) {
  if (trace())
    std::fprintf(stderr, "loom-cuda-emulator: graph launch of %zu nodes\n",
                 static_cast<Graph *>(e)->work.size());
  Graph copy = *static_cast<Graph *>(e);
  return enqueue(s, [copy] {
    for (const auto &w : copy.work)
      w();
  });
}
CUresult cuGraphExecDestroy(void *e) {
  delete static_cast<Graph *>(e);
  return kSuccess;
}
CUresult cuGraphDestroy(void *g) {
  delete static_cast<Graph *>(g);
  return kSuccess;
}

// ---- modules and launches ---------------------------------------------
CUresult cuModuleLoadData(void **m, const void *image) {
  if (!image)
    return kInvalidValue;
  auto mod = std::make_unique<Module>();
  const char *p = static_cast<const char *>(image);
  if (std::memcmp(p, "LOOMEMU1", 9) == 0) {
    mod->name = p + 9;
    Dl_info info{};
    if (!dladdr(image, &info) || !info.dli_fname) {
      std::fprintf(stderr,
                   "loom-cuda-emulator: cannot find the library of the "
                   "emulation image of '%s'\n",
                   mod->name.c_str());
      return kInvalidImage;
    }
    // The library is loaded (it holds the image) and stays so while its
    // modules are in use: the handle is only for dlsym, its reference is
    // given back at once so that the bundle can still be unloaded.
    mod->library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (mod->library)
      dlclose(mod->library);
    if (!mod->library) {
      std::fprintf(stderr, "loom-cuda-emulator: '%s' is not loaded\n",
                   info.dli_fname);
      return kInvalidImage;
    }
  } else if (std::strncmp(p, "// loom_reduce: ", 16) == 0) {
    const char *q = p + 16;
    const char *sp = std::strchr(q, ' ');
    const char *nl = sp ? std::strpbrk(sp + 1, " \n") : nullptr;
    if (!sp || !nl)
      return kInvalidImage;
    mod->reduce = true;
    mod->reduceSpec.dtype.assign(q, sp);
    mod->reduceSpec.op.assign(sp + 1, nl);
  }
  *m = mod.release();
  return kSuccess;
}
CUresult cuModuleUnload(void *m) {
  delete static_cast<Module *>(m);
  return kSuccess;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  auto *mod = static_cast<Module *>(m);
  std::lock_guard<std::recursive_mutex> lock(mu);
  if (auto it = mod->functions.find(name); it != mod->functions.end()) {
    *f = it->second.get();
    return kSuccess;
  }
  auto fn = std::make_unique<Function>();
  fn->name = name;
  if (parseQmm(name, fn->spec)) {
    fn->qmm = true;
  } else if (mod->reduce && fn->name == "loom_reduce") {
    fn->reduce = true;
    fn->reduceSpec = mod->reduceSpec;
  } else if (mod->library) {
    std::string sym = "__loom_emu_" + mod->name + "__" + name;
    fn->host = reinterpret_cast<void (*)(void **, int64_t *)>(
        dlsym(mod->library, sym.c_str()));
    fn->paramSizes = static_cast<const int64_t *>(
        dlsym(mod->library,
              ("__loom_emu_param_sizes_" + mod->name + "__" + name).c_str()));
    if (!fn->host) {
      std::fprintf(stderr,
                   "loom-cuda-emulator: kernel '%s' of module '%s' has no "
                   "host function '%s'\n",
                   name, mod->name.c_str(), sym.c_str());
      return kNotFound;
    }
  }
  *f = fn.get();
  mod->functions[name] = std::move(fn);
  return kSuccess;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned,
                        void *s, void **params, void **) {
  auto *fn = static_cast<Function *>(f);
  if (trace())
    std::fprintf(stderr,
                 "loom-cuda-emulator: launch %s grid %u,%u,%u block "
                 "%u,%u,%u\n",
                 fn->name.c_str(), gx, gy, gz, bx, by, bz);
  if (fn->reduce) {
    if (streamOf(s)->capture) {
      std::fprintf(stderr, "loom-cuda-emulator: loom_reduce launched during "
                           "stream capture: not emulated yet\n");
      return kNotSupported;
    }
    runReduce(fn->reduceSpec, params);
    return kSuccess;
  }
  if (!fn->qmm && !fn->host) {
    std::fprintf(stderr,
                 "loom-cuda-emulator: kernel '%s' is device code (a cubin, "
                 "fatbin or PTX image), which the emulator cannot run; "
                 "compile the bundle with loomc --gpu-emulate\n",
                 fn->name.c_str());
    return kNotSupported;
  }
  if (fn->qmm) {
    // The launch must cover the kernel's work as the device would run it
    // (QMatmulKernelGen: GEMV <B> takes m of 0 or B, 8 rows per block of
    // 128 threads; tiled, 64 x 64 outputs per block of 256 threads).
    int32_t rows = *static_cast<int32_t *>(params[3]);
    const std::string &n = fn->name;
    bool tiled = n.size() > 6 && n.compare(n.size() - 6, 6, "_tiled") == 0;
    int64_t nOut = fn->spec.format.n;
    bool ok;
    if (tiled) {
      ok = bx == 256 && by == 1 && bz == 1 && int64_t(gx) * 64 >= nOut &&
           int64_t(gy) * 64 >= rows && gz == 1;
    } else {
      int batch = std::atoi(n.c_str() + n.rfind("_gemv") + 5);
      ok = (rows == 0 || rows == batch) && bx == 128 && by == 1 && bz == 1 &&
           int64_t(gx) * 8 >= nOut && gy == 1 && gz == 1;
    }
    if (!ok || rows < 0) {
      std::fprintf(stderr,
                   "loom-cuda-emulator: launch of '%s' with m = %d, grid "
                   "%u,%u,%u and block %u,%u,%u does not cover its work as "
                   "the kernel runs it\n",
                   n.c_str(), rows, gx, gy, gz, bx, by, bz);
      return kInvalidValue;
    }
    // The parameters are read when the work runs (as the device does at
    // launch: copy their values now).
    void *w = *static_cast<void **>(params[0]);
    void *x = *static_cast<void **>(params[1]);
    void *y = *static_cast<void **>(params[2]);
    int32_t m = *static_cast<int32_t *>(params[3]);
    QmmSpec spec = fn->spec;
    return enqueue(s, [=]() mutable {
      void *ps[4] = {&w, &x, &y, &m};
      runQmm(spec, ps);
    });
  }
  auto *host = fn->host;
  auto run = [=](void **ps) {
    int64_t ctx[12] = {0, 0, 0, 0, 0, 0, bx, by, bz, gx, gy, gz};
    for (unsigned z = 0; z < gz; ++z)
      for (unsigned yy = 0; yy < gy; ++yy)
        for (unsigned x = 0; x < gx; ++x)
          for (unsigned tz = 0; tz < bz; ++tz)
            for (unsigned ty = 0; ty < by; ++ty)
              for (unsigned tx = 0; tx < bx; ++tx) {
                ctx[0] = tx, ctx[1] = ty, ctx[2] = tz;
                ctx[3] = x, ctx[4] = yy, ctx[5] = z;
                host(ps, ctx);
              }
  };
  if (!streamOf(s)->capture) {
    run(params);
    return kSuccess;
  }
  if (!fn->paramSizes) {
    std::fprintf(stderr,
                 "loom-cuda-emulator: kernel '%s' launched during stream "
                 "capture has no parameter sizes (recompile the bundle)\n",
                 fn->name.c_str());
    return kNotSupported;
  }
  // The values now, as the device copies them at the launch.
  std::vector<std::vector<char>> values;
  for (int64_t i = 0; i < fn->paramSizes[0]; ++i) {
    const char *v = static_cast<const char *>(params[i]);
    values.emplace_back(v, v + fn->paramSizes[1 + i]);
  }
  return enqueue(s, [run, values]() mutable {
    std::vector<void *> ps;
    for (auto &v : values)
      ps.push_back(v.data());
    run(ps.data());
  });
}

// ---- cuBLAS (LOOM_CUBLAS) ----------------------------------------------
int cublasCreate_v2(void **h) {
  static int handle;
  *h = &handle;
  return 0;
}
int cublasDestroy_v2(void *) { return 0; }
static void *cublasStream = nullptr;
int cublasSetStream_v2(void *, void *s) {
  cublasStream = s;
  return 0;
}
const char *cublasGetStatusString(int) { return "CUDA emulator cuBLAS"; }
/// C = alpha op(A) op(B) + beta C, column-major, f32 accumulation; A, B
/// and C of one type: f32 (0), f16 (2) or bf16 (14).
int cublasGemmEx(void *, int transa, int transb, int m, int n, int k,
                 const void *alpha, const void *A, int atype, int lda,
                 const void *B, int btype, int ldb, const void *beta, void *C,
                 int ctype, int ldc, int, int) {
  if (atype != btype || atype != ctype ||
      (atype != 0 && atype != 2 && atype != 14))
    return 7; // CUBLAS_STATUS_INVALID_VALUE
  float al = *static_cast<const float *>(alpha);
  float be = *static_cast<const float *>(beta);
  // On the handle's stream (recorded while it is captured).
  enqueue(cublasStream, [=] {
    auto load = [&](const void *p, int64_t i) {
      return atype == 0   ? static_cast<const float *>(p)[i]
             : atype == 2 ? fromF16(static_cast<const uint16_t *>(p)[i])
                          : fromBf16(static_cast<const uint16_t *>(p)[i]);
    };
    auto store = [&](void *p, int64_t i, float v) {
      if (atype == 0)
        static_cast<float *>(p)[i] = v;
      else if (atype == 2)
        static_cast<uint16_t *>(p)[i] = toF16(v);
      else
        static_cast<uint16_t *>(p)[i] = toBf16(v);
    };
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        float acc = 0;
        for (int l = 0; l < k; ++l) {
          float a = load(A, transa ? int64_t(l) + int64_t(i) * lda
                                   : int64_t(i) + int64_t(l) * lda);
          float b = load(B, transb ? int64_t(j) + int64_t(l) * ldb
                                   : int64_t(l) + int64_t(j) * ldb);
          acc += a * b;
        }
        int64_t at = int64_t(i) + int64_t(j) * ldc;
        float c = be == 0.0f ? 0.0f : be * load(C, at);
        store(C, at, al * acc + c);
      }
  });
  return 0;
}

} // extern "C"
