//===- Passes.td - the pipeline phase's passes -------------*- tablegen -*-===//

#ifndef LOOM_PASSES_PIPELINE_PASSES_TD
#define LOOM_PASSES_PIPELINE_PASSES_TD

include "mlir/Pass/PassBase.td"

def AssignStagesPass : Pass<"loom-assign-stages", "mlir::ModuleOp"> {
  let summary = "Assign the decoder layers to balanced pipeline stages";
  let description = [{
    The decide step of the pipeline phase. On a module whose `loom.mesh`
    has an axis `pp` of size P > 1, the repeated decoder layers (found from
    the layer index in their weights' names, `blk.N.` / `model.layers.N.` /
    `h.N.`) are split into P contiguous stages minimising the slowest
    stage's predicted time (lib/Cost roofline per op, as the planner prices
    it, on the shardings the planner chose; the embedding counted in stage
    0, the final norm and LM head in stage P-1) while each stage's memory
    (weights + KV caches + in-flight activations) fits a device. Pins: the
    `stages` option (`0-9,10-19,...`, one layer range per stage) or a
    `loom.stage` written on an op of a layer. Every op of every public
    function gets `loom.stage = #loom.stage<k>`; the module gets
    `loom.pipeline = {axis = "pp", stages = P}`; `plan-file` (the planner's
    JSON) gains its `pipeline` section. Without a `pp` axis (or pp = 1) the
    module is left as it is. docs/PIPELINE.md.

    ```mlir
    // pp = 2, two layers: layer 0's ops in stage 0, layer 1's in stage 1
    %5 = loom.matmul %4, %3 {loom.stage = #loom.stage<0>} : ...
    %9 = loom.matmul %8, %7 {loom.stage = #loom.stage<1>} : ...
    ```
  }];
  let options = [
    Option<"stages", "stages", "std::string", "",
           "Layer ranges per stage, e.g. 0-9,10-19 (default: balanced)">,
    Option<"microbatches", "microbatches", "int64_t", "1",
           "Microbatches in flight (bubble and activation memory)">,
    Option<"device", "device", "std::string", "\"cpu\"",
           "Device of every rank (lib/Cost)">,
    Option<"meshJson", "mesh-json", "std::string", "",
           "JSON mesh spec (links), see docs/COST-MODEL.md">,
    Option<"memoryLimitGiB", "memory-limit", "double", "0",
           "Memory per device in GiB (0: the device's capacity)">,
    Option<"dynamicSize", "dynamic-size", "int64_t", "128",
           "Size assumed for dynamic dimensions when costing">,
    Option<"planFile", "plan-file", "std::string", "",
           "Add the pipeline section to this plan JSON">,
    Option<"verbose", "verbose", "bool", "false",
           "Report the stages as a remark">,
    Option<"summary", "summary", "bool", "false",
           "Print the stages and each stage's memory per device to stderr">,
  ];
  let dependentDialects = ["loom::LoomDialect"];
}

def SplitStagesPass : Pass<"loom-split-stages", "mlir::ModuleOp"> {
  let summary = "Split each public function into one function per stage";
  let description = [{
    The materialise step of the pipeline phase: each public function `@f`
    of a module with `loom.pipeline` becomes public functions
    `@f__stage0` ... `@f__stage{P-1}` (and `@f` goes), each with
    `loom.stage_of = {entry = "f", stage = k}`. Stage k takes first the
    values stage k-1 returns (`loom.boundary = j`, keeping the planner's
    `loom.sharding`: the rank's local shard), then the entry arguments its
    ops use (their attributes plus `loom.entry_arg = i`); it returns the
    values later stages need (a value stage k+2 needs passes through k+1),
    the last stage the entry's results. Ops that depend only on weights,
    constants and entry arguments (weights, the embedding, rotary tables,
    reshards of weights) are cloned into each stage that uses them, so a
    tied embedding / LM head is referenced in both stages. A module
    without `loom.pipeline` is left as it is. docs/PIPELINE.md.

    ```mlir
    func.func @forward__stage1(%arg0: tensor<1x?x64xf32> {loom.boundary = 0 : i64},
        %arg1: tensor<?xi64> {loom.entry_arg = 1 : i64, loom.name = "positions"})
        -> (tensor<1x?x96xf32> {loom.name = "logits"})
        attributes {loom.stage_of = {entry = "forward", stage = 1 : i64}}
    ```
  }];
  let dependentDialects = ["loom::LoomDialect"];
}

#endif // LOOM_PASSES_PIPELINE_PASSES_TD
