//===- manifest_fuzzer.cpp - libFuzzer target for loom-run's manifest -----===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Parses the input as manifest.json (tools/loom-run/Manifest.cpp) with the
// runtime ABI version of this build; on success touches what loom-run
// reads next: every entry's specs, every rank's slices (their byte extents,
// which the parser promises fit in nbytes without overflow), the mesh
// string and the integrity/target fields.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Manifest.h"

#include "loom/runtime/abi.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace loom::run;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  Manifest m;
  std::string error;
  if (!parseManifest(text, LOOM_RT_ABI_VERSION, m, &error)) {
    if (error.empty())
      std::abort(); // a refusal always says why
    return 0;
  }
  uint64_t h = m.meshString().size() + m.entriesHash.size() +
               m.integrity.library.size() + m.target.features.size();
  for (const Entry &e : m.entries) {
    h += e.inputs.size() + e.outputs.size();
    if (e.interleave.size() != e.weights.size())
      std::abort();
    for (const TensorSpec &t : e.inputs)
      h += dtypeSize(t.dtype) + std::string(dtypeName(t.dtype)).size();
  }
  for (const RankInfo &r : m.ranks)
    for (const Entry &e : m.entries) {
      auto it = r.weights.find(e.name);
      if (it == r.weights.end())
        continue;
      if (it->second.size() != e.weights.size())
        std::abort();
      for (size_t k = 0; k < it->second.size(); ++k) {
        const WeightSlice &s = it->second[k];
        // The promise loom-run relies on: the slice has its weight's shape
        // and its strided extent lies inside [offset, offset + nbytes).
        if (s.shape != e.weights[k].shape || s.strides.size() != s.shape.size())
          std::abort();
        int64_t extent = 0;
        bool empty = false;
        for (size_t d = 0; d < s.shape.size(); ++d) {
          empty |= s.shape[d] == 0;
          if (s.shape[d] > 0)
            extent += (s.shape[d] - 1) * s.strides[d];
        }
        if (!empty && (extent + 1) * dtypeSize(e.weights[k].dtype) > s.nbytes)
          std::abort();
        h += uint64_t(s.offset) + uint64_t(s.nbytes);
      }
    }
  return h == 42 ? 0 : 0;
}
