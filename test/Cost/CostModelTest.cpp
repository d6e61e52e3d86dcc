//===- CostModelTest.cpp - Roofline, collective and memory formulas -------===//

#include "loom/Cost/CostModel.h"

#include <gtest/gtest.h>

using namespace loom::cost;

namespace {
LinkSpec link(double gbps, double us) {
  return LinkSpec{"test", gbps * 1e9, us * 1e-6, true};
}
Efficiency ideal() { return Efficiency{1, 1, 1}; }
} // namespace

// Stored dtypes meet the compute precisions in one place: half types at
// their own rate, every other dtype at f32's.
TEST(ElemType, ComputeTypeOfDType) {
  using loom::DType;
  EXPECT_EQ(computeTypeOf(DType::F16), ElemType::F16);
  EXPECT_EQ(computeTypeOf(DType::BF16), ElemType::BF16);
  for (DType t : {DType::F32, DType::F64, DType::I8, DType::I32, DType::I64,
                  DType::U8, DType::I1})
    EXPECT_EQ(computeTypeOf(t), ElemType::F32) << loom::dtypeName(t);
}

TEST(Collectives, BytesPerRank) {
  EXPECT_DOUBLE_EQ(collectiveBytesPerRank(Collective::AllReduce, 800, 8), 1400);
  EXPECT_DOUBLE_EQ(collectiveBytesPerRank(Collective::AllGather, 800, 8), 700);
  EXPECT_DOUBLE_EQ(collectiveBytesPerRank(Collective::ReduceScatter, 800, 4),
                   600);
  EXPECT_DOUBLE_EQ(collectiveBytesPerRank(Collective::AllToAll, 800, 2), 400);
  EXPECT_DOUBLE_EQ(collectiveBytesPerRank(Collective::SendRecv, 800, 2), 800);
  EXPECT_DOUBLE_EQ(collectiveBytesPerRank(Collective::AllReduce, 800, 1), 0);
}

TEST(Collectives, RingAllReduceTime) {
  // A ring moves 2(p-1)/p of the data: 96 MB on 8 ranks -> 168 MB per rank,
  // 0.373 ms at 450 GB/s (REFERENCES.md quotes 0.2 ms for the data alone).
  double t = collectiveTime(Collective::AllReduce, 96e6, 8, link(450, 0),
                            Algorithm::Ring, ideal());
  EXPECT_NEAR(t, 2.0 * 7 / 8 * 96e6 / 450e9, 1e-12);
  // Latency: 2(p-1) hops.
  double tl = collectiveTime(Collective::AllReduce, 8, 8, link(450, 5),
                             Algorithm::Ring, ideal());
  EXPECT_NEAR(tl, 14 * 5e-6, 1e-9);
  // Tree wins for tiny messages on many ranks, ring for large ones.
  double tree = collectiveTime(Collective::AllReduce, 8, 64, link(50, 5),
                               Algorithm::Tree, ideal());
  EXPECT_NEAR(tree, 2 * 6 * 5e-6 + 16 / 50e9, 1e-9);
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::AllReduce, 8, 64, link(50, 5),
                                  Algorithm::Auto, ideal()),
                   tree);
  double ringBig = collectiveTime(Collective::AllReduce, 1e9, 64, link(50, 5),
                                  Algorithm::Ring, ideal());
  double treeBig = collectiveTime(Collective::AllReduce, 1e9, 64, link(50, 5),
                                  Algorithm::Tree, ideal());
  EXPECT_LT(ringBig, treeBig);
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::AllReduce, 1e9, 64, link(50, 5),
                                  Algorithm::Auto, ideal()),
                   ringBig);
  EXPECT_EQ(collectiveTime(Collective::AllReduce, 1e9, 1, link(50, 5)), 0);
}

TEST(Collectives, OthersAndEfficiency) {
  EXPECT_NEAR(collectiveTime(Collective::AllGather, 1e9, 4, link(100, 0),
                             Algorithm::Ring, ideal()),
              0.75e9 / 100e9, 1e-12);
  EXPECT_NEAR(collectiveTime(Collective::SendRecv, 1e9, 2, link(100, 2),
                             Algorithm::Ring, ideal()),
              1e9 / 100e9 + 2e-6, 1e-12);
  Efficiency half{1, 1, 0.5};
  EXPECT_NEAR(collectiveTime(Collective::AllToAll, 1e9, 2, link(100, 0),
                             Algorithm::Ring, half),
              0.5e9 / 50e9, 1e-12);
}

