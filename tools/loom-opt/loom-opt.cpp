//===- loom-opt.cpp - mlir-opt for Loom -----------------------------------===//
//
// The loom dialect, the upstream dialects Loom's pipelines produce and
// parse, every Loom pass and pipeline, and the upstream passes (so that each
// step of the lowering pipeline can be run and tested on its own). Pass
// plugins load with --load-pass-plugin.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"
#include "lib/Import/Import.h"
#include "lib/Import/MlirInputGuard.h"
#include "passes/Lowering/KernelCall.h"
#include "passes/Pipelines.h"
#ifdef LOOM_HAVE_GPU_TARGET
#include "lib/Target/GpuTarget/GpuTarget.h"
#include "passes/Gpu/Passes.h"
#endif

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

// `loom-opt --import=model.onnx|.gguf|dir`: the import phase alone, its
// failures as diagnostics at their place in the model file (checked with
// --verify-diagnostics against the annotations of the positional input).
static llvm::cl::opt<std::string>
    importModelPath("import",
                    llvm::cl::desc("Import a model file (.onnx, "
                                   ".gguf, Hugging Face directory "
                                   "or config.json) and print it"),
                    llvm::cl::value_desc("model"), llvm::cl::init(""));

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<loom::LoomDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                  mlir::cf::ControlFlowDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::vector::VectorDialect, mlir::LLVM::LLVMDialect>();
  // Upstream extensions: bufferization and convert-to-llvm interfaces of
  // the dialects above, which Loom's lowering pipeline relies on.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // loom_cpu.kernel, the lowering's GEMM/kernel calls before bufferization,
  // so that IR between convert-loom-to-linalg and loom-bufferize parses.
  loom::lowering::registerKernelDialect(registry);
  mlir::registerAllPasses();
  loom::registerAllLoomPassesAndPipelines();
#ifdef LOOM_HAVE_GPU_TARGET
  loom::gpu::registerGpuTargetDialects(registry);
  loom::gpu::registerGpuTargetPasses();
  loom::registerGpuLowerPassesAndPipeline();
#endif
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "Loom optimizer driver\n", registry);
  if (!importModelPath.empty()) {
    mlir::MLIRContext context(registry);
    auto config = mlir::MlirOptMainConfig::createFromCLOptions();
    return loom::importMain(context, importModelPath, input, output,
                            config.shouldVerifyDiagnostics());
  }
  // The upstream parser aborts on some inputs; refuse those first (stdin is
  // read by MlirOptMain itself and is not scanned).
  if (input != "-") {
    if (auto buf = llvm::MemoryBuffer::getFile(input, /*IsText=*/true)) {
      if (auto crash = loom::findParserCrashers((*buf)->getBuffer(), input)) {
        llvm::errs() << "loom-opt: " << *crash << "\n";
        return 1;
      }
    }
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}
