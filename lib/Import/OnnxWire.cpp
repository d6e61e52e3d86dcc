//===- OnnxWire.cpp - byte offsets of tensors inside a .onnx file ---------===//
//
// A minimal protobuf wire-format walker: only the fields that lead to a
// TensorProto's raw_data are followed (ModelProto.graph = 7,
// GraphProto.node = 1 / initializer = 5, NodeProto.output = 2 /
// attribute = 5, AttributeProto.t = 5, TensorProto.name = 8 /
// raw_data = 9). Every read is bounds-checked.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/OnnxWire.h"

#include "llvm/ADT/Twine.h"

namespace loom {
namespace {

struct Reader {
  const uint8_t *base;
  uint64_t pos, end;
  std::string &error;

  bool varint(uint64_t &v) {
    v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (pos >= end)
        return fail("truncated varint");
      uint8_t byte = base[pos++];
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return fail("varint longer than 10 bytes");
  }
  bool fail(const char *what) {
    error = (llvm::Twine("malformed protobuf at byte ") + llvm::Twine(pos) +
             ": " + what)
                .str();
    return false;
  }
  /// Reads one field header and, for length-delimited fields, the extent of
  /// its payload; skips the payload of every other wire type.
  bool field(uint64_t &number, uint64_t &start, uint64_t &size,
             bool &lenDelim) {
    uint64_t key;
    if (!varint(key))
      return false;
    number = key >> 3;
    lenDelim = false;
    switch (key & 7) {
    case 0: {
      uint64_t ignored;
      return varint(ignored);
    }
    case 1:
      if (end - pos < 8)
        return fail("truncated fixed64");
      pos += 8;
      return true;
    case 5:
      if (end - pos < 4)
        return fail("truncated fixed32");
      pos += 4;
      return true;
    case 2:
      if (!varint(size))
        return false;
      if (size > end - pos)
        return fail("length-delimited field runs past its message");
      start = pos;
      pos += size;
      lenDelim = true;
      return true;
    default:
      return fail("unsupported wire type");
    }
  }
};

/// In a TensorProto [start, start+size): its name and raw_data extent.
bool scanTensor(const uint8_t *base, uint64_t start, uint64_t size,
                std::string &name, OnnxRawLocation &raw, bool &hasRaw,
                std::string &error) {
  Reader r{base, start, start + size, error};
  hasRaw = false;
  while (r.pos < r.end) {
    uint64_t num, s = 0, n = 0;
    bool ld;
    if (!r.field(num, s, n, ld))
      return false;
    if (ld && num == 8)
      name.assign(reinterpret_cast<const char *>(base + s), n);
    if (ld && num == 9) {
      raw = {s, n};
      hasRaw = true;
    }
  }
  return true;
}

bool scanNode(const uint8_t *base, uint64_t start, uint64_t size,
              OnnxRawIndex &index, std::string &error) {
  Reader r{base, start, start + size, error};
  std::string firstOutput;
  bool haveOutput = false;
  OnnxRawLocation raw;
  bool hasRaw = false;
  while (r.pos < r.end) {
    uint64_t num, s = 0, n = 0;
    bool ld;
    if (!r.field(num, s, n, ld))
      return false;
    if (ld && num == 2 && !haveOutput) {
      firstOutput.assign(reinterpret_cast<const char *>(base + s), n);
      haveOutput = true;
    }
    if (ld && num == 5) {
      // AttributeProto: t = 5.
      Reader a{base, s, s + n, error};
      while (a.pos < a.end) {
        uint64_t anum, as = 0, an = 0;
        bool ald;
        if (!a.field(anum, as, an, ald))
          return false;
        if (ald && anum == 5) {
          std::string ignored;
          if (!scanTensor(base, as, an, ignored, raw, hasRaw, error))
            return false;
        }
      }
    }
  }
  if (haveOutput && hasRaw)
    index.constants[firstOutput] = raw;
  return true;
}

} // namespace

bool scanOnnxRawData(llvm::StringRef bytes, OnnxRawIndex &index,
                     std::string &error) {
  auto *base = reinterpret_cast<const uint8_t *>(bytes.data());
  Reader model{base, 0, bytes.size(), error};
  while (model.pos < model.end) {
    uint64_t num, s = 0, n = 0;
    bool ld;
    if (!model.field(num, s, n, ld))
      return false;
    if (!ld || num != 7)
      continue;
    Reader graph{base, s, s + n, error};
    while (graph.pos < graph.end) {
      uint64_t gnum, gs = 0, gn = 0;
      bool gld;
      if (!graph.field(gnum, gs, gn, gld))
        return false;
      if (gld && gnum == 5) {
        std::string name;
        OnnxRawLocation raw;
        bool hasRaw;
        if (!scanTensor(base, gs, gn, name, raw, hasRaw, error))
          return false;
        if (hasRaw)
          index.initializers[name] = raw;
      } else if (gld && gnum == 1) {
        if (!scanNode(base, gs, gn, index, error))
          return false;
      }
    }
  }
  return true;
}

} // namespace loom
