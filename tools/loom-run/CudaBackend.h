//===- tools/loom-run/CudaBackend.h - --backend cuda and --devices -*- C++
//-*-===//
//
// Which device communicator loom-run gives a CUDA bundle's ranks
// (runtime/cuda/DeviceComm.h): NCCL with one GPU per process under mpirun,
// the single-device communicator when the ranks are threads sharing one
// GPU. Pure selection, tested in unittests/CudaBackendTest.cpp. Built
// only with the CUDA runtime (LOOM_RUN_HAVE_CUDA).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_LOOM_RUN_CUDABACKEND_H
#define LOOM_TOOLS_LOOM_RUN_CUDABACKEND_H

#include <string>
#include <vector>

namespace loom::run {

/// "0,1,3" -> {0, 1, 3}: distinct device numbers; false + *err otherwise.
bool parseDevices(const std::string &s, std::vector<int> &out,
                  std::string *err);

struct CudaBackendChoice {
  enum Kind { None, SingleDevice, Nccl } kind = None;
  /// SingleDevice: the shared device; Nccl: this process's device.
  int device = -1;
  /// Nccl: the --devices list (empty: device = local rank).
  std::vector<int> devices;
};

/// The communicator for `--backend cuda` (cuda), `--devices` (devices, may
/// be empty) and `--device` (device, -1: not given), in a process started
/// by mpirun or not, as local rank `localRank` of `localRanks`. False +
/// *err (one line) for what is refused.
bool chooseCudaBackend(bool cuda, const std::vector<int> &devices, int device,
                       bool underMpirun, int localRank, int localRanks,
                       CudaBackendChoice &out, std::string *err);

} // namespace loom::run

#endif // LOOM_TOOLS_LOOM_RUN_CUDABACKEND_H
