//===- Pipelines.cpp - Loom's phases and their pass pipelines -------------===//

#include "passes/Pipelines.h"
#include "passes/Lowering/Passes.h"
#include "passes/Partition/Passes.h"
#include "passes/Pipeline/Passes.h"
#include "passes/Quantize/Passes.h"
#include "passes/Raise/Passes.h"
#include "passes/Sharding/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace loom {

StringRef getPhaseName(Phase phase) {
  switch (phase) {
  case Phase::Import:
    return "import";
  case Phase::Raise:
    return "raise";
  case Phase::Quantize:
    return "quantize";
  case Phase::Shard:
    return "shard";
  case Phase::Pipeline:
    return "pipeline";
  case Phase::Partition:
    return "partition";
  case Phase::Lower:
    return "lower";
  case Phase::Bundle:
    return "bundle";
  }
  llvm_unreachable("unknown phase");
}

StringRef getPhaseSummary(Phase phase) {
  switch (phase) {
  case Phase::Import:
    return "read ONNX / GGUF / HF safetensors / .mlir into loom ops";
  case Phase::Raise:
    return "rewrite primitive patterns into attention, MLP, norms, rotary";
  case Phase::Quantize:
    return "block-wise int4/int8 weights, GGUF blocks kept as they are";
  case Phase::Shard:
    return "choose a sharding for every value under the memory limit";
  case Phase::Pipeline:
    return "split layers into balanced stages over 'pp', one function each";
  case Phase::Partition:
    return "rewrite per rank, insert and optimise collectives";
  case Phase::Lower:
    return "lower to LLVM (CPU) or NVVM (GPU) and emit object code";
  case Phase::Bundle:
    return "write out/: manifest, compiled library, per-rank IR";
  }
  llvm_unreachable("unknown phase");
}

std::optional<Phase> parsePhase(StringRef name) {
  for (Phase p : kAllPhases)
    if (getPhaseName(p) == name)
      return p;
  return std::nullopt;
}

bool isPhaseBuilt(Phase phase) {
  // Import is done by the driver itself (parsing .mlir); lower and bundle
  // are built; the other phases' pass groups are added as they land.
  return phase == Phase::Import || phase == Phase::Raise ||
         phase == Phase::Quantize || phase == Phase::Shard ||
         phase == Phase::Pipeline || phase == Phase::Partition ||
         phase == Phase::Lower || phase == Phase::Bundle;
}

