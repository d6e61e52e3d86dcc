//===- onnx_fuzzer.cpp - libFuzzer target for the ONNX importer -----------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Bytes -> a .onnx file -> importOnnx -> verify -> the raise phase (the
// importer's folds and the raise patterns are what a hostile model reaches
// before any codegen). A refusal is fine; a crash, a hang, a leak or an
// allocation over -rss_limit_mb is a finding. Byte-level: the seeds (valid
// models, fuzz/seeds/onnx/) carry the structure and libFuzzer's mutations of
// them reach the folds; onnx_struct_fuzzer.cpp mutates the decoded model.
// Built by fuzz/run-compiler.sh.
//
//===----------------------------------------------------------------------===//

#include "OnnxTarget.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return runOnnxModel(data, size);
}
