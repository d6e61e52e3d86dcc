//===- Mesh.h - Device meshes and their links -------------------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// A mesh is an N-D grid of identical devices; each axis has a name, a size
// and the link its collectives run over (bandwidth per device per direction
// and a per-hop latency). Two ways to write one:
//
//  * the short form of `--mesh`: "dp=2,tp=4" (outermost axis first, innermost
//    last). Default links: walking from the innermost axis outwards, an axis
//    stays on the intra-node link (NVLink for GPUs, shared memory for a CPU)
//    while the product of the axis sizes so far fits in one node
//    (devicesPerNode, 8 for GPUs); every axis further out crosses nodes (the
//    inter-node link, InfiniBand NDR for H100/H200, HDR for A100).
//  * a JSON spec for anything else (docs/COST-MODEL.md has the schema):
//      {"device": "h100", "devices_per_node": 8,
//       "axes": [{"name": "dp", "size": 4, "link": "ib-ndr"},
//                {"name": "tp", "size": 8,
//                 "link": {"bandwidth_gbps": 450, "latency_us": 3}}]}
//
// Errors name the field: "mesh spec: axis 2 ('tp'): size 'x' is not a
// positive integer".
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COST_MESH_H
#define LOOM_COST_MESH_H

#include "loom/Cost/Device.h"
#include "loom/Cost/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::cost {

/// One link class: what one device can send (and, at the same time,
/// receive) per second to its neighbour in a ring over this axis.
struct LinkSpec {
  std::string name;
  double bandwidth = 0; ///< bytes/s per device per direction
  double latency = 0;   ///< seconds per hop (per ring step / tree level)
  bool intraNode = true;
};

/// Presets (per device, per direction):
///  nvlink3 : A100 NVLink/NVSwitch, 600 GB/s bidirectional -> 300 GB/s, 3 us
///  nvlink4 : H100/H200 NVLink/NVSwitch, 900 GB/s bidir -> 450 GB/s, 3 us
///  ib-hdr  : one 200 Gb/s HDR HCA per GPU -> 25 GB/s, 5 us
///  ib-ndr  : one 400 Gb/s NDR HCA per GPU -> 50 GB/s, 5 us
///  pcie4 / pcie5 : x16 -> 32 / 64 GB/s, 5 us
///  shm     : CPU ranks in shared memory: bandwidth = memBandwidth / 2 (a copy
///            reads and writes), 1 us
///  ethernet: 100 Gb/s -> 12.5 GB/s, 20 us
/// `shm` depends on the device, hence the argument.
Result<LinkSpec> linkByName(std::string_view name, const DeviceSpec &device);
std::vector<std::string> knownLinkNames();

/// The default intra-node and inter-node links of a device (see above).
LinkSpec defaultIntraNodeLink(const DeviceSpec &device);
LinkSpec defaultInterNodeLink(const DeviceSpec &device);

struct MeshAxis {
  std::string name;
  int64_t size = 1;
  LinkSpec link;
};

struct MeshSpec {
  DeviceSpec device;
  int64_t devicesPerNode = 8;
  std::vector<MeshAxis> axes; ///< outermost first

  int64_t numDevices() const;
  /// The axis called `name`, or nullptr.
  const MeshAxis *axis(std::string_view name) const;
  /// Size of the axis called `name`; 1 when the mesh has no such axis.
  int64_t axisSize(std::string_view name) const;
};

/// Parses "dp=2,tp=4" for `device` with default links (see the file comment).
/// devicesPerNode = 0 means 8 for a GPU and 1 for a CPU host of ranks that
/// all share memory (every axis then uses shm).
Result<MeshSpec> parseMeshSpec(std::string_view spec, const DeviceSpec &device,
                               int64_t devicesPerNode = 0);

/// Parses the JSON schema above. Fields: "device" (a name, or an object with
/// "name", "peak_tflops": {"f32","tf32","bf16","fp8"}, "mem_bandwidth_gbps",
/// "mem_capacity_gb"), optional "devices_per_node", "axes" (array of
/// {"name", "size", optional "link": a preset name or {"bandwidth_gbps",
/// "latency_us", optional "intra_node"}}).
Result<MeshSpec> parseMeshJson(std::string_view json);

/// One line per axis, e.g. "dp=4 (ib-hdr 25 GB/s, 5 us) x tp=8 (...)".
std::string describeMesh(const MeshSpec &mesh);

} // namespace loom::cost

#endif // LOOM_COST_MESH_H
