//===- GpuLowerPipeline.cpp - the lower phase for one CUDA device ---------===//
//
// loom ops -> linalg on tensors (the CPU patterns, with generated matmuls)
// -> buffers -> matmuls as cuBLAS calls, every other op a kernel (parallel
// loops -> gpu.launch -> outlined gpu.func -> NVVM -> cubins of each chip
// in one fatbin) -> host code on one stream through gpu-to-llvm onto the
// runtime's mgpu* functions, with the loom_entry_<name> wrappers of the
// CPU bundle (registered as loom-lower-gpu-pipeline; docs/GPU.md).
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"
#include "passes/Lowering/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace loom {

void buildGpuLowerPassPipeline(OpPassManager &pm,
                               const GpuLowerPipelineOptions &options) {
  // Entry points as for the CPU: the bundle's ABI and signatures. Layers
  // are not outlined (host code is straight-line) and weights keep their
  // stored layout.
  pm.addPass(createPrepareEntryPointsPass(
      PrepareEntryPointsPassOptions{/*interleave=*/false, /*qmatmul=*/""}));
  if (options.activationDtype != "f32") {
    // Before the signatures are recorded: a KV cache changes type.
    GpuActivationDtypePassOptions dtype;
    dtype.dtype = options.activationDtype;
    dtype.cublas = options.cublas;
    dtype.fusedAttention = options.fusedAttention;
    pm.addPass(createGpuActivationDtypePass(dtype));
    pm.addPass(createCanonicalizerPass());
  }
  pm.addPass(createRecordEntryPointsPass());
  pm.addPass(createCSEPass());
  pm.addPass(createGpuQMatmulsPass());
  ConvertLoomToLinalgPassOptions lower;
  lower.gemm = false; // products as linalg, for cuBLAS or kernels below
  lower.fusedAttention = options.fusedAttention;
  pm.addPass(createConvertLoomToLinalgPass(lower));
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGpuDeviceIndexCheckPass());
  pm.addPass(createGpuFuseElementwisePass());
  pm.addPass(createApproximateMathPass());
  pm.addPass(createCanonicalizerPass());

  pm.addPass(createBufferizePass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createCanonicalizerPass());

  if (options.cublas)
    pm.addPass(createGpuMatmulsToCublasPass());
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createGpuMapParallelLoopsPass(
      GpuMapParallelLoopsPassOptions{options.blockSize}));
  pm.addPass(createConvertParallelLoopToGpuPass());
  // Constant launch sizes, so that outlining records known_block_size
  // (ptxas's .maxntid).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createGpuQMatmulLaunchesPass());
  pm.addPass(createGpuSyncCollectivesPass());
  pm.addPass(createGpuHostProgramPass(
      GpuHostProgramPassOptions{/*maxDim=*/options.maxDim}));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Kernels are final here: identical ones (each inline layer's) compiled once.
  pm.addPass(createGpuDedupKernelsPass());

  const bool emulate = options.format == "emu";
  if (emulate) {
    // Kernels compiled for the host into the bundle (the emulating driver
    // runs them; docs/GPU.md "Emulation on the CPU").
    pm.addPass(createGpuEmulateKernelsPass());
    pm.addPass(createCanonicalizerPass());
  }
  // Device code: one #nvvm.target per chip (PTX version: LLVM's default
  // for the chip), NVVM, then PTX or cubins.
  std::vector<std::string> chips =
      emulate ? std::vector<std::string>{} : options.chips;
  if (options.format != "fatbin" && !chips.empty())
    chips.resize(1);
  for (const std::string &chip : chips) {
    GpuNVVMAttachTargetOptions attach;
    attach.chip = chip;
    attach.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(attach));
  }
  if (!emulate) {
    OpPassManager &dev = pm.nest<gpu::GPUModuleOp>();
    dev.addPass(createConvertGpuOpsToNVVMOps());
    dev.addPass(createCanonicalizerPass());
    dev.addPass(createCSEPass());
    dev.addPass(createReconcileUnrealizedCastsPass());
    GpuModuleToBinaryPassOptions toBinary;
    toBinary.compilationTarget = options.format == "isa" ? "isa" : "bin";
    if (!options.toolkit.empty())
      toBinary.toolkitPath = options.toolkit;
    pm.addPass(createGpuModuleToBinaryPass(toBinary));
  }
  if (options.format == "fatbin")
    pm.addPass(
        createGpuLinkFatbinPass(GpuLinkFatbinPassOptions{options.toolkit}));

  // Host code: the mgpu* calls, then the CPU bundle's tail.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createPackEntryPointsPass());
  // (After the packing, which makes every other function internal.)
  if (emulate)
    pm.addPass(createGpuEmulateLaunchersPass());
  pm.addPass(createGpuExportUploadConstantsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCheckedMallocPass());
}

namespace {

struct GpuPipelineFlags : PassPipelineOptions<GpuPipelineFlags> {
  ListOption<std::string> chips{*this, "chips",
                                llvm::cl::desc("chips (default sm_80,sm_90)")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("fatbin (default), bin, isa or emu (kernels for "
                     "the host: the emulating driver)"),
      llvm::cl::init("fatbin")};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("threads per block"),
                            llvm::cl::init(256)};
  Option<bool> cublas{*this, "cublas",
                      llvm::cl::desc("matmuls through cuBLAS (default true)"),
                      llvm::cl::init(true)};
  Option<std::string> toolkit{*this, "toolkit",
                              llvm::cl::desc("CUDA toolkit folder")};
  Option<int64_t> maxDim{
      *this, "max-dim",
      llvm::cl::desc("largest size of each dynamic input dimension (0: "
                     "none, dynamic sizes refused)"),
      llvm::cl::init(0)};
  Option<bool> fusedAttention{
      *this, "fused-attention",
      llvm::cl::desc("attention as two kernels with an online softmax "
                     "(default true; false: products around a softmax)"),
      llvm::cl::init(true)};
  Option<std::string> dtype{
      *this, "dtype",
      llvm::cl::desc("activations on the device: f32 (default), f16 or "
                     "bf16 (loom-gpu-activation-dtype)"),
      llvm::cl::init("f32")};
};

} // namespace

void registerGpuLowerPassesAndPipeline() {
  registerGpuPasses();
  PassPipelineRegistration<GpuPipelineFlags>(
      "loom-lower-gpu-pipeline",
      "The lower phase for one CUDA device (loomc --target=cuda)",
      [](OpPassManager &pm, const GpuPipelineFlags &flags) {
        GpuLowerPipelineOptions options;
        if (!flags.chips.empty())
          options.chips.assign(flags.chips.begin(), flags.chips.end());
        options.format = flags.format;
        options.blockSize = flags.blockSize;
        options.cublas = flags.cublas;
        options.toolkit = flags.toolkit;
        options.maxDim = flags.maxDim;
        options.fusedAttention = flags.fusedAttention;
        options.activationDtype = flags.dtype;
        buildGpuLowerPassPipeline(pm, options);
      });
}

} // namespace loom
