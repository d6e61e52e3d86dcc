//===- Passes.td - the shard phase's passes ----------------*- tablegen -*-===//

#ifndef LOOM_PASSES_SHARDING_PASSES_TD
#define LOOM_PASSES_SHARDING_PASSES_TD

include "mlir/Pass/PassBase.td"

def DeclareMeshPass : Pass<"loom-declare-mesh", "mlir::ModuleOp"> {
  let summary = "Declare the mesh given as an option as the module's loom.mesh";
  let description = [{
    Adds `loom.mesh @<name>` with the axes of `mesh` (e.g. `dp=2,tp=4`) or of
    the JSON mesh spec `mesh-json` when the module declares no mesh. A module
    that already declares one (the one called `name`, else its first) keeps
    it when its axes are the ones given and is refused otherwise, naming both
    meshes. Without either option it does nothing. The shard phase
    (loom-shard-pipeline) runs it before the custom sharding passes
    (`shard-passes`, plugins), which annotate on the module's mesh, and
    before the planner, which then finds it. docs/SHARDING.md.

    ```mlir
    // --loom-declare-mesh="mesh=dp=2,tp=4" on a module without a mesh adds
    loom.mesh @mesh = <dp = 2, tp = 4>
    ```
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", "",
           "The mesh (e.g. dp=2,tp=4) the module must declare">,
    Option<"meshJson", "mesh-json", "std::string", "",
           "JSON mesh spec file whose axes the module must declare">,
    Option<"meshName", "name", "std::string", "\"mesh\"",
           "Symbol name of the declared mesh">,
  ];
  let dependentDialects = ["loom::LoomDialect"];
}

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
