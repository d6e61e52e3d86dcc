//===- hfconfig_fuzzer.cpp - libFuzzer target for config.json -------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/HfConfig.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace loom::fmt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto config = parseHfConfig(text, "config.json");
  if (config && (config->hiddenSize <= 0 || config->numHeads <= 0 ||
                 config->numKvHeads <= 0 || config->headDim <= 0))
    __builtin_trap(); // The reader promises positive sizes.
  return 0;
}
