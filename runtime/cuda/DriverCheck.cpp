//===- runtime/cuda/DriverCheck.cpp - our declarations vs the CUDA headers ===//
//
// Compiled only when the toolkit's headers are found: the runtime declares
// the driver, cuBLAS and NCCL entry points itself (so it builds and starts
// without them); this file fails the build if a value or a signature
// drifts from the headers.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "loom/runtime/abi.h"
#include "loom/runtime/cuda.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <nccl.h>

#include <type_traits>

namespace loom::cuda {

static_assert(sizeof(::CUdeviceptr) == sizeof(CUdeviceptr));
static_assert(sizeof(::CUresult) == sizeof(CUresult));
static_assert(int(kAttrClockRate) == (int)CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
static_assert(int(kAttrMultiprocessorCount) ==
              (int)CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(int(kAttrMemoryClockRate) ==
              (int)CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
static_assert(int(kAttrGlobalMemoryBusWidth) ==
              (int)CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
static_assert(int(kAttrComputeCapabilityMajor) ==
              (int)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(int(kAttrComputeCapabilityMinor) ==
              (int)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(int(kStreamNonBlocking) == int(CU_STREAM_NON_BLOCKING));
static_assert(int(kCaptureModeThreadLocal) ==
              int(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
static_assert(int(kCaptureModeRelaxed) == int(CU_STREAM_CAPTURE_MODE_RELAXED));
static_assert(int(kPointerAttributeMemoryType) ==
                  int(CU_POINTER_ATTRIBUTE_MEMORY_TYPE) &&
              int(kMemoryTypeHost) == int(CU_MEMORYTYPE_HOST));

// Signatures of the versioned symbols Driver.cpp binds.
static_assert(std::is_same_v<decltype(&::cuMemAlloc_v2),
                             ::CUresult (*)(::CUdeviceptr *, size_t)>);
static_assert(
    std::is_same_v<decltype(&::cuLaunchKernel),
                   ::CUresult (*)(::CUfunction, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, unsigned, unsigned,
                                  ::CUstream, void **, void **)>);
static_assert(
    std::is_same_v<decltype(&::cuStreamBeginCapture_v2),
                   ::CUresult (*)(::CUstream, ::CUstreamCaptureMode)>);
static_assert(std::is_same_v<decltype(&::cuMemGetInfo_v2),
                             ::CUresult (*)(size_t *, size_t *)>);
static_assert(std::is_same_v<decltype(&::cuGraphExecUpdate_v2),
                             ::CUresult (*)(::CUgraphExec, ::CUgraph,
                                            ::CUgraphExecUpdateResultInfo *)>);
static_assert(std::is_same_v<decltype(&::cuMemHostAlloc),
                             ::CUresult (*)(void **, size_t, unsigned)>);
static_assert(CU_POINTER_ATTRIBUTE_MEMORY_TYPE == 2 &&
              CU_MEMORYTYPE_HOST == 1 && CU_MEMORYTYPE_DEVICE == 2);

// cuBLAS values used by Cublas.cpp.
static_assert(CUBLAS_OP_N == 0 && CUBLAS_OP_T == 1);
static_assert(CUDA_R_32F == 0 && CUDA_R_16F == 2 && CUDA_R_16BF == 14);
static_assert(CUBLAS_COMPUTE_32F == 68 && CUBLAS_GEMM_DEFAULT == -1);

// NCCL values used by Nccl.cpp (abi.h dtype -> ncclDataType_t, ops equal).
static_assert(NCCL_UNIQUE_ID_BYTES == LOOM_CUDA_NCCL_ID_BYTES);
static_assert(ncclFloat32 == 7 && ncclFloat16 == 6 && ncclBfloat16 == 9 &&
              ncclFloat64 == 8 && ncclInt8 == 0 && ncclInt32 == 2 &&
              ncclInt64 == 4 && ncclUint8 == 1);
static_assert(int(ncclSum) == LOOM_RT_SUM && int(ncclProd) == LOOM_RT_PROD &&
              int(ncclMax) == LOOM_RT_MAX && int(ncclMin) == LOOM_RT_MIN);

} // namespace loom::cuda