LogicalResult buildPhasePipeline(OpPassManager &pm, Phase phase,
                                 const PipelineOptions &options,
                                 std::string &error) {
  if (phase == Phase::Import)
    return success();
  if (phase == Phase::Raise) {
    // Cheap patterns first: attention matching sees raised softmax/norms.
    OpPassManager &f = pm.nest<func::FuncOp>();
    f.addPass(createRaiseSoftmaxPass());
    f.addPass(createRaiseGeluPass());
    f.addPass(createRaiseSiluPass());
    f.addPass(createRaiseNormsPass());
    f.addPass(createRaiseRotaryPass());
    f.addPass(createRaiseAttentionPass());
    f.addPass(createCanonicalizerPass());
    return success();
  }
  if (phase == Phase::Quantize) {
    // Without --quant the phase has nothing to do (GGUF blocks stay as the
    // file stores them).
    if (options.quant.empty() && options.quantActivations == "auto")
      return success();
    QuantizeWeightsPassOptions q;
    q.scheme = options.quant.empty() ? "none" : options.quant;
    q.activations = options.quantActivations;
    q.rules = options.quantRules;
    q.skip = options.quantSkip;
    q.output = options.quantFile;
    q.report = options.quantReport;
    q.outputName = options.quantFileName;
    q.baseDir = options.baseDir;
    q.verbose = options.quantVerbose;
    pm.addPass(createQuantizeWeightsPass(q));
    return success();
  }
  if (phase == Phase::Shard) {
    // The mesh first: custom sharding passes (plugins) annotate on the
    // module's loom.mesh, so --mesh / --mesh-json must be declared before
    // they run (a program's own matching declaration is kept). The planner
    // then keeps every annotation and chooses the rest (a no-op without a
    // mesh).
    if (!options.mesh.empty() || !options.meshJson.empty()) {
      DeclareMeshPassOptions d;
      d.mesh = options.mesh;
      d.meshJson = options.meshJson;
      pm.addPass(createDeclareMeshPass(d));
    }
    if (!options.shardPasses.empty() &&
        failed(parsePassPipeline(options.shardPasses, pm))) {
      error = "cannot parse the sharding passes '" + options.shardPasses +
              "' (is the plugin that registers them loaded with --plugin?)";
      return failure();
    }
    PlanShardingPassOptions o;
    o.mesh = options.mesh;
    o.device = options.device;
    o.meshJson = options.meshJson;
    o.memoryLimitGiB = options.memoryLimitGiB;
    o.planFile = options.planFile;
    o.summary = options.planSummary;
    pm.addPass(createPlanShardingPass(o));
    return success();
  }
  if (phase == Phase::Pipeline) {
    // Decide (loom.stage on every op, the plan's pipeline section), then
    // materialise (one function per stage); both leave a module without a
    // 'pp' mesh axis (or pp = 1) as it is.
    AssignStagesPassOptions a;
    a.stages = options.stages;
    a.microbatches = options.microbatches;
    a.device = options.device;
    a.meshJson = options.meshJson;
    a.memoryLimitGiB = options.memoryLimitGiB;
    a.planFile = options.planFile;
    a.verbose = options.pipelineVerbose;
    a.summary = options.planSummary;
    pm.addPass(createAssignStagesPass(a));
    pm.addPass(createSplitStagesPass());
    return success();
  }
  if (phase == Phase::Partition) {
    // Decide (every change of sharding a loom.shard), materialise (the
    // per-rank program with its collectives; both a no-op on a program
    // without shardings), then cheaper collective sequences.
    pm.addPass(createInsertExplicitReshardsPass());
    pm.addPass(createPartitionPass());
    pm.addPass(createOptimizeCollectivesPass());
    return success();
  }
  if (phase == Phase::Lower) {
    buildLowerPassPipeline(pm, options.lower);
    return success();
  }
  if (phase == Phase::Bundle)
    return success();
  error = ("phase '" + getPhaseName(phase) +
           "' is not built yet in this version of Loom; stop earlier with "
           "--compile-to=<phase> (see README.md, status table)")
              .str();
  return failure();
}

bool isPassPhase(Phase phase) {
  return phase != Phase::Import && phase != Phase::Bundle;
}

