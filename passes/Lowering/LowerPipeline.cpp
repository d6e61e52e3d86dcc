//===- LowerPipeline.cpp - the lower phase as one pass pipeline -----------===//
//
// loom ops -> linalg on tensors -> bufferization -> loops -> LLVM dialect,
// with the loom_entry_<name> wrappers (registered as loom-lower-pipeline;
// docs/ARCHITECTURE.md). Translation to LLVM IR, LLVM's optimisation and
// object emission are lib/Target's, after this pipeline.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace loom {

void buildLowerPassPipeline(OpPassManager &pm,
                            const LowerPipelineOptions &options) {
  // The runtime ABI of the entry points, and their loom-level signatures
  // for the bundle (the lowering erases the loom types).
  pm.addPass(createPrepareEntryPointsPass(
      PrepareEntryPointsPassOptions{options.interleave, options.qmatmul}));
  pm.addPass(createRecordEntryPointsPass());
  if (options.outlineLayers)
    pm.addPass(createOutlineRepeatedLayersPass());

  // CSE on loom ops, and again on what they became: runtime calls are
  // loom_cpu.kernel ops (KernelCall.h) or collectives, which CSE never
  // merges and whose reads and writes bufferization sees.
  pm.addPass(createCSEPass());
  ConvertLoomToLinalgPassOptions lower;
  lower.qmatmul = options.qmatmul;
  lower.gemm = options.gemm;
  lower.qmmTile = options.qmmTile;
  lower.qmmPrefetch = options.qmmPrefetch;
  pm.addPass(createConvertLoomToLinalgPass(lower));
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLinalgElementwiseOpFusionPass());
  pm.addPass(createApproximateMathPass());
  pm.addPass(createCanonicalizerPass());

  // One-shot bufferization; the collectives become runtime calls on the
  // buffers it gives them.
  pm.addPass(createBufferizePass());
  // The calls of a layer as one loop over the layer index, before the
  // deallocations are placed (they then follow the loop's buffers).
  if (options.outlineLayers)
    pm.addPass(createLoopRepeatedLayersPass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createConvertBufferizationToMemRefPass());

  // Parallel dimensions become scf.parallel; the outermost big ones (and
  // the quantized kernels' row blocks) run on the rank's threads
  // (loom_rt_parallel_for), the rest serially as plain loops.
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createOutlineParallelLoopsPass());
  // expand-strided-metadata creates affine.apply: lower affine after it.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createPackEntryPointsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCheckedMallocPass());
}

} // namespace loom
