//===- Passes.td - the shard phase's passes ----------------*- tablegen -*-===//

#ifndef LOOM_PASSES_SHARDING_PASSES_TD
#define LOOM_PASSES_SHARDING_PASSES_TD

include "mlir/Pass/PassBase.td"

def PlanShardingPass : Pass<"loom-plan-sharding", "mlir::ModuleOp"> {
  let summary = "Choose a sharding for every value on the module's mesh";
  let description = [{
    Every op offers strategies through ShardingRuleOpInterface (each mesh
    axis assigned to one of its loops, or none); a dynamic programme over the
    ops in order (frontier of live values' shardings, pruned to `beam`
    states) picks one per op minimising the predicted time (lib/Cost:
    roofline per op, ring/tree collectives per reshard) plus a memory price
    raised until the weights and inputs fit `memory-limit` per device.
    `loom.sharding` annotations on results and arguments and `loom.shard`
    ops are kept as given. Writes `loom.sharding` on every split result and
    weight and an explicit `loom.shard` wherever a value must change
    sharding (the decide step; loom-partition materialises them). Functions
    that already contain collectives are left alone. docs/SHARDING.md.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", "",
           "Declare this mesh (e.g. dp=2,tp=4) when the module has none">,
    Option<"device", "device", "std::string", "\"cpu\"",
           "Device of every rank: a100-40gb, a100-80gb, h100-sxm, h200, cpu">,
    Option<"meshJson", "mesh-json", "std::string", "",
           "JSON mesh spec (links per axis), see docs/COST-MODEL.md">,
    Option<"devicesPerNode", "devices-per-node", "int64_t", "0",
           "Devices per node (axes inside a node use the intra-node link)">,
    Option<"memoryLimitGiB", "memory-limit", "double", "0",
           "Memory per device in GiB (0: the device's capacity)">,
    Option<"beam", "beam", "int64_t", "64",
           "Frontier states kept per op">,
    Option<"dynamicSize", "dynamic-size", "int64_t", "128",
           "Size assumed for dynamic dimensions when costing">,
    Option<"vectorWidth", "vector-width", "int64_t", "8",
           "Elements a shard of a split innermost dimension keeps whole "
           "(SIMD lanes: 8 f32 on AVX2); 1 turns the rule off">,
    Option<"planFile", "plan-file", "std::string", "",
           "Write the plan as JSON to this file">,
    Option<"summary", "summary", "bool", "false",
           "Print a readable summary of the plan to stderr">,
  ];
  let dependentDialects = ["loom::LoomDialect"];
}

#endif // LOOM_PASSES_SHARDING_PASSES_TD