namespace {
// The options of the registered loom-<phase>-pipeline pipelines: the
// PipelineOptions fields of that phase, under loomc's flag names.
struct NoOptions : PassPipelineOptions<NoOptions> {
  void apply(PipelineOptions &) const {}
};

struct QuantizeOptions : PassPipelineOptions<QuantizeOptions> {
  Option<std::string> quant{*this, "quant",
                            llvm::cl::desc("scheme, e.g. int4:32")};
  Option<std::string> quantAct{*this, "quant-act", llvm::cl::init("auto"),
                               llvm::cl::desc("auto, f32, int8 or int8x3")};
  Option<std::string> file{*this, "quant-file",
                           llvm::cl::desc("quantized weights' file")};
  Option<std::string> report{*this, "quant-report",
                             llvm::cl::desc("JSON error report")};
  Option<std::string> skip{*this, "quant-skip", llvm::cl::init("default"),
                           llvm::cl::desc("globs kept in float")};
  Option<std::string> rules{*this, "quant-rules",
                            llvm::cl::desc("'GLOB=SCHEME;GLOB=skip'")};
  Option<std::string> baseDir{*this, "base-dir",
                              llvm::cl::desc("relative weight files' dir")};
  void apply(PipelineOptions &o) const {
    o.quant = quant;
    o.quantActivations = quantAct;
    o.quantFile = file;
    o.quantReport = report;
    o.quantSkip = skip;
    o.quantRules = rules;
    o.baseDir = baseDir;
  }
};

struct ShardOptions : PassPipelineOptions<ShardOptions> {
  Option<std::string> mesh{*this, "mesh",
                           llvm::cl::desc("mesh, e.g. dp=2,tp=4")};
  Option<std::string> meshJson{*this, "mesh-json",
                               llvm::cl::desc("JSON mesh spec file")};
  Option<std::string> device{*this, "device", llvm::cl::init("cpu"),
                             llvm::cl::desc("device of every rank")};
  Option<double> memoryLimit{*this, "memory-limit", llvm::cl::init(0),
                             llvm::cl::desc("GiB per device (0: capacity)")};
  Option<std::string> planFile{*this, "plan", llvm::cl::desc("plan JSON")};
  Option<std::string> passes{*this, "shard-passes",
                             llvm::cl::desc("passes run before the planner")};
  void apply(PipelineOptions &o) const {
    o.mesh = mesh;
    o.meshJson = meshJson;
    o.device = device;
    o.memoryLimitGiB = memoryLimit;
    o.planFile = planFile;
    o.shardPasses = passes;
  }
};

struct PipelineStageOptions : PassPipelineOptions<PipelineStageOptions> {
  Option<std::string> stages{*this, "stages",
                             llvm::cl::desc("layer ranges, e.g. 0-9,10-19")};
  Option<int64_t> microbatches{*this, "microbatches", llvm::cl::init(1),
                               llvm::cl::desc("microbatches in flight")};
  Option<std::string> device{*this, "device", llvm::cl::init("cpu"),
                             llvm::cl::desc("device of every rank")};
  Option<std::string> meshJson{*this, "mesh-json",
                               llvm::cl::desc("JSON mesh spec file")};
  Option<double> memoryLimit{*this, "memory-limit", llvm::cl::init(0),
                             llvm::cl::desc("GiB per device (0: capacity)")};
  Option<std::string> planFile{*this, "plan",
                               llvm::cl::desc("plan JSON to add to")};
  void apply(PipelineOptions &o) const {
    o.stages = stages;
    o.microbatches = microbatches;
    o.device = device;
    o.meshJson = meshJson;
    o.memoryLimitGiB = memoryLimit;
    o.planFile = planFile;
  }
};

struct LowerOptions : PassPipelineOptions<LowerOptions> {
  Option<std::string> qmatmul{*this, "qmatmul",
                              llvm::cl::desc("f32, i8, i8x3 or dequant")};
  Option<bool> gemm{*this, "gemm", llvm::cl::init(true),
                    llvm::cl::desc("call the runtime's GEMM")};
  Option<bool> interleave{*this, "interleave", llvm::cl::init(true),
                          llvm::cl::desc("interleaved int8 qweights")};
  Option<std::string> qmmTile{*this, "qmm-tile", llvm::cl::desc("MRxNR2xNR1")};
  Option<std::string> qmmPrefetch{*this, "qmm-prefetch",
                                  llvm::cl::desc("bytes ahead")};
  Option<bool> outlineLayers{
      *this, "outline-layers", llvm::cl::init(true),
      llvm::cl::desc("one function per distinct repeated layer")};
  void apply(PipelineOptions &o) const {
    o.lower.qmatmul = qmatmul;
    o.lower.gemm = gemm;
    o.lower.interleave = interleave;
    o.lower.qmmTile = qmmTile;
    o.lower.qmmPrefetch = qmmPrefetch;
    o.lower.outlineLayers = outlineLayers;
  }
};

template <typename Options> void registerPhasePipeline(Phase phase) {
  // The registry copies both strings.
  std::string arg = ("loom-" + getPhaseName(phase) + "-pipeline").str();
  std::string summary =
      ("The " + getPhaseName(phase) + " phase: " + getPhaseSummary(phase))
          .str();
  PassPipelineRegistration<Options>(
      arg, summary, [phase](OpPassManager &pm, const Options &flags) {
        PipelineOptions options;
        flags.apply(options);
        std::string error;
        if (failed(buildPhasePipeline(pm, phase, options, error)))
          llvm::report_fatal_error(llvm::StringRef(error));
      });
}
} // namespace

void registerAllLoomPassesAndPipelines() {
  // Each phase folder registers its group here as it lands.
  registerLoweringPasses();
  registerRaisePasses();
  registerShardingPasses();
  registerPartitionPasses();
  registerQuantizePasses();
  registerPipelinePasses();
  registerPhasePipeline<NoOptions>(Phase::Raise);
  registerPhasePipeline<QuantizeOptions>(Phase::Quantize);
  registerPhasePipeline<ShardOptions>(Phase::Shard);
  registerPhasePipeline<PipelineStageOptions>(Phase::Pipeline);
  registerPhasePipeline<NoOptions>(Phase::Partition);
  registerPhasePipeline<LowerOptions>(Phase::Lower);
}

} // namespace loom
