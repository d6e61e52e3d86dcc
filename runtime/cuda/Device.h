//===- runtime/cuda/Device.h - the device object behind cuda.h -*- C++ -*-===//
#ifndef LOOM_RUNTIME_CUDA_DEVICE_H
#define LOOM_RUNTIME_CUDA_DEVICE_H

#include "Driver.h"

#include <map>
#include <memory>
#include <string>

/// An opened device: its primary context and the per-stream cuBLAS handles.
struct loom_cuda_device {
  const loom::cuda::Driver *drv = nullptr;
  int ordinal = 0;
  loom::cuda::CUdevice device = 0;
  loom::cuda::CUcontext ctx = nullptr;
  int sm = 0;
  std::string name;
  /// cuBLAS handle per stream (Cublas.cpp), destroyed with the device.
  std::map<void *, void *> blas;
};

namespace loom::cuda {
/// Destroys a cuBLAS handle made by Cublas.cpp.
void destroyBlasHandle(void *handle);
} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_DEVICE_H
