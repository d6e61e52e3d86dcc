//===- Import.cpp - model kind detection and the import entry points ------===//

#include "lib/Import/Import.h"
#include "lib/Import/ImportFailure.h"
#include "lib/Import/MlirInputGuard.h"
#include "loom/Support/OutputFile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

namespace loom {

ModelKind detectModelKind(llvm::StringRef path) {
  if (llvm::sys::fs::is_directory(path)) {
    llvm::SmallString<256> config(path);
    llvm::sys::path::append(config, "config.json");
    return llvm::sys::fs::exists(config) ? ModelKind::HuggingFace
                                         : ModelKind::Unknown;
  }
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".mlir" || path == "-")
    return ModelKind::Mlir;
  if (ext == ".onnx")
    return ModelKind::Onnx;
  if (ext == ".gguf")
    return ModelKind::Gguf;
  if (llvm::sys::path::filename(path) == "config.json")
    return ModelKind::HuggingFace;
  return ModelKind::Unknown;
}

#ifdef LOOM_HAVE_LLAMA_IMPORT
// The LLM importers build their messages as text (the readers of
// lib/Formats have no MLIR); the place is recovered from the text's
// "file: place: what" convention.
OwningOpRef<ModuleOp> importGguf(MLIRContext *context, StringRef path,
                                 ImportFailure &failure,
                                 const LlmImportOptions &options) {
  std::string error;
  OwningOpRef<ModuleOp> module = importGguf(context, path, error, options);
  if (!module)
    failure = failureFromText(context, error);
  return module;
}

OwningOpRef<ModuleOp> importHuggingFace(MLIRContext *context, StringRef path,
                                        ImportFailure &failure,
                                        const LlmImportOptions &options) {
  std::string error;
  OwningOpRef<ModuleOp> module =
      importHuggingFace(context, path, error, options);
  if (!module)
    failure = failureFromText(context, error);
  return module;
}
#endif

OwningOpRef<ModuleOp> importModel(MLIRContext *context, StringRef path,
                                  const LlmImportOptions &options) {
  ImportFailure failure;
  OwningOpRef<ModuleOp> module;
  Location fileLoc = importLoc(context, path, "");
  auto notBuilt = [&](StringRef what) {
    emitError(fileLoc) << "the " << what
                       << " importer is not built in this version of Loom";
    return nullptr;
  };
  (void)notBuilt; // used only when an importer is not built
  switch (detectModelKind(path)) {
  case ModelKind::Mlir: {
    auto buf = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
    if (!buf) {
      emitError(fileLoc) << "cannot read: " << buf.getError().message();
      return nullptr;
    }
    if (auto crash = findParserCrashers((*buf)->getBuffer(), path)) {
      emitError(fileLoc) << *crash;
      return nullptr;
    }
    module = parseSourceFile<ModuleOp>(path, ParserConfig(context));
    break;
  }
  case ModelKind::Onnx:
#ifdef LOOM_HAVE_ONNX_IMPORT
    module = importOnnx(context, path, failure);
    break;
#else
    return notBuilt("ONNX");
#endif
  case ModelKind::Gguf:
#ifdef LOOM_HAVE_LLAMA_IMPORT
    module = importGguf(context, path, failure, options);
    break;
#else
    return notBuilt("GGUF");
#endif
  case ModelKind::HuggingFace:
#ifdef LOOM_HAVE_LLAMA_IMPORT
    module = importHuggingFace(context, path, failure, options);
    break;
#else
    return notBuilt("Hugging Face");
#endif
  case ModelKind::Unknown:
    emitError(fileLoc) << "unknown model kind; give a .mlir, .onnx or .gguf "
                          "file, or a directory with config.json";
    return nullptr;
  }
  if (failure) {
    failure.emit();
    return nullptr;
  }
  if (!module || failed(verify(*module)))
    return nullptr;
  return module;
}

int importMain(MLIRContext &context, StringRef modelPath,
               StringRef annotationsPath, StringRef outputPath,
               bool verifyDiagnostics, const LlmImportOptions &options) {
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  if (verifyDiagnostics) {
    // The annotations (a lit test) are the verifier's source buffer.
    std::string error;
    auto buf = openInputFile(annotationsPath, &error);
    if (!buf) {
      llvm::errs() << error << "\n";
      return 1;
    }
    sourceMgr.AddNewSourceBuffer(std::move(buf), llvm::SMLoc());
    // The handler's destructor verifies again and repeats the unmatched
    // `@unknown` expectations: only what verify() printed is shown.
    std::string report;
    llvm::raw_string_ostream os(report);
    SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &context, os);
    OwningOpRef<ModuleOp> module = importModel(&context, modelPath, options);
    bool ok = succeeded(handler.verify());
    llvm::errs() << report;
    return ok ? 0 : 1;
  }
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = importModel(&context, modelPath, options);
  if (!module)
    return 1;
  std::string error;
  auto out = openOutputFile(outputPath, &error);
  if (!out) {
    llvm::errs() << error << "\n";
    return 1;
  }
  module->print(out->os());
  out->os() << "\n";
  if (std::string msg = loom::closeChecked(out->os(), outputPath);
      !msg.empty()) {
    llvm::errs() << msg << "\n";
    return 1;
  }
  out->keep();
  return 0;
}

} // namespace loom
