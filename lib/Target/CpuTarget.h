//===- CpuTarget.h - loom IR to a native shared library ---------*- C++ -*-===//
//
// The CPU code path: loom ops -> linalg on tensors -> bufferization -> loops
// -> LLVM dialect -> LLVM IR (in process) -> optimised object code for the
// host CPU -> a shared library linked with the system C compiler driver.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_TARGET_CPUTARGET_H
#define LOOM_LIB_TARGET_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace loom {

/// Appends the passes that take a module whose entry points are prepared
/// (loom-prepare-entry-points) down to the LLVM dialect, with the
/// loom_entry_<name> wrappers.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm);

struct CpuEmitOptions {
  /// LLVM optimisation level of the generated code (0-3).
  unsigned optLevel = 3;
  /// Tune for and use the features of the host CPU (AVX2, AVX-512...).
  bool hostCpu = true;
  /// Generate for this CPU (LLVM's names: "haswell", "skylake-avx512",
  /// "x86-64-v3", ...) instead; overrides hostCpu. Empty: see hostCpu.
  std::string cpu;
};

/// What the library was generated for, recorded in the manifest's "target"
/// (docs/BUNDLE.md): the CPU name and the x86 features of
/// loom/runtime/CpuFeatures.h that it implies (the code may use them).
struct CpuTargetInfo {
  std::string cpu;
  std::vector<std::string> features;
};

/// Translates an LLVM-dialect module to LLVM IR, optimises it, emits an
/// object file and links it into the shared library `soPath` (written to a
/// temporary name and renamed). On failure returns false with `error` set.
/// With `info`, fills it with the CPU and features the code was generated
/// for.
bool emitSharedLibrary(mlir::ModuleOp module, const std::string &soPath,
                       const CpuEmitOptions &options, std::string &error,
                       CpuTargetInfo *info = nullptr);

} // namespace loom

#endif // LOOM_LIB_TARGET_CPUTARGET_H
