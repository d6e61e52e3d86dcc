//===- gguf_fuzzer.cpp - libFuzzer target for the GGUF reader -------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Parses the input as GGUF; on success touches every metadata value (arrays
// and nested arrays through both the iterator and operator[]) and decodes
// every small tensor, so that any view the reader hands out is exercised.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/Gguf.h"

#include <cstddef>
#include <cstdint>
#include <vector>

using namespace loom::fmt;

static uint64_t touch(const GgufValue &v, unsigned depth) {
  uint64_t h = static_cast<uint64_t>(v.type());
  if (auto s = v.asString())
    h += s->size() ? static_cast<unsigned char>(s->back()) : 0;
  if (auto u = v.asUInt())
    h += *u;
  if (auto i = v.asInt())
    h += static_cast<uint64_t>(*i);
  if (auto f = v.asFloat())
    h += *f == *f;
  if (auto b = v.asBool())
    h += *b;
  if (v.isArray()) {
    uint64_t n = 0;
    for (GgufValue e : v) {
      h += touch(e, depth + 1);
      ++n;
    }
    if (n != v.size())
      __builtin_trap();
    if (v.size())
      h += touch(v[v.size() - 1], depth + 1);
    h += v.rawBytes().size();
  }
  return h;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte *>(data),
                                   size);
  // Header alone (planning): whatever parses whole parses so too, with the
  // same tensors; the metadata of a header-only parse is as safe to read.
  auto header = parseGguf(bytes, "fuzz.gguf", /*dataOptional=*/true);
  auto file = parseGguf(bytes, "fuzz.gguf");
  volatile uint64_t sink = 0;
  if (file && (!header || !header->missingData().empty() ||
               header->tensors().size() != file->tensors().size()))
    __builtin_trap();
  if (header)
    for (const GgufKeyValue &kv : header->metadata())
      sink = sink + touch(kv.value, 0) + kv.key.size();
  if (!file)
    return 0;
  for (const GgufKeyValue &kv : file->metadata())
    sink = sink + touch(kv.value, 0) + kv.key.size();
  for (const TensorRef &t : file->tensors()) {
    std::span<const std::byte> b = file->tensorBytes(t);
    if (b.size() != t.nbytes)
      __builtin_trap();
    uint64_t n = t.numElements();
    if (n > (1u << 16))
      continue;
    std::vector<float> out(n);
    if (!dequantizeToF32(t.format, b, out))
      __builtin_trap(); // A validated tensor always decodes.
    sink = sink + fnv1a64(b);
  }
  return 0;
}
