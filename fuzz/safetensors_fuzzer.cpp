//===- safetensors_fuzzer.cpp - libFuzzer target for safetensors ----------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <vector>

using namespace loom::fmt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte *>(data),
                                   size);
  auto file = parseSafetensors(bytes, "fuzz.safetensors");
  if (!file)
    return 0;
  volatile uint64_t sink = file->metadata().size();
  for (const TensorRef &t : file->tensors()) {
    auto b = file->tensorBytes(t);
    if (!b || b->size() != t.nbytes)
      __builtin_trap(); // Validated tensors are always in bounds.
    uint64_t n = t.numElements();
    if (n > (1u << 16))
      continue;
    std::vector<float> out(n);
    if (!dequantizeToF32(t.format, *b, out))
      __builtin_trap();
    sink = sink + fnv1a64(*b);
  }
  return 0;
}
