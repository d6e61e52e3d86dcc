//===- Import.cpp - model kind detection ----------------------------------===//

#include "lib/Import/Import.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

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

} // namespace loom
