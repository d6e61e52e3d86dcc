//===- npy_fuzzer.cpp - libFuzzer target for loom-run's .npy reader -------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Reads the input as a .npy image (tools/loom-run/Npy.cpp, readNpyBytes: the
// same code as the file reader); on success checks that the data buffer
// holds exactly what the shape and dtype promise and reads all of it.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Npy.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace loom::run;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  NpyArray a;
  std::string error;
  if (!readNpyBytes(data, size, a, &error)) {
    if (error.empty())
      std::abort(); // a refusal always says why
    return 0;
  }
  int64_t bytes = a.numBytes();
  if (bytes < 0 || a.itemSize != npyItemSize(a.descr) || size_t(bytes) > size ||
      !a.data)
    std::abort();
  // Every promised byte is readable (ASan catches a short buffer).
  uint64_t h = 0;
  for (int64_t i = 0; i < bytes; ++i)
    h += static_cast<unsigned char>(a.data.get()[i]);
  return h == 42 ? 0 : 0;
}
