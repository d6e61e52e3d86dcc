//===- CpuTarget.h - loom IR to a native shared library ---------*- C++ -*-===//
//
// The CPU code path: loom ops -> linalg on tensors -> bufferization -> loops
// -> LLVM dialect -> LLVM IR (in process) -> optimised object code for the
// module's loom.target CPU -> a shared library linked with the system C
// compiler driver.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_TARGET_CPUTARGET_H
#define LOOM_LIB_TARGET_CPUTARGET_H

#include "dialects/Loom/IR/LoomDialect.h"
#include "passes/Lowering/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace loom {

/// Appends the passes that take a module whose entry points are prepared
/// (loom-prepare-entry-points) down to the LLVM dialect, with the
/// loom_entry_<name> wrappers. `lower`: the options of
/// loom-convert-loom-to-linalg; `outlineLayers`: run
/// loom-outline-repeated-layers first (one function per distinct layer).
void buildCpuLoweringPipeline(
    mlir::OpPassManager &pm,
    const ConvertLoomToLinalgPassOptions &lower = {},
    bool outlineLayers = true);

/// The #loom.cpu_target for `cpu` (LLVM's names: "x86-64-v3", "haswell",
/// "skylake-avx512", "znver4"...), for "x86-64-v2" with `portable` (any
/// x86-64 CPU of the last 15 years), else for the host (its CPU name and
/// the features it has): the CPU name and the features of
/// loom/runtime/CpuFeatures.h that LLVM's subtarget then has. Null with
/// `error` set for a CPU that LLVM does not know.
CpuTargetAttr resolveCpuTarget(mlir::MLIRContext *ctx, llvm::StringRef cpu,
                               bool portable, std::string &error);

struct CpuEmitOptions {
  /// LLVM optimisation level of the generated code (0-3).
  unsigned optLevel = 3;
};

/// What the library was generated for, recorded in the manifest's "target"
/// (docs/BUNDLE.md): the CPU name and the x86 features of
/// loom/runtime/CpuFeatures.h that it implies (the code may use them).
struct CpuTargetInfo {
  std::string cpu;
  std::vector<std::string> features;
};

/// Translates an LLVM-dialect module to LLVM IR, optimises it, emits an
/// object file for the CPU and features of the module's loom.target (the
/// ones the lowering assumed; without it, x86-64-v2) and links it into the
/// shared library `soPath` (written to a temporary name and renamed). On
/// failure returns false with `error` set. With `info`, fills it with the
/// CPU and features the code was generated for.
bool emitSharedLibrary(mlir::ModuleOp module, const std::string &soPath,
                       const CpuEmitOptions &options, std::string &error,
                       CpuTargetInfo *info = nullptr);

} // namespace loom

#endif // LOOM_LIB_TARGET_CPUTARGET_H
