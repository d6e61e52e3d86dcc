//===- runtime/cuda/Driver.cpp - the CUDA driver API, loaded with dlopen --===//
//
// One process-wide table of driver entry points. Loading is retried until
// it succeeds once (then it is fixed for the process), so a failing first
// attempt (no driver) does not poison later ones with another path.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <type_traits>

namespace loom::cuda {

namespace {

thread_local std::string lastError;

std::mutex loadMutex;
Driver table;
bool loaded = false;

/// The first of `names` that `lib` exports (versioned names first).
void *sym(void *lib, std::initializer_list<const char *> names,
          std::string *missing) {
  for (const char *n : names)
    if (void *p = dlsym(lib, n))
      return p;
  if (missing->empty())
    *missing = *names.begin();
  return nullptr;
}

template <typename T>
void bind(T &fn, void *lib, std::initializer_list<const char *> names,
          std::string *missing) {
  fn = reinterpret_cast<T>(sym(lib, names, missing));
}

// Names and descriptions of the results worth naming when the driver's own
// cuGetErrorName is not usable (a stub library, a failed cuInit).
const char *knownResult(CUresult r) {
  switch (r) {
  case 1:
    return "CUDA_ERROR_INVALID_VALUE";
  case 2:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case 34:
    return "CUDA_ERROR_STUB_LIBRARY (the toolkit's stub libcuda.so, not a "
           "driver)";
  case 35:
    return "CUDA_ERROR_INSUFFICIENT_DRIVER (the driver is older than the "
           "runtime)";
  case 46:
    return "CUDA_ERROR_DEVICE_UNAVAILABLE";
  case 100:
    return "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)";
  case 200:
    return "CUDA_ERROR_INVALID_IMAGE";
  case 209:
    return "CUDA_ERROR_NO_BINARY_FOR_GPU (the image has no code for this GPU)";
  case 218:
    return "CUDA_ERROR_INVALID_PTX";
  case 222:
    return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (PTX newer than the driver)";
  case 500:
    return "CUDA_ERROR_NOT_FOUND";
  case 700:
    return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 719:
    return "CUDA_ERROR_LAUNCH_FAILED";
  case 803:
    return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
  case 804:
    return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
  default:
    return nullptr;
  }
}

} // namespace

const std::string &lastErrorMessage() { return lastError; }

int32_t setError(const std::string &message) {
  lastError = message;
  return -1;
}

int32_t ok() {
  lastError.clear();
  return 0;
}

std::string resultString(CUresult r) {
  const char *name = nullptr, *desc = nullptr;
  if (loaded && table.cuGetErrorName && table.cuGetErrorName(r, &name) == 0 &&
      name) {
    std::string s = name;
    if (table.cuGetErrorString && table.cuGetErrorString(r, &desc) == 0 && desc)
      s += std::string(" (") + desc + ")";
    return s;
  }
  if (const char *k = knownResult(r))
    return k;
  return "CUresult " + std::to_string(r);
}

int32_t cuFail(const char *call, CUresult r) {
  return setError(std::string(call) + " failed: " + resultString(r));
}

const Driver *driver(std::string *error) {
  std::lock_guard<std::mutex> lock(loadMutex);
  if (loaded)
    return &table;
  const char *env = std::getenv("LOOM_CUDA_DRIVER");
  std::string path = env && *env ? env : "libcuda.so.1";
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    *error = "no CUDA device: cannot load the CUDA driver '" + path + "' (" +
             (why ? why : "unknown error") +
             "); install the NVIDIA driver, or run where a GPU is";
    return nullptr;
  }
  Driver d{};
  std::string missing;
  bind(d.cuInit, lib, {"cuInit"}, &missing);
  bind(d.cuDriverGetVersion, lib, {"cuDriverGetVersion"}, &missing);
  bind(d.cuGetErrorName, lib, {"cuGetErrorName"}, &missing);
  bind(d.cuGetErrorString, lib, {"cuGetErrorString"}, &missing);
  bind(d.cuDeviceGetCount, lib, {"cuDeviceGetCount"}, &missing);
  bind(d.cuDeviceGet, lib, {"cuDeviceGet"}, &missing);
  bind(d.cuDeviceGetName, lib, {"cuDeviceGetName"}, &missing);
  bind(d.cuDeviceGetAttribute, lib, {"cuDeviceGetAttribute"}, &missing);
  bind(d.cuDeviceTotalMem, lib, {"cuDeviceTotalMem_v2"}, &missing);
  bind(d.cuDevicePrimaryCtxRetain, lib, {"cuDevicePrimaryCtxRetain"}, &missing);
  bind(d.cuDevicePrimaryCtxRelease, lib,
       {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, &missing);
  bind(d.cuCtxSetCurrent, lib, {"cuCtxSetCurrent"}, &missing);
  bind(d.cuCtxSynchronize, lib, {"cuCtxSynchronize"}, &missing);
  bind(d.cuMemAlloc, lib, {"cuMemAlloc_v2"}, &missing);
  bind(d.cuMemFree, lib, {"cuMemFree_v2"}, &missing);
  bind(d.cuMemAllocManaged, lib, {"cuMemAllocManaged"}, &missing);
  bind(d.cuMemcpyHtoDAsync, lib, {"cuMemcpyHtoDAsync_v2"}, &missing);
  bind(d.cuMemcpyDtoHAsync, lib, {"cuMemcpyDtoHAsync_v2"}, &missing);
  bind(d.cuMemcpyDtoDAsync, lib, {"cuMemcpyDtoDAsync_v2"}, &missing);
  bind(d.cuMemcpyAsync, lib, {"cuMemcpyAsync"}, &missing);
  bind(d.cuMemsetD8Async, lib, {"cuMemsetD8Async"}, &missing);
  bind(d.cuMemsetD16Async, lib, {"cuMemsetD16Async"}, &missing);
  bind(d.cuMemsetD32Async, lib, {"cuMemsetD32Async"}, &missing);
  bind(d.cuStreamCreate, lib, {"cuStreamCreate"}, &missing);
  bind(d.cuStreamDestroy, lib, {"cuStreamDestroy_v2"}, &missing);
  bind(d.cuStreamSynchronize, lib, {"cuStreamSynchronize"}, &missing);
  bind(d.cuStreamWaitEvent, lib, {"cuStreamWaitEvent"}, &missing);
  bind(d.cuEventCreate, lib, {"cuEventCreate"}, &missing);
  bind(d.cuEventRecord, lib, {"cuEventRecord"}, &missing);
  bind(d.cuEventSynchronize, lib, {"cuEventSynchronize"}, &missing);
  bind(d.cuEventElapsedTime, lib,
       {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &missing);
  bind(d.cuEventDestroy, lib, {"cuEventDestroy_v2"}, &missing);
  bind(d.cuModuleLoadData, lib, {"cuModuleLoadData"}, &missing);
  bind(d.cuModuleUnload, lib, {"cuModuleUnload"}, &missing);
  bind(d.cuModuleGetFunction, lib, {"cuModuleGetFunction"}, &missing);
  bind(d.cuLaunchKernel, lib, {"cuLaunchKernel"}, &missing);
  bind(d.cuStreamBeginCapture, lib, {"cuStreamBeginCapture_v2"}, &missing);
  bind(d.cuStreamEndCapture, lib, {"cuStreamEndCapture"}, &missing);
  bind(d.cuGraphInstantiateWithFlags, lib, {"cuGraphInstantiateWithFlags"},
       &missing);
  bind(d.cuGraphLaunch, lib, {"cuGraphLaunch"}, &missing);
  bind(d.cuGraphExecDestroy, lib, {"cuGraphExecDestroy"}, &missing);
  bind(d.cuGraphDestroy, lib, {"cuGraphDestroy"}, &missing);
  auto optional = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(lib, name));
  };
  optional(d.cuMemGetInfo, "cuMemGetInfo_v2");
  optional(d.cuGraphExecUpdate, "cuGraphExecUpdate_v2");
  optional(d.cuMemHostAlloc, "cuMemHostAlloc");
  optional(d.cuMemFreeHost, "cuMemFreeHost");
  optional(d.cuPointerGetAttribute, "cuPointerGetAttribute");
  if (!missing.empty()) {
    dlclose(lib);
    *error = "no CUDA device: the driver '" + path + "' has no " + missing +
             " (a driver for CUDA 12 or newer is needed)";
    return nullptr;
  }
  CUresult r = d.cuInit(0);
  int count = 0;
  if (r == kCudaSuccess)
    r = d.cuDeviceGetCount(&count);
  if (r != kCudaSuccess || count == 0) {
    std::string why =
        r != kCudaSuccess
            ? "cuInit failed: " +
                  std::string(knownResult(r) ? knownResult(r)
                                             : "CUresult " + std::to_string(r))
            : std::string("the driver reports 0 devices");
    dlclose(lib);
    *error = "no CUDA device: " + why + " (driver '" + path + "')";
    return nullptr;
  }
  table = d;
  loaded = true;
  return &table;
}

} // namespace loom::cuda
