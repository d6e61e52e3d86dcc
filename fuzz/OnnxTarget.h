//===- OnnxTarget.h - What the ONNX fuzzers do with one model --*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Bytes -> a .onnx file -> importOnnx -> verify -> the raise phase, shared by
// onnx_fuzzer.cpp (byte mutations) and onnx_struct_fuzzer.cpp (mutations of
// the decoded ModelProto). A refusal is fine; a crash, a hang, a leak or an
// allocation over -rss_limit_mb is a finding.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FUZZ_ONNXTARGET_H
#define LOOM_FUZZ_ONNXTARGET_H

#include "dialects/Loom/IR/LoomDialect.h"
#include "lib/Import/Import.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstdio>
#include <memory>
#include <string>
#include <unistd.h>

inline int runOnnxModel(const uint8_t *data, size_t size) {
  static std::string path =
      "/tmp/loom-onnx-fuzz-" + std::to_string(::getpid()) + ".onnx";
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);

  // One context serves kContextRuns executions, then a fresh one: making
  // a context and loading its dialects was most of an execution's time
  // on a small model, and a context kept forever would grow with every
  // attribute and type it uniqued. A finding is replayed on its own input,
  // so in a fresh context.
  constexpr int kContextRuns = 256;
  static std::unique_ptr<mlir::MLIRContext> shared;
  static int runs = 0;
  if (!shared || ++runs == kContextRuns) {
    runs = 0;
    shared.reset();
    mlir::DialectRegistry registry;
    registry.insert<loom::LoomDialect, mlir::func::FuncDialect>();
    // No thread pool: the raise phase on one small model gains nothing
    // from threads.
    shared = std::make_unique<mlir::MLIRContext>(
        registry, mlir::MLIRContext::Threading::DISABLED);
    shared->loadAllAvailableDialects();
    shared->printOpOnDiagnostic(false);
  }
  mlir::MLIRContext &context = *shared;
  // Diagnostics of a refused module are expected: keep them quiet.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
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

#endif // LOOM_FUZZ_ONNXTARGET_H
