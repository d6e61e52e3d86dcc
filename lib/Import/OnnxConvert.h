//===- OnnxConvert.h - Old ONNX opsets through ONNX's converter -*- C++ -*-===//
#ifndef LOOM_IMPORT_ONNXCONVERT_H
#define LOOM_IMPORT_ONNXCONVERT_H

#include <onnx/onnx_pb.h>

#include <string>

namespace loom {

/// Upgrades `model`'s default-domain opset to `target` with libonnx's
/// version converter. On failure returns false with the converter's
/// message (one line; it names the op it has no adapter for) in `error`
/// and leaves `model` as it was.
bool upgradeOnnxOpset(onnx::ModelProto &model, int target, std::string &error);

} // namespace loom

#endif // LOOM_IMPORT_ONNXCONVERT_H
