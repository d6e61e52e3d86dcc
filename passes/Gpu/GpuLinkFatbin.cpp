//===- GpuLinkFatbin.cpp - the cubins of every chip in one fatbin ---------===//
//
// gpu-module-to-binary compiles a gpu.module once per #nvvm.target, and
// gpu-to-llvm embeds one object. To run on every chip the bundle was built
// for, the cubins go into one fatbin (CUDA's container, made by the
// toolkit's `fatbinary`), from which the driver loads the cubin of the
// device's architecture.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"

#include "loom/Support/OutputFile.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

#define DEBUG_TYPE "loom-gpu-link-fatbin"

namespace loom {
#define GEN_PASS_DEF_GPULINKFATBINPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

/// Removes the temporary files it is given when it goes out of scope.
struct TempFiles {
  SmallVector<std::string> paths;
  ~TempFiles() {
    for (const std::string &p : paths)
      llvm::sys::fs::remove(p);
  }
  FailureOr<std::string> make(StringRef suffix) {
    SmallString<128> path;
    if (llvm::sys::fs::createTemporaryFile("loom-fatbin", suffix, path))
      return failure();
    paths.push_back(std::string(path));
    return paths.back();
  }
};

struct GpuLinkFatbinPass
    : loom::impl::GpuLinkFatbinPassBase<GpuLinkFatbinPass> {
  using Base::Base;

  /// `fatbinary` from the toolkit option, else PATH (the pass never reads
  /// the environment; loomc passes $CUDA_HOME as `toolkit`).
  FailureOr<std::string> findFatbinary() {
    SmallVector<std::string> dirs;
    if (!toolkit.empty())
      dirs.push_back(toolkit + "/bin");
    SmallVector<StringRef> paths(dirs.begin(), dirs.end());
    if (auto p = llvm::sys::findProgramByName("fatbinary", paths))
      return *p;
    if (auto p = llvm::sys::findProgramByName("fatbinary"))
      return *p;
    return failure();
  }

  LogicalResult link(gpu::BinaryOp binary, StringRef tool) {
    TempFiles temps;
    SmallVector<std::string> args = {std::string(tool), "-64"};
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!target || object.getFormat() != gpu::CompilationTarget::Binary)
        return binary.emitError()
               << "loom-gpu-link-fatbin: expected cubins of #nvvm.target "
                  "(gpu-module-to-binary{format=bin}), got "
               << object;
      StringRef chip = target.getChip();
      if (!chip.consume_front("sm_"))
        return binary.emitError() << "unexpected chip " << target.getChip();
      FailureOr<std::string> path = temps.make("cubin");
      if (failed(path))
        return binary.emitError() << "cannot create a temporary file";
      std::error_code ec;
      llvm::raw_fd_ostream os(*path, ec);
      if (ec)
        return binary.emitError()
               << "cannot write " << *path << ": " << ec.message();
      os << object.getObject().getValue();
      if (std::string msg = loom::closeChecked(os, *path); !msg.empty())
        return binary.emitError() << msg;
      args.push_back(("--image3=kind=elf,sm=" + chip + ",file=" + *path).str());
    }
    FailureOr<std::string> out = temps.make("fatbin");
    FailureOr<std::string> log = temps.make("log");
    if (failed(out) || failed(log))
      return binary.emitError() << "cannot create a temporary file";
    args.push_back("--create=" + *out);
    SmallVector<StringRef> argv(args.begin(), args.end());
    std::optional<StringRef> redirects[] = {std::nullopt, StringRef(*log),
                                            StringRef(*log)};
    std::string why;
    int rc = llvm::sys::ExecuteAndWait(tool, argv, std::nullopt, redirects, 0,
                                       0, &why);
    auto data = llvm::MemoryBuffer::getFile(*out);
    if (rc != 0 || !data) {
      auto logText = llvm::MemoryBuffer::getFile(*log);
      return binary.emitError()
             << "fatbinary failed ("
             << (why.empty() ? "exit " + std::to_string(rc) : why)
             << "): " << (logText ? (*logText)->getBuffer().trim() : "");
    }
    auto first = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    auto fatbin = gpu::ObjectAttr::get(
        &getContext(), first.getTarget(), gpu::CompilationTarget::Fatbin,
        StringAttr::get(&getContext(), (*data)->getBuffer()), nullptr, nullptr);
    binary.setObjectsAttr(ArrayAttr::get(&getContext(), {fatbin}));
    return success();
  }

  void runOnOperation() override {
    SmallVector<gpu::BinaryOp> binaries(getOperation().getOps<gpu::BinaryOp>());
    if (binaries.empty())
      return;
    FailureOr<std::string> tool = findFatbinary();
    if (failed(tool)) {
      getOperation().emitError()
          << "loom-gpu-link-fatbin: 'fatbinary' not found (install the CUDA "
             "toolkit, set CUDA_HOME, or pass toolkit=<dir>; or compile for "
             "one chip with format=bin)";
      return signalPassFailure();
    }
    for (gpu::BinaryOp binary : binaries)
      if (failed(link(binary, *tool)))
        return signalPassFailure();
  }
};

} // namespace
