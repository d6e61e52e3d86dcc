//===- runtime/cuda/Driver.h - the CUDA driver API, loaded with dlopen -*- C++
//-*-===//
//
// The few driver entry points the runtime uses, declared here with the ABI
// names the driver exports (the `_v2` names that cuda.h's macros select), so
// that neither the CUDA headers nor libcuda are needed to build or to start:
// the library is dlopen'ed on first use and a missing driver is an error
// message, not a loader failure. DriverCheck.cpp compares these declarations
// with cuda.h when the toolkit is present.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_DRIVER_H
#define LOOM_RUNTIME_CUDA_DRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;

// Values from cuda.h (checked in DriverCheck.cpp).
enum : int {
  kCudaSuccess = 0,
  kAttrClockRate = 13,
  kAttrMultiprocessorCount = 16,
  kAttrMemoryClockRate = 36,
  kAttrGlobalMemoryBusWidth = 37,
  kAttrComputeCapabilityMajor = 75,
  kAttrComputeCapabilityMinor = 76,
  kStreamNonBlocking = 1,
  kCaptureModeThreadLocal = 1,
  kCaptureModeRelaxed = 2,
  kPointerAttributeMemoryType = 2,
  kMemoryTypeHost = 1,
  kEventDefault = 0,
};

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  /// Optional (null when the driver lacks it): free and total bytes of the
  /// current context's device.
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph,
                                          unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  // Optional (null when the driver lacks them): CUDA graphs of whole entry
  // calls (Mgpu.cpp, loom_cuda_mgpu_graph_begin).
  CUresult (*cuGraphExecUpdate)(CUgraphExec, CUgraph, void *);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
};

/// The driver, loaded and initialised (cuInit) on first success; nullptr
/// with *error = "no CUDA device: <why>" otherwise. A failure is not cached
/// (a test may point $LOOM_CUDA_DRIVER elsewhere and retry).
const Driver *driver(std::string *error);

/// "CUDA_ERROR_X (description)" for a driver result.
std::string resultString(CUresult r);

/// The calling thread's last error message.
const std::string &lastErrorMessage();
/// Sets the calling thread's last error and returns -1.
int32_t setError(const std::string &message);
/// Clears it and returns 0.
int32_t ok();

/// `call` failed with `r`: setError("<call>: <resultString>").
int32_t cuFail(const char *call, CUresult r);

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_DRIVER_H
