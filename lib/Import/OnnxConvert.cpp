//===- OnnxConvert.cpp - Old ONNX opsets through ONNX's converter --------===//
//
// Models below opset 13 are upgraded with the C++ version converter that
// libonnx ships (onnx/version_converter/convert.h). It reports failures by
// throwing; this file is the only place of the importer that catches.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/OnnxConvert.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <exception>

namespace loom {

bool upgradeOnnxOpset(onnx::ModelProto &model, int target,
                      std::string &error) {
  try {
    // The adapters of broadcasting ops (Add's `broadcast` before opset 7,
    // Gemm 6 -> 7, Softmax 12 -> 13) need the shapes of their inputs:
    // infer them first, on a copy.
    onnx::ModelProto in = model;
    // The converter's graph import dereferences what a malformed model
    // lacks (a fuzzer found a SIGSEGV in graphProtoToGraph): ONNX's checker
    // first, which throws a ValidationError naming the problem instead.
    onnx::checker::check_model(in);
    onnx::shape_inference::InferShapes(in);
    onnx::ModelProto out = onnx::version_conversion::ConvertVersion(in, target);
    model.Swap(&out);
    return true;
  } catch (const std::exception &e) {
    error = e.what();
  } catch (...) {
    error = "unknown error";
  }
  // ONNX's messages end with "\n\n==> Context: ..." lines; keep one line,
  // without the "file:line: function: Assertion `...` failed: " prefix.
  size_t failed = error.find("` failed: ");
  if (failed != std::string::npos)
    error = error.substr(failed + 10);
  size_t nl = error.find('\n');
  if (nl != std::string::npos)
    error.resize(nl);
  while (!error.empty() && (error.back() == ' ' || error.back() == '.'))
    error.pop_back();
  return false;
}

} // namespace loom
