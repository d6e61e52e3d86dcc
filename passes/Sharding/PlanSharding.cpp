//===- PlanSharding.cpp - the loom-plan-sharding pass ---------------------===//

#include "passes/Sharding/Passes.h"
#include "passes/Sharding/Planner.h"

namespace loom {
#define GEN_PASS_DEF_PLANSHARDINGPASS
#include "passes/Sharding/Passes.h.inc"

namespace {
struct PlanShardingPass : public impl::PlanShardingPassBase<PlanShardingPass> {
  using Base::Base;
  void runOnOperation() override {
    PlannerOptions o;
    o.mesh = mesh;
    o.device = device;
    o.meshJson = meshJson;
    o.devicesPerNode = devicesPerNode;
    o.memoryLimit = memoryLimitGiB * double(1ull << 30);
    o.beam = beam;
    o.dynamicSize = dynamicSize;
    o.vectorWidth = vectorWidth;
    o.planFile = planFile;
    o.printSummary = summary;
    if (failed(planSharding(getOperation(), o)))
      signalPassFailure();
  }
};
} // namespace
} // namespace loom
