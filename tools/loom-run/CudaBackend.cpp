//===- tools/loom-run/CudaBackend.cpp - --backend cuda and --devices ------===//

#include "CudaBackend.h"

#include "DeviceComm.h"

#include <cstdlib>

namespace loom::run {

bool parseDevices(const std::string &s, std::vector<int> &out,
                  std::string *err) {
  out.clear();
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char *end = nullptr;
    long v = item.empty() ? -1 : std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0 || v > 1023) {
      *err = "--devices takes CUDA device numbers separated by commas (e.g. "
             "0,1), got '" +
             s + "'";
      return false;
    }
    for (int d : out)
      if (d == int(v)) {
        *err = "--devices names device " + item +
               " twice; give each device once (ranks that share a device: "
               "--backend cuda with one device, without mpirun)";
        return false;
      }
    out.push_back(int(v));
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return true;
}

bool chooseCudaBackend(bool cuda, const std::vector<int> &devices, int device,
                       bool underMpirun, int localRank, int localRanks,
                       CudaBackendChoice &out, std::string *err) {
  out = CudaBackendChoice();
  if (!cuda) {
    if (!devices.empty()) {
      *err = "--devices selects the GPUs of --backend cuda; add --backend "
             "cuda (one device for a one-rank CUDA bundle: --device N)";
      return false;
    }
    return true;
  }
  if (device >= 0 && !devices.empty()) {
    *err = "give the GPUs with --devices or --device, not both";
    return false;
  }
  std::vector<int> list = devices;
  if (device >= 0)
    list.push_back(device);
  if (underMpirun) {
    // One process per rank, one GPU each, NCCL between them.
    out.kind = CudaBackendChoice::Nccl;
    out.devices = list;
    out.device = loom::rt::deviceForRank(list, localRank, localRanks, err);
    return out.device >= 0;
  }
  if (list.size() > 1) {
    *err = "--devices names " + std::to_string(list.size()) +
           " GPUs: one process per GPU is started by mpirun (mpirun -np N "
           "loom-run ... --backend cuda --devices ...); one process driving "
           "several GPUs is not built yet";
    return false;
  }
  // Every rank a thread of this process, all on one GPU.
  out.kind = CudaBackendChoice::SingleDevice;
  out.device = list.empty() ? 0 : list.front();
  return true;
}

} // namespace loom::run
