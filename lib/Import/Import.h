//===- Import.h - model files to loom IR ------------------------*- C++ -*-===//
//
// The import phase: a model file becomes a module of loom ops on global
// tensors whose weights are `loom.weight` references into the original file
// (never copied into the IR). The driver dispatches on the file kind.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_IMPORT_IMPORT_H
#define LOOM_LIB_IMPORT_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace loom {

/// What kind of model a path names, judged by its name and, for
/// directories, by the config.json inside.
enum class ModelKind { Mlir, Onnx, Gguf, HuggingFace, Unknown };
ModelKind detectModelKind(llvm::StringRef path);

/// ONNX (opsets 13-21, external data supported) -> loom. Implemented in
/// OnnxImporter.cpp.
mlir::OwningOpRef<mlir::ModuleOp> importOnnx(mlir::MLIRContext *context,
                                             llvm::StringRef path,
                                             std::string &error);

/// Options of the LLM importers.
struct LlmImportOptions {
  /// loomc --context-limit: the longest context the compiled model serves
  /// (recorded as llm.model's context_length; 0: the model's own). A
  /// sliding window at least this long never binds, so such models import.
  int64_t contextLimit = 0;
  /// The compile writes only a plan (loomc --emit=plan), which reads no
  /// weight byte: a Hugging Face folder without safetensors, a bare
  /// config.json, or a GGUF whose tensor data is absent or truncated
  /// imports with every weight a typed `loom.weight` without storage.
  /// When false, missing weights are an error that says so.
  bool weightsOptional = false;
  /// loomc --weight-dtype (f32, f16, bf16; "": the config's torch_dtype,
  /// else f32): the type of the weights planned from a config alone.
  std::string weightDtype;
};

/// GGUF v3, llama family -> loom, weights referring to the blocks in place.
/// Implemented in LlamaImporter.cpp.
mlir::OwningOpRef<mlir::ModuleOp>
importGguf(mlir::MLIRContext *context, llvm::StringRef path, std::string &error,
           const LlmImportOptions &options = {});

/// Hugging Face config.json (+ safetensors, one file or an index) -> loom.
/// `path` is the directory or the config.json. Implemented in
/// LlamaImporter.cpp.
mlir::OwningOpRef<mlir::ModuleOp>
importHuggingFace(mlir::MLIRContext *context, llvm::StringRef path,
                  std::string &error, const LlmImportOptions &options = {});

/// Any model file (dispatch on detectModelKind; .mlir is parsed), with
/// failures reported as error diagnostics on `context` at their place in
/// the file: an ONNX node, a GGUF or safetensors tensor, a metadata or
/// config key, a byte offset (lib/Import/ImportFailure.h). The string
/// forms above report the same failures as one line "file: place: what".
/// The module is verified; null on failure.
mlir::OwningOpRef<mlir::ModuleOp>
importModel(mlir::MLIRContext *context, llvm::StringRef path,
            const LlmImportOptions &options = {});

/// `loom-opt --import=<model>`: imports `modelPath` with importModel and
/// prints the module to `outputPath`. With `verifyDiagnostics`, the
/// diagnostics are checked against the `expected-*` annotations of
/// `annotationsPath` (MLIR's diagnostic verifier; binary model files have
/// no lines, so their places match `expected-error@unknown`). Returns the
/// process exit status.
int importMain(mlir::MLIRContext &context, llvm::StringRef modelPath,
               llvm::StringRef annotationsPath, llvm::StringRef outputPath,
               bool verifyDiagnostics, const LlmImportOptions &options = {});

} // namespace loom

#endif // LOOM_LIB_IMPORT_IMPORT_H
