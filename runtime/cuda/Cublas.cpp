//===- runtime/cuda/Cublas.cpp - f16/bf16/f32 GEMM through cuBLAS ---------===//
//
// GEMMs are the library's job (docs/GPU.md: generated where generation is
// the mission, the best library elsewhere): cublasGemmEx with f32
// accumulation, loaded with dlopen like the driver. Row-major operands are
// passed as their column-major transposes: C^T = B^T A^T.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/abi.h"
#include "loom/runtime/cuda.h"

#include "Device.h"
#include "Driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

using namespace loom::cuda;

namespace {

// cublas_api.h / library_types.h values (checked in DriverCheck.cpp).
enum : int {
  kOpN = 0,
  kOpT = 1,
  kR32F = 0,
  kR16F = 2,
  kR16BF = 14,
  kCompute32F = 68,
  kGemmDefault = -1,
};

struct Cublas {
  int (*create)(void **);
  int (*destroy)(void *);
  int (*setStream)(void *, CUstream);
  int (*gemmEx)(void *, int, int, int, int, int, const void *, const void *,
                int, int, const void *, int, int, const void *, void *, int,
                int, int, int);
  const char *(*statusString)(int);
};

std::mutex mu;
Cublas lib;
bool loaded = false;

const Cublas *cublas(std::string *err) {
  std::lock_guard<std::mutex> lock(mu);
  if (loaded)
    return &lib;
  void *h = nullptr;
  std::string tried;
  // LOOM_CUBLAS: another library with cuBLAS's ABI (the CUDA emulator's,
  // test/gpu/emu), as LOOM_CUDA_DRIVER for the driver.
  const char *env = std::getenv("LOOM_CUBLAS");
  std::vector<const char *> names = {"libcublas.so.13", "libcublas.so.12",
                                     "libcublas.so"};
  if (env && *env)
    names = {env};
  for (const char *name : names) {
    h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h)
      break;
    tried += std::string(tried.empty() ? "" : ", ") + name;
  }
  if (!h) {
    *err = "cuBLAS is not available (tried " + tried +
           "); install the CUDA toolkit's libcublas or add its directory to "
           "LD_LIBRARY_PATH";
    return nullptr;
  }
  Cublas c{};
  c.create = reinterpret_cast<decltype(c.create)>(dlsym(h, "cublasCreate_v2"));
  c.destroy =
      reinterpret_cast<decltype(c.destroy)>(dlsym(h, "cublasDestroy_v2"));
  c.setStream =
      reinterpret_cast<decltype(c.setStream)>(dlsym(h, "cublasSetStream_v2"));
  c.gemmEx = reinterpret_cast<decltype(c.gemmEx)>(dlsym(h, "cublasGemmEx"));
  c.statusString = reinterpret_cast<decltype(c.statusString)>(
      dlsym(h, "cublasGetStatusString"));
  if (!c.create || !c.destroy || !c.setStream || !c.gemmEx) {
    dlclose(h);
    *err = "cuBLAS is too old: cublasGemmEx or cublasCreate_v2 is missing";
    return nullptr;
  }
  lib = c;
  loaded = true;
  return &lib;
}

std::string status(const Cublas *c, int s) {
  std::string r = "cublasStatus " + std::to_string(s);
  if (c->statusString)
    if (const char *t = c->statusString(s))
      r += std::string(" (") + t + ")";
  return r;
}

} // namespace

void loom::cuda::destroyBlasHandle(void *handle) {
  std::string err;
  if (const Cublas *c = cublas(&err))
    c->destroy(handle);
}

extern "C" int32_t loom_cuda_gemm(loom_cuda_device *dev, int32_t dtype,
                                  int32_t transA, int32_t transB, int64_t m,
                                  int64_t n, int64_t k, loom_cuda_ptr a,
                                  loom_cuda_ptr b, loom_cuda_ptr c,
                                  loom_cuda_stream stream) {
  int type = dtype == LOOM_RT_F16    ? kR16F
             : dtype == LOOM_RT_BF16 ? kR16BF
             : dtype == LOOM_RT_F32  ? kR32F
                                     : -1;
  if (type < 0)
    return setError("loom_cuda_gemm: dtype " + std::to_string(dtype) +
                    " is not f16, bf16 or f32");
  if (m < 0 || n < 0 || k < 0 || m > INT32_MAX || n > INT32_MAX ||
      k > INT32_MAX || (m && n && k && (!a || !b || !c)))
    return setError(
        "loom_cuda_gemm: bad sizes or null operand (m=" + std::to_string(m) +
        ", n=" + std::to_string(n) + ", k=" + std::to_string(k) + ")");
  if (!dev)
    return setError("loom_cuda_gemm: null device (open one with "
                    "loom_cuda_open)");
  CUresult r = dev->drv->cuCtxSetCurrent(dev->ctx);
  if (r != kCudaSuccess)
    return cuFail("loom_cuda_gemm", r);
  std::string err;
  const Cublas *cb = cublas(&err);
  if (!cb)
    return setError("loom_cuda_gemm: " + err);
  void *&handle = dev->blas[stream];
  if (!handle) {
    int s = cb->create(&handle);
    if (s != 0) {
      handle = nullptr;
      return setError("loom_cuda_gemm: cublasCreate failed: " + status(cb, s));
    }
    cb->setStream(handle, static_cast<CUstream>(stream));
  }
  if (!m || !n)
    return ok();
  float alpha = 1.0f, beta = 0.0f;
  int opFirst = transB ? kOpT : kOpN, opSecond = transA ? kOpT : kOpN;
  int ldFirst = int(transB ? k : n), ldSecond = int(transA ? m : k);
  int s = cb->gemmEx(handle, opFirst, opSecond, int(n), int(m), int(k), &alpha,
                     reinterpret_cast<const void *>(b), type, ldFirst,
                     reinterpret_cast<const void *>(a), type, ldSecond, &beta,
                     reinterpret_cast<void *>(c), type, int(n), kCompute32F,
                     kGemmDefault);
  if (s != 0)
    return setError("loom_cuda_gemm(m=" + std::to_string(m) +
                    ", n=" + std::to_string(n) + ", k=" + std::to_string(k) +
                    "): cublasGemmEx failed: " + status(cb, s));
  return ok();
}
