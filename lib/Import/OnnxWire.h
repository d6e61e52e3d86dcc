//===- OnnxWire.h - byte offsets of tensors inside a .onnx file -*- C++ -*-===//
//
// The protobuf library parses a ModelProto but forgets where each field's
// bytes were. Weights stored inline (TensorProto.raw_data) are referenced in
// place by `loom.weight ... from <"model.onnx", offset = N>`, so the importer
// walks the wire format once to find the offset of every raw_data field.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_IMPORT_ONNXWIRE_H
#define LOOM_LIB_IMPORT_ONNXWIRE_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace loom {

/// Where the raw_data bytes of one tensor lie in the file.
struct OnnxRawLocation {
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// The raw_data locations of a model's tensors: graph initializers by
/// tensor name, and tensors of Constant nodes (attribute `value`) by the
/// node's first output name.
struct OnnxRawIndex {
  llvm::StringMap<OnnxRawLocation> initializers;
  llvm::StringMap<OnnxRawLocation> constants;
};

/// Scans `bytes` (a whole serialized ModelProto). Fails with a message
/// naming the byte offset where the wire format is malformed.
bool scanOnnxRawData(llvm::StringRef bytes, OnnxRawIndex &index,
                     std::string &error);

} // namespace loom

#endif // LOOM_LIB_IMPORT_ONNXWIRE_H
