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

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"

#include <string>
#include <vector>

namespace loom {

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
  /// Threads that optimise and compile parts of the module in parallel
  /// (0: the cores available); the module is split into as many parts.
  unsigned threads = 0;
  /// A part holding a function of this many LLVM instructions or more
  /// (0: never) is optimised at `largeFunctionOptLevel` instead.
  uint64_t largeFunction = 0;
  unsigned largeFunctionOptLevel = 2;
  /// Loop and SLP vectorisation at O2 and above. Off for host code that
  /// only launches device work (--target=cuda): on SmolLM2's straight-line
  /// launch sequences SLP was 97% of the optimisation time, for nothing.
  bool vectorize = true;
  /// Where the time goes (translation, optimisation, codegen, link).
  mlir::TimingScope *timing = nullptr;
  /// LLVM's own per-pass timing report (forces one thread).
  bool timeLLVMPasses = false;
  /// Print each part's size and optimisation level.
  bool verbose = false;
};

/// What the library was generated for, recorded in the manifest's "target"
/// (docs/BUNDLE.md): the CPU name and the x86 features of
/// loom/runtime/CpuFeatures.h that it implies (the code may use them).
struct CpuTargetInfo {
  std::string cpu;
  std::vector<std::string> features;
};

/// Translates an LLVM-dialect module to LLVM IR, splits it into parts that
/// are optimised and compiled in parallel (CpuEmitOptions), emits object
/// files for the CPU and features of the module's loom.target (the
/// ones the lowering assumed; without it, x86-64-v2) and links them into the
/// shared library `soPath` (written to a temporary name and renamed). On
/// failure returns false with `error` set. With `info`, fills it with the
/// CPU and features the code was generated for.
bool emitSharedLibrary(mlir::ModuleOp module, const std::string &soPath,
                       const CpuEmitOptions &options, std::string &error,
                       CpuTargetInfo *info = nullptr);

} // namespace loom

#endif // LOOM_LIB_TARGET_CPUTARGET_H