TEST(Collectives, OnMeshAxes) {
  auto mesh = parseMeshSpec("dp=4,tp=8", h100_sxm());
  ASSERT_TRUE(mesh.ok()) << mesh.error().message;
  Efficiency e = ideal();
  double tp = collectiveTimeOnAxes(Collective::AllReduce, 1e9, *mesh, {"tp"},
                                   Algorithm::Ring, e);
  EXPECT_NEAR(tp, 1.75e9 / 450e9 + 14 * 3e-6, 1e-9);
  // Over both axes: 32 ranks, bounded by InfiniBand.
  double both = collectiveTimeOnAxes(Collective::AllReduce, 1e9, *mesh,
                                     {"dp", "tp"}, Algorithm::Ring, e);
  EXPECT_NEAR(both, 2.0 * 31 / 32 * 1e9 / 50e9 + 62 * 5e-6, 1e-9);
  EXPECT_EQ(collectiveTimeOnAxes(Collective::AllReduce, 1e9, *mesh, {"pp"}), 0);
}

TEST(Roofline, ComputeAndMemoryBound) {
  DeviceSpec h = h200();
  Efficiency e = ideal();
  // A 4096x4096 bf16 GEMV: 2*16.7M FLOPs, 33.5 MB -> memory-bound.
  double flops = 2.0 * 4096 * 4096, bytes = 2.0 * 4096 * 4096;
  EXPECT_NEAR(rooflineTime(h, ElemType::BF16, flops, bytes, e), bytes / 4.8e12,
              1e-15);
  // A big GEMM is compute-bound.
  double f = 2.0 * 8192 * 8192 * 8192, b = 3 * 2.0 * 8192 * 8192;
  EXPECT_NEAR(rooflineTime(h, ElemType::BF16, f, b, e), f / 989.4e12, 1e-12);
  // fp8 on an A100 (no fp8) runs at the int8 tensor-core rate we record;
  // f32 peaks.
  EXPECT_DOUBLE_EQ(a100_80gb().peakFlops(ElemType::BF16), 312e12);
  EXPECT_DOUBLE_EQ(a100_80gb().peakFlops(ElemType::F32), 19.5e12);
  EXPECT_DOUBLE_EQ(h100_sxm().peakFlops(ElemType::FP8), 1978.9e12);
  // A device without tf32 falls back to f32.
  DeviceSpec cpu = describeCpu("c", 2, 32, 3.0, 20e9, 8e9);
  EXPECT_DOUBLE_EQ(cpu.peakFlops(ElemType::TF32), 192e9);
}

TEST(Memory, AdamMixedPrecisionIs16BytesPerParam) {
  MemoryBreakdown m = trainingStateMemory(70e9, 1);
  EXPECT_NEAR(m.total(), 1.12e12, 1e9); // 70B x 16 B ~ 1.1 TB
  EXPECT_DOUBLE_EQ(m.weights, 140e9);
  EXPECT_DOUBLE_EQ(m.gradients, 140e9);
  EXPECT_DOUBLE_EQ(m.optimizer, 840e9);
}

TEST(Memory, ZeroStages) {
  double P = 1e9;
  TrainingMemoryOptions o;
  o.zeroStage = 1;
  EXPECT_DOUBLE_EQ(trainingStateMemory(P, 8, o).total(), 2e9 + 2e9 + 12e9 / 8);
  o.zeroStage = 2;
  EXPECT_DOUBLE_EQ(trainingStateMemory(P, 8, o).total(), 2e9 + 14e9 / 8);
  o.zeroStage = 3;
  EXPECT_DOUBLE_EQ(trainingStateMemory(P, 8, o).total(), 16e9 / 8);
}

TEST(Memory, KvCacheAndInference) {
  // Llama-2-7B-like: 32 layers, 32 KV heads x 128, fp16: 0.5 MB per token.
  EXPECT_DOUBLE_EQ(kvCacheBytes(32, 32, 128, 1, 2), 524288);
  EXPECT_DOUBLE_EQ(kvCacheBytes(32, 32, 128, 1, 2, 4), 131072);
  // 8 KV heads on tp=16 are replicated, never below one head per rank.
  EXPECT_DOUBLE_EQ(kvCacheBytes(80, 8, 128, 1, 2, 16), 2.0 * 80 * 128 * 2);
  // REFERENCES.md: 70B in 16 bits = 140 GB; 4.5 bits ~ 39 GB.
  MemoryBreakdown m = inferenceMemory(70e9, 2, 80, 8, 128, 32768, 2);
  EXPECT_DOUBLE_EQ(m.weights, 140e9);
  EXPECT_NEAR(m.kvCache, 10.7e9, 0.1e9);
  EXPECT_NEAR(inferenceMemory(70e9, 4.5 / 8, 80, 8, 128, 0, 2).weights, 39.4e9,
              0.1e9);
}
