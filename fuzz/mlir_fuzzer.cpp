//===- mlir_fuzzer.cpp - libFuzzer target for loomc's .mlir input ---------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Bytes -> loomc's front door for .mlir: the parser-crash guard, the parser,
// the verifier, then the raise phase (not the LLVM codegen). A diagnostic
// is fine; a crash, a hang or a leak is a finding. Built by
// fuzz/run-compiler.sh.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"
#include "lib/Import/MlirInputGuard.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SourceMgr.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  if (loom::findParserCrashers(text, "fuzz.mlir"))
    return 0;
  mlir::DialectRegistry registry;
  registry.insert<loom::LoomDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  context.allowUnregisteredDialects(false);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz.mlir"), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;
  mlir::PassManager pm(&context);
  loom::PipelineOptions options;
  std::string error;
  if (mlir::succeeded(
          loom::buildPhasePipeline(pm, loom::Phase::Raise, options, error)))
    (void)pm.run(*module);
  return 0;
}
