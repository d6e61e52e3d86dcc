//===- ReshardTest.cpp - the reshard model's choice of collectives --------===//
//
// The steps planReshard chooses are what loom-partition materialises and
// what the planner prices (include/loom/Cost/Reshard.h). Mesh: axis 0 "dp"
// of 2, axis 1 "tp" of 4.
//
//===----------------------------------------------------------------------===//

#include "loom/Cost/Reshard.h"

#include <gtest/gtest.h>

using namespace loom::cost;

namespace {
const std::vector<int64_t> kSizes = {2, 4};
constexpr int dp = 0, tp = 1;

std::vector<ReshardStep> plan(const Layout &src, const Layout &dst) {
  std::vector<ReshardStep> steps;
  std::string error;
  EXPECT_TRUE(planReshard(src, dst, steps, error)) << error;
  return steps;
}
} // namespace

// A partial sum that the target splits by the same axis: one reduce_scatter
// over the whole buffer.
TEST(Reshard, PartialToSplitIsReduceScatter) {
  auto steps = plan({{{}, {}}, {tp}}, {{{tp}, {}}, {}});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, ReshardStep::ReduceScatter);
  EXPECT_EQ(steps[0].axes, std::vector<int>{tp});
  EXPECT_EQ(steps[0].dim, 0);
  EXPECT_DOUBLE_EQ(stepBytes(steps[0], 800, kSizes), 800);
}

// Partial over dp and tp, the target split over tp only: reduce_scatter
// over tp, then all_reduce over dp on the scattered quarter.
TEST(Reshard, ScatterWhatTheTargetSplitsReduceTheRest) {
  auto steps = plan({{{}, {}}, {dp, tp}}, {{{}, {tp}}, {}});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].kind, ReshardStep::ReduceScatter);
  EXPECT_EQ(steps[0].dim, 1);
  EXPECT_EQ(steps[1].kind, ReshardStep::AllReduce);
  EXPECT_EQ(steps[1].axes, std::vector<int>{dp});
  EXPECT_DOUBLE_EQ(stepBytes(steps[1], 800, kSizes), 200);
}

// An axis moving from one dimension to another: all_to_all.
TEST(Reshard, MovingAxisIsAllToAll) {
  auto steps = plan({{{tp}, {}}, {}}, {{{}, {tp}}, {}});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, ReshardStep::AllToAll);
  EXPECT_EQ(steps[0].dim, 1);
  EXPECT_EQ(steps[0].concatDim, 0);
  EXPECT_DOUBLE_EQ(stepBytes(steps[0], 800, kSizes), 200);
}

// Gathers: one collective when the axes are listed in mesh order, one per
// axis (minor first) otherwise; bytes of the gathered output.
TEST(Reshard, GatherOrder) {
  auto one = plan({{{dp, tp}, {}}, {}}, Layout::replicated(2));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].kind, ReshardStep::AllGather);
  EXPECT_EQ(one[0].axes, (std::vector<int>{dp, tp}));
  EXPECT_DOUBLE_EQ(stepBytes(one[0], 800, kSizes), 800);
  auto two = plan({{{tp, dp}, {}}, {}}, Layout::replicated(2));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].axes, std::vector<int>{dp});
  EXPECT_DOUBLE_EQ(stepBytes(two[0], 800, kSizes), 200);
  EXPECT_EQ(two[1].axes, std::vector<int>{tp});
  EXPECT_DOUBLE_EQ(stepBytes(two[1], 800, kSizes), 800);
}

// Splitting a whole value is a local slice: free.
TEST(Reshard, SplitIsLocalSlice) {
  auto steps = plan(Layout::replicated(2), {{{tp}, {dp}}, {}});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, ReshardStep::LocalSlice);
  EXPECT_EQ(steps[0].split, (std::vector<std::vector<int>>{{tp}, {dp}}));
  MeshSpec mesh;
  EXPECT_EQ(stepTime(steps[0], 800, kSizes, {"dp", "tp"}, mesh), 0);
}

// A reshard cannot create partial sums.
TEST(Reshard, RefusesNewPartial) {
  std::vector<ReshardStep> steps;
  std::string error;
  EXPECT_FALSE(planReshard(Layout::replicated(1), {{{}}, {tp}}, steps, error));
  EXPECT_NE(error.find("partial"), std::string::npos);
}

// The time of a step is the cost model's collective time on its axes.
TEST(Reshard, StepTimeIsCollectiveTime) {
  auto device = deviceByName("h100-sxm");
  ASSERT_TRUE(device);
  auto parsed = parseMeshSpec("dp=2,tp=4", *device);
  ASSERT_TRUE(parsed);
  auto steps = plan({{{}, {}}, {tp}}, Layout::replicated(2));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_DOUBLE_EQ(stepTime(steps[0], 800, kSizes, {"dp", "tp"}, *parsed),
                   collectiveTimeOnAxes(Collective::AllReduce, 800, *parsed,
                                        {"tp"}, Algorithm::Auto));
}
