//===- loomc.cpp - the Loom compiler driver -------------------------------===//
//
// The command line of the compile driver (driver): flags into
// loom::driver::CompileOptions, then one loom::driver::compile call, whose
// messages and MLIR diagnostics go to stderr. The Python package calls the
// same driver in process (python/loom, docs/PYTHON.md).
//
//===----------------------------------------------------------------------===//

#include "driver/Driver.h"
#include "driver/TempCleanup.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

namespace {
/// Every flag below stores into this struct (cl::location).
loom::driver::CompileOptions gOptions;

cl::OptionCategory loomcCategory("loomc options");

cl::opt<std::string, true>
    inputFilename(cl::Positional,
                  cl::desc("<model: .mlir | .onnx | .gguf | "
                           "config.json | HF folder>"),
                  cl::location(gOptions.input), cl::cat(loomcCategory));
cl::opt<std::string, true> outputFilename("o",
                                          cl::desc("Output file or bundle "
                                                   "directory"),
                                          cl::value_desc("path"),
                                          cl::location(gOptions.output),
                                          cl::cat(loomcCategory));
cl::opt<std::string, true>
    compileTo("compile-to",
              cl::desc("Stop after this phase: import, raise, quantize, "
                       "shard, pipeline, partition, lower, bundle"),
              cl::value_desc("phase"), cl::location(gOptions.compileTo),
              cl::cat(loomcCategory));
cl::opt<std::string, true> compileFrom(
    "compile-from",
    cl::desc("Resume after this phase: the input is the .mlir that "
             "--compile-to=<phase> wrote (e.g. --compile-from=partition)"),
    cl::value_desc("phase"), cl::location(gOptions.compileFrom),
    cl::cat(loomcCategory));
cl::opt<std::string, true>
    meshSpec("mesh",
             cl::desc("Device mesh, e.g. dp=2,tp=4, or a "
                      "JSON spec file"),
             cl::value_desc("spec"), cl::location(gOptions.mesh),
             cl::cat(loomcCategory));
cl::opt<int64_t, true> devicesFlag(
    "devices",
    cl::desc("Number of devices, without --mesh: the cost model chooses dp, "
             "pp and tp for the LLM input (config.json, a Hugging Face "
             "folder or .gguf) and prints its choice (docs/COST-MODEL.md)"),
    cl::value_desc("N"), cl::location(gOptions.devices),
    cl::cat(loomcCategory));
cl::opt<int64_t, true> planBatch(
    "plan-batch",
    cl::desc("Sequences of the forward pass --devices chooses the layout for "
             "(default 1; each as long as --context-limit or the model's "
             "context)"),
    cl::value_desc("N"), cl::location(gOptions.planBatch), cl::init(1),
    cl::cat(loomcCategory));
cl::opt<std::string, true>
    quantSpec("quant", cl::desc("Weight quantization, e.g. int4:32"),
              cl::value_desc("spec"), cl::location(gOptions.quant),
              cl::cat(loomcCategory));
cl::opt<std::string, true> quantSkip(
    "quant-skip",
    cl::desc("Weights kept in float under --quant: comma-separated globs, "
             "'default' (embeddings and the LM head) or 'none'"),
    cl::value_desc("globs"), cl::location(gOptions.quantSkip),
    cl::cat(loomcCategory));
cl::opt<std::string, true> quantRules(
    "quant-rules",
    cl::desc("Per-tensor schemes under --quant, first match wins: "
             "'GLOB=SCHEME;GLOB=skip' (e.g. 'blk.*.ffn_down*=int8:32')"),
    cl::value_desc("rules"), cl::location(gOptions.quantRules),
    cl::cat(loomcCategory));
cl::opt<std::string, true> quantAct(
    "quant-act",
    cl::desc("Activations of the quantized matmul kernels: auto (default: "
             "int8x3 where the target has integer dot products, AVX2 or "
             "AVX512-VNNI, else f32), f32, int8 (quantized per block, "
             "integer dot products) or int8x3 (three int8 levels per block: "
             "about f32's accuracy, integer dot products)"),
    cl::value_desc("auto|f32|int8|int8x3"), cl::location(gOptions.quantAct),
    cl::init("auto"), cl::cat(loomcCategory));
cl::opt<std::string, true> quantFile(
    "quant-file",
    cl::desc("File the quantized weights are written to (default: "
             "weights/quant.bin inside a bundle, else <-o>.qweights)"),
    cl::value_desc("path"), cl::location(gOptions.quantFile),
    cl::cat(loomcCategory));
cl::opt<std::string, true>
    quantReport("quant-report",
                cl::desc("JSON error report per quantized tensor (default: "
                         "weights/quant.report.json inside a bundle, else "
                         "<quant-file>.report.json)"),
                cl::value_desc("path"), cl::location(gOptions.quantReport),
                cl::cat(loomcCategory));
cl::opt<bool, true> quantInterleave(
    "quant-interleave",
    cl::desc("Give the weights of int8-activation quantized matmuls the "
             "interleaved layout, made by loom-run at load (default on; "
             "--quant-interleave=0: keep the rows as stored)"),
    cl::location(gOptions.quantInterleave), cl::cat(loomcCategory));
cl::list<std::string, std::vector<std::string>>
    plugins("plugin",
            cl::desc("Load a pass plugin (shared library); "
                     "run its passes with --shard-passes"),
            cl::value_desc("path"), cl::location(gOptions.plugins),
            cl::cat(loomcCategory));
cl::opt<std::string, true> shardPasses(
    "shard-passes",
    cl::desc("Passes run at the start of the shard phase, before the "
             "planner, e.g. 'loom-pin-attention-heads{axis=tp}'"),
    cl::value_desc("pipeline"), cl::location(gOptions.shardPasses),
    cl::cat(loomcCategory));
cl::opt<std::string, true>
    deviceName("device",
               cl::desc("Device of every rank for the cost model: a100-40gb, "
                        "a100-80gb, h100-sxm, h200, cpu"),
               cl::value_desc("name"), cl::location(gOptions.device),
               cl::cat(loomcCategory));
cl::opt<double, true> memoryLimit(
    "memory-limit",
    cl::desc("Memory per device in GiB for the planner (default: the "
             "device's capacity)"),
    cl::value_desc("GiB"), cl::location(gOptions.memoryLimit),
    cl::cat(loomcCategory));
cl::opt<std::string, true> pipelineStages(
    "stages",
    cl::desc("Decoder layers per pipeline stage on a mesh with 'pp': one "
             "inclusive range per stage, e.g. 0-9,10-19,20-29 (default: "
             "balanced by predicted time under memory; docs/PIPELINE.md)"),
    cl::value_desc("ranges"), cl::location(gOptions.stages),
    cl::cat(loomcCategory));
cl::opt<int64_t, true> pipelineMicrobatches(
    "microbatches",
    cl::desc("Microbatches of the pipeline schedule, recorded in the plan "
             "(bubble (p-1)/(m+p-1), activation memory; default 1, with "
             "--devices the layout search's choice)"),
    cl::value_desc("m"), cl::location(gOptions.microbatches),
    cl::cat(loomcCategory));
cl::opt<std::string, true> targetName(
    "target",
    cl::desc("cpu (default); cuda: the whole program for one CUDA device "
             "(sm_80 and sm_90); cuda-kernels: the CPU program plus the "
             "quantized matmuls' cubins in the bundle's cuda/ folder "
             "(docs/GPU.md)"),
    cl::value_desc("name"), cl::location(gOptions.target),
    cl::cat(loomcCategory));
cl::opt<std::string, true> emitWhat(
    "emit",
    cl::desc("'plan': stop after the shard phase, write the plan as JSON to "
             "-o and print its summary (needs no weights: a folder with only "
             "config.json, a bare config.json or a GGUF header plans); "
             "'plan-html': the plan drawn as one self-contained HTML page (the "
             "input may also be a plan.json; docs/PLAN-HTML.md)"),
    cl::value_desc("what"), cl::location(gOptions.emit),
    cl::cat(loomcCategory));
cl::opt<std::string, true> traceOverlay(
    "trace-overlay",
    cl::desc("With --emit=plan-html: draw the measured schedule of a run "
             "(the Chrome trace of loom-run --trace; under MPI the files "
             "FILE.<rank>) beside the predicted one"),
    cl::value_desc("trace.json"), cl::location(gOptions.traceOverlay),
    cl::cat(loomcCategory));
cl::opt<bool> listPhases("list-phases", cl::desc("Print the phases and exit"),
                         cl::cat(loomcCategory));
cl::opt<bool, true> verbose("v",
                            cl::desc("Say what each phase does and where "
                                     "compile time goes"),
                            cl::location(gOptions.verbose),
                            cl::cat(loomcCategory));
cl::opt<unsigned, true> optLevel("O", cl::desc("LLVM optimisation level (0-3)"),
                                 cl::location(gOptions.optLevel),
                                 cl::cat(loomcCategory));
cl::opt<unsigned, true>
    jobs("j",
         cl::desc("Threads that optimise and compile the "
                  "generated code in parallel (default: the "
                  "cores available)"),
         cl::value_desc("N"), cl::location(gOptions.jobs),
         cl::cat(loomcCategory));
cl::opt<uint64_t, true> largeFunction(
    "large-function",
    cl::desc("Code parts holding a function of this many LLVM instructions "
             "or more are optimised at --large-function-opt (0: never)"),
    cl::value_desc("N"), cl::Hidden, cl::location(gOptions.largeFunction),
    cl::cat(loomcCategory));
cl::opt<unsigned, true> largeFunctionOpt(
    "large-function-opt",
    cl::desc("LLVM optimisation level of large functions' parts"), cl::Hidden,
    cl::location(gOptions.largeFunctionOpt), cl::cat(loomcCategory));
cl::opt<bool, true> timeLLVMPasses(
    "time-llvm-passes",
    cl::desc("LLVM's per-pass timing report of the code generation (one "
             "thread)"),
    cl::Hidden, cl::location(gOptions.timeLLVMPasses), cl::cat(loomcCategory));
cl::opt<int64_t, true> contextLimit(
    "context-limit",
    cl::desc("Longest context the compiled LLM serves (GGUF / Hugging Face "
             "input): recorded as llm.model's context_length; a model with "
             "a sliding attention window compiles when N <= the window"),
    cl::value_desc("N"), cl::location(gOptions.contextLimit),
    cl::cat(loomcCategory));
cl::opt<std::string, true> weightDtype(
    "weight-dtype",
    cl::desc("Planning from a Hugging Face config alone (no safetensors, "
             "--emit=plan): the weights' type, f32, f16 or bf16 (default: "
             "the config's torch_dtype, else f32)"),
    cl::value_desc("type"), cl::location(gOptions.weightDtype),
    cl::cat(loomcCategory));
cl::opt<bool, true>
    portable("portable",
             cl::desc("Generate code for any x86-64-v2 CPU instead "
                      "of the host CPU"),
             cl::location(gOptions.portable), cl::cat(loomcCategory));
cl::opt<std::string, true> qmatmulMode(
    "qmatmul",
    cl::desc("How every quantized matmul lowers, overriding --quant-act: "
             "f32, i8, i8x3 (generated kernels) or dequant (dequantize + "
             "f32 GEMM, bit-exact with the dequantized weights)"),
    cl::value_desc("mode"), cl::location(gOptions.qmatmul),
    cl::cat(loomcCategory));
cl::opt<bool, true> noOutlineLayers(
    "no-outline-layers",
    cl::desc("Keep repeated layers inline in each entry point instead of "
             "one function per distinct layer (A/B measurements)"),
    cl::location(gOptions.noOutlineLayers), cl::cat(loomcCategory));
cl::opt<bool, true>
    noGemm("no-gemm",
           cl::desc("Generate every matmul instead of calling the "
                    "runtime's GEMM (A/B measurements, debugging)"),
           cl::location(gOptions.noGemm), cl::cat(loomcCategory));
cl::opt<int64_t, true> gpuMaxTokens(
    "gpu-max-tokens",
    cl::desc("--target=cuda: the largest size of every dynamic input "
             "dimension (tokens, positions); buffers take run-time sizes and "
             "the memory plan is computed at this bound (default: the "
             "model's context_length)"),
    cl::value_desc("N"), cl::location(gOptions.gpuMaxTokens),
    cl::cat(loomcCategory));
cl::opt<std::string, true> gpuDtype(
    "gpu-dtype",
    cl::desc("--target=cuda: activations on the device: f32 (default), f16 "
             "or bf16 (tensors that products read and write, and the KV "
             "cache, in that type; arithmetic and accumulation in f32)"),
    cl::value_desc("dtype"), cl::location(gOptions.gpuDtype),
    cl::cat(loomcCategory));
cl::opt<bool, true> gpuEmulate(
    "gpu-emulate",
    cl::desc("--target=cuda: compile the kernels for this host instead of "
             "a GPU; the bundle runs only under the emulating CUDA driver "
             "(LOOM_CUDA_DRIVER=libloom_cuda_emu.so; testing the GPU "
             "program without a device)"),
    cl::Hidden, cl::location(gOptions.gpuEmulate), cl::cat(loomcCategory));
cl::opt<std::string, true> qmmTile(
    "qmm-tile",
    cl::desc("Register tile of the quantized matmul kernels, MRxNR2xNR1 "
             "(tuning)"),
    cl::value_desc("tile"), cl::Hidden, cl::location(gOptions.qmmTile),
    cl::cat(loomcCategory));
cl::opt<std::string, true> qmmPrefetch(
    "qmm-prefetch",
    cl::desc("Software prefetch of the quantized matmul kernels: bytes "
             "ahead, 0: none, -N: N tiles ahead (tuning)"),
    cl::value_desc("bytes"), cl::Hidden, cl::location(gOptions.qmmPrefetch),
    cl::cat(loomcCategory));
cl::opt<std::string, true> cpuName(
    "cpu",
    cl::desc("Generate code for this CPU (LLVM's names: x86-64-v3, haswell, "
             "skylake-avx512, znver3...) instead of the host CPU; the "
             "manifest records it and its features, and loom-run refuses "
             "a host that lacks one"),
    cl::value_desc("name"), cl::location(gOptions.cpu), cl::cat(loomcCategory));

void parseCommandLine(int argc, char **argv) {
  loom::driver::registerMLIRCommandLineOptions();
  cl::AddExtraVersionPrinter(
      [](llvm::raw_ostream &os) { os << "Loom compiler (loomc)\n"; });
  cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << "loomc (Loom) 0.1.0, MLIR 22\n"; });
  std::string overview;
  llvm::raw_string_ostream ov(overview);
  ov << "Loom compiler driver\n\n"
        "  loomc model.mlir --compile-to=import -o model.loom.mlir\n"
        "  loomc model.gguf --mesh tp=2 -o out/\n"
        "  loomc model.gguf --mesh pp=2,tp=2 --emit=plan -o plan.json\n"
        "  loomc config.json --devices 16384 --device h100 --emit=plan -o "
        "plan.json\n\n";
  loom::driver::printPhases(ov);
  cl::HideUnrelatedOptions(loomcCategory);
  cl::ParseCommandLineOptions(argc, argv, overview);
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  parseCommandLine(argc, argv);
  if (listPhases)
    return loom::driver::printPhases(llvm::outs()), 0;
  // CompileOptions::microbatches 0 means "not given" (the search's choice
  // with --devices); written out, it must be a count.
  if (pipelineMicrobatches.getNumOccurrences() && gOptions.microbatches < 1) {
    llvm::errs() << "loomc: --microbatches " << gOptions.microbatches
                 << ": give at least 1\n";
    return 1;
  }
  loom::tempcleanup::install();
  return loom::driver::compile(gOptions, llvm::errs()).exitCode;
}
