//===- onnx_fuzzer.cpp - libFuzzer target for the ONNX importer -----------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Bytes -> a .onnx file -> importOnnx -> verify -> the raise phase (the
// importer's folds and the raise patterns are what a hostile model reaches
// before any codegen). A refusal is fine; a crash, a hang, a leak or an
// allocation over -rss_limit_mb is a finding. Byte-level: Debian has no
// libprotobuf-mutator, so the seeds (valid models, fuzz/seeds/onnx/) carry
// the structure and libFuzzer's mutations of them reach the folds.
// Built by fuzz/run-compiler.sh.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"
#include "lib/Import/Import.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::string path =
      "/tmp/loom-onnx-fuzz-" + std::to_string(::getpid()) + ".onnx";
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);

  mlir::DialectRegistry registry;
  registry.insert<loom::LoomDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  // Diagnostics of a refused module are expected: keep them quiet.
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  std::string error;
  auto module = loom::importOnnx(&context, path, error);
  if (!module)
    return 0;
  if (mlir::failed(mlir::verify(*module)))
    return 0;
  mlir::PassManager pm(&context);
  loom::PipelineOptions options;
  if (mlir::succeeded(
          loom::buildPhasePipeline(pm, loom::Phase::Raise, options, error)))
    (void)pm.run(*module);
  return 0;
}
