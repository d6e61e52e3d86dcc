//===- ImportFailure.h - importer errors as located diagnostics -*- C++ -*-===//
//
// An importer fails with one message that names the place in the model file
// and the fix. The place is also kept as an MLIR location, so that the
// failure can be reported as a diagnostic (`loom-opt --import`, checked with
// `--verify-diagnostics`) as well as the one line loomc prints:
//
//   place                      location
//   ONNX node                  loc("node 'mm' (MatMul)"("/abs/m.onnx"))
//   GGUF / safetensors tensor  loc("tensor 'blk.0.attn_q.weight' at byte
//   136"("/abs/m.gguf")) metadata or config key     loc("key 'model_type' at
//   byte 2"("/abs/config.json")) a byte of the file         loc("byte
//   16"("/abs/m.gguf"))
//
// Binary files have no lines, so these are NameLocs (the place, then the
// file), never FileLineColLocs: the diagnostic verifier matches them with
// `expected-error@unknown`, and prints them as `loc(...)`.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_IMPORT_IMPORTFAILURE_H
#define LOOM_LIB_IMPORT_IMPORTFAILURE_H

#include "lib/Import/Import.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <string>

namespace loom {

/// Why an import failed.
struct ImportFailure {
  /// The one-line message of the command-line tools: "file: place: what".
  std::string text;
  /// The place (importLoc) and the message without it.
  mlir::LocationAttr loc;
  std::string message;

  explicit operator bool() const { return !text.empty(); }
  /// Records the first failure only (later ones are consequences of it).
  void set(mlir::MLIRContext *ctx, llvm::StringRef file, llvm::StringRef place,
           const llvm::Twine &msg);
  /// Reports it as an error diagnostic at `loc`.
  void emit() const;
};

/// The location of `place` ("node 'n' (Op)", "tensor 'T' at byte N",
/// "key 'K'", "byte N"; empty: the file itself) in `file`.
mlir::Location importLoc(mlir::MLIRContext *ctx, llvm::StringRef file,
                         llvm::StringRef place);

/// A failure from the text of an error of the plain C++ readers
/// (lib/Formats, no MLIR) and of the LLM importers, which follow one
/// convention: "<context>: <file>: <place>: <what>" where the optional
/// context is "GGUF import" or "Hugging Face import" and the place, when
/// there is one, is "byte N", "tensor 'T'[ at byte N]", "key 'K'[ at byte
/// N]", "metadata key 'K'" or "shard 'S'". A message without a place
/// segment is located at the first tensor or key it names, else the file.
/// `text` is kept as the failure's text, unchanged.
ImportFailure failureFromText(mlir::MLIRContext *ctx, llvm::StringRef text);

/// The importers with their failure kept structured (the string forms of
/// Import.h return `failure.text`).
mlir::OwningOpRef<mlir::ModuleOp> importOnnx(mlir::MLIRContext *context,
                                             llvm::StringRef path,
                                             ImportFailure &failure);
mlir::OwningOpRef<mlir::ModuleOp> importGguf(mlir::MLIRContext *context,
                                             llvm::StringRef path,
                                             ImportFailure &failure,
                                             const LlmImportOptions &options);
mlir::OwningOpRef<mlir::ModuleOp>
importHuggingFace(mlir::MLIRContext *context, llvm::StringRef path,
                  ImportFailure &failure, const LlmImportOptions &options);

} // namespace loom

#endif // LOOM_LIB_IMPORT_IMPORTFAILURE_H
