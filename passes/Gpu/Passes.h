//===- Passes.h - the GPU lower phase's passes ------------------*- C++ -*-===//
//
// loom-lower-gpu-pipeline: a whole loom program onto one CUDA device
// (docs/GPU.md, "Whole programs on the GPU"). Built only with
// LOOM_ENABLE_CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_GPU_PASSES_H
#define LOOM_PASSES_GPU_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace loom {

#define GEN_PASS_DECL
#include "passes/Gpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Gpu/Passes.h.inc"

/// The runtime function a cuBLAS product becomes (runtime/cuda/Mgpu.cpp).
constexpr llvm::StringLiteral kGpuGemmFn = "loom_cuda_mgpu_gemm";
/// Function attributes of the memory plan (loom-gpu-host-program).
constexpr llvm::StringLiteral kGpuPeakBytesAttr = "loom_gpu_peak_bytes";
/// On an entry whose inputs have dynamic dimensions: the bound its memory
/// plan assumed for each of them (loom-gpu-host-program's max-dim).
constexpr llvm::StringLiteral kGpuMaxDimAttr = "loom_gpu_max_dim";
constexpr llvm::StringLiteral kGpuUploadBytesAttr = "loom_gpu_upload_bytes";
/// Device bytes of the entry's workspace: every buffer of a call (the
/// allocations and the device copies of the inputs) at an offset computed
/// at compile time (loom-gpu-host-program).
constexpr llvm::StringLiteral kGpuWorkspaceBytesAttr =
    "loom_gpu_workspace_bytes";
/// The runtime function that gives an entry's workspace (allocated at the
/// first call, the same device address at every later one).
constexpr llvm::StringLiteral kGpuWorkspaceFn = "loom_cuda_mgpu_workspace";
constexpr llvm::StringLiteral kGpuResidentBytesAttr = "loom_gpu_resident_bytes";
/// Device bytes of the entry's state (KV caches) per context position: the
/// caches are resident for the life of the bundle and sized at load.
constexpr llvm::StringLiteral kGpuStateBytesPerPositionAttr =
    "loom_gpu_state_bytes_per_position";
/// The runtime function that gives a state argument's device copy (made
/// zero-filled at the first call, written in place, never copied back).
constexpr llvm::StringLiteral kGpuStateFn = "loom_cuda_mgpu_state";
/// The runtime function that makes a weight device-resident: uploaded on
/// first use, the same device copy on every later call (runtime/cuda/Mgpu.cpp).
constexpr llvm::StringLiteral kGpuResidentFn = "loom_cuda_mgpu_resident";
/// The host check of an embedding's ids after a step
/// (loom-gpu-device-index-check, then loom-gpu-host-program): (ctx, input
/// name, first bad position or -1, its id, lo, rows, op name).
constexpr llvm::StringLiteral kGpuIndexCheckFn = "loom_gpu_index_check";
/// Marks a runtime communication call (loom_rt_all_reduce, ...) on device
/// buffers (loom-gpu-sync-collectives): loom-gpu-host-program keeps it on
/// the host and synchronises the stream before it.
constexpr llvm::StringLiteral kGpuHostSyncAttr = "loom_gpu_host_sync";
/// The bundle function that makes every constant global of the entries
/// device-resident; the executor calls it once at load (runtime/exec).
constexpr llvm::StringLiteral kGpuUploadConstantsFn =
    "loom_gpu_upload_constants";

/// Options of the GPU lower phase (loomc --target=cuda).
struct GpuLowerPipelineOptions {
  /// The chips every kernel is compiled for (cubins, one fatbin).
  std::vector<std::string> chips = {"sm_80", "sm_90"};
  /// "fatbin" (cubins of every chip, needs ptxas and fatbinary), "bin"
  /// (the first chip's cubin) or "isa" (the first chip's PTX, JIT-compiled
  /// by the driver at load; needs no toolkit: lit tests) or "emu" (kernels
  /// compiled for the host into the bundle, run by the emulating CUDA
  /// driver of test/gpu/emu; no toolkit, no device).
  std::string format = "fatbin";
  int64_t blockSize = 256;
  /// Matmuls through cuBLAS (false: generated kernels, for A/B checks).
  bool cublas = true;
  std::string toolkit;
  /// The largest size of every dynamic dimension of an entry's inputs
  /// (loomc --gpu-max-tokens): buffers get run-time sizes and the memory
  /// plan is computed at this bound. 0: no bound, a dynamic size is refused.
  int64_t maxDim = 0;
  /// Attention as two kernels with an online softmax over key chunks (no
  /// scores buffer; docs/GPU.md "Fused attention"); false: the products
  /// around a softmax, as on the CPU (for A/B checks).
  bool fusedAttention = true;
  /// Activations on the device (loomc --gpu-dtype): "f32", or "f16" /
  /// "bf16" where products read and write them, with f32 arithmetic
  /// (loom-gpu-activation-dtype).
  std::string activationDtype = "f32";
};

/// Appends the lower phase for one CUDA device: entry points prepared and
/// recorded as for the CPU, loom -> linalg (the CPU patterns) -> buffers,
/// matmuls to cuBLAS calls, the rest to kernels (NVVM, compiled for
/// `chips`), host code through gpu-to-llvm onto the runtime's mgpu*
/// functions with the loom_entry_<name> wrappers.
void buildGpuLowerPassPipeline(mlir::OpPassManager &pm,
                               const GpuLowerPipelineOptions &options = {});

/// Registers the passes and `loom-lower-gpu-pipeline`.
void registerGpuLowerPassesAndPipeline();

} // namespace loom

#endif // LOOM_PASSES_GPU_PASSES_H
