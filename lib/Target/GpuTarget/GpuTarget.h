//===- GpuTarget.h - loom.qmatmul kernels through NVVM to PTX/cubin -*- C++
//-*-===//
//
// The GPU half of Loom's code generation:
//  - `loom-gpu-build-qmatmul-kernels` (a pass): every `loom.qmatmul` gets a
//    generated kernel family in `gpu.module @loom_qmatmul_kernels` and a
//    `loom.gpu_kernel = "<base name>"` attribute naming it;
//  - compileGpuModules(): NVVM -> PTX (`isa`), cubin (`bin`) or fatbin for
//    one chip, the recipe of ../shared/design/TOOLCHAIN.md;
//  - emitQMatmulCubins(): what `loomc --target=cuda` calls to put
//    `<module>.<chip>.cubin` files into a bundle.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_LIB_TARGET_GPUTARGET_GPUTARGET_H
#define LOOM_LIB_TARGET_GPUTARGET_GPUTARGET_H

#include "lib/Target/GpuTarget/QMatmulKernelGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loom {
class QMatmulOp;
} // namespace loom

namespace loom::gpu {

/// The gpu.module the qmatmul kernels go into.
inline constexpr const char *kQMatmulModuleName = "loom_qmatmul_kernels";

/// Dialects, the NVVM target attribute model and the LLVM IR translations
/// that building and compiling kernels needs.
void registerGpuTargetDialects(mlir::DialectRegistry &registry);

/// Registers `loom-gpu-build-qmatmul-kernels` (for loom-opt and tools).
void registerGpuTargetPasses();
std::unique_ptr<mlir::Pass> createBuildQMatmulKernelsPass();

/// The kernel spec of a qmatmul, or nullopt with the reason (dynamic K,
/// bf16 activations, ...).
std::optional<QMatmulSpec> specFromQMatmul(loom::QMatmulOp op,
                                           std::string *why);

/// Parses the generated kernels of `specs` and appends them to `module` as
/// `gpu.module @<name>` (marking `module` as a gpu.container_module).
mlir::LogicalResult appendQMatmulKernels(mlir::ModuleOp module,
                                         llvm::ArrayRef<QMatmulSpec> specs,
                                         llvm::StringRef name,
                                         const KernelOptions &options = {});

struct GpuCompileOptions {
  std::string chip = "sm_90"; ///< sm_70 or newer
  /// "isa" (PTX text), "bin" (cubin, needs ptxas) or "fatbin" (needs
  /// ptxas and fatbinary).
  std::string format = "bin";
  unsigned optLevel = 3;
  std::string features; ///< e.g. "+ptx80"; empty: the chip's default
};

/// Empty when `chip` is a supported "sm_NN" (NN >= 70), else the message.
std::string validateChip(const std::string &chip);

/// Compiles every gpu.module of `module` (a clone; `module` is unchanged)
/// and returns the object of each, by gpu.module name. On failure returns
/// nullopt with the diagnostics in *error.
std::optional<std::map<std::string, std::string>>
compileGpuModules(mlir::ModuleOp module, const GpuCompileOptions &options,
                  std::string *error);

/// For `loomc --target=cuda`: builds the kernels of every loom.qmatmul of
/// `module` (adding `loom.gpu_kernel` attributes, not the gpu.module) and
/// writes `<outDir>/loom_qmatmul_kernels.<chip>.cubin` for each chip.
/// Returns the written paths, or nullopt with *error.
std::optional<std::vector<std::string>>
emitQMatmulCubins(mlir::ModuleOp module, llvm::ArrayRef<std::string> chips,
                  llvm::StringRef outDir, std::string *error);

/// The SM number of a cubin from its ELF header (e.g. 90), or -1 when the
/// bytes are not a CUDA ELF. Mirrors loom_cuda_cubin_sm() of the runtime.
int cubinSm(llvm::StringRef bytes);

} // namespace loom::gpu

#endif // LOOM_LIB_TARGET_GPUTARGET_GPUTARGET_H
