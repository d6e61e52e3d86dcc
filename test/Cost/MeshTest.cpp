//===- MeshTest.cpp - Mesh spec parsing and its errors --------------------===//

#include "loom/Cost/Mesh.h"

#include <gtest/gtest.h>

using namespace loom::cost;

namespace {
std::string errorOf(const Result<MeshSpec> &r) {
  return r.ok() ? std::string("<ok>") : r.error().message;
}
} // namespace

TEST(MeshSpec, ShortFormDefaultLinks) {
  auto m = parseMeshSpec("dp=2,tp=4", h100_sxm());
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->axes.size(), 2u);
  EXPECT_EQ(m->axes[0].name, "dp");
  EXPECT_EQ(m->axes[0].size, 2);
  EXPECT_EQ(m->numDevices(), 8);
  // 2 x 4 = 8 fits in one node of 8: both on NVLink.
  EXPECT_EQ(m->axes[1].link.name, "nvlink4");
  EXPECT_EQ(m->axes[0].link.name, "nvlink4");
  EXPECT_DOUBLE_EQ(m->axes[1].link.bandwidth, 450e9);

  auto big = parseMeshSpec(" dp = 4 , pp=2, tp=8 ", h200());
  ASSERT_TRUE(big.ok()) << big.error().message;
  EXPECT_EQ(big->axes[2].link.name, "nvlink4");
  EXPECT_EQ(big->axes[1].link.name, "ib-ndr");
  EXPECT_EQ(big->axes[0].link.name, "ib-ndr");
  EXPECT_FALSE(big->axes[0].link.intraNode);
  EXPECT_EQ(big->axisSize("pp"), 2);
  EXPECT_EQ(big->axisSize("ep"), 1);

  auto a100 = parseMeshSpec("dp=32,tp=8", a100_80gb());
  ASSERT_TRUE(a100.ok());
  EXPECT_EQ(a100->axes[1].link.name, "nvlink3");
  EXPECT_EQ(a100->axes[0].link.name, "ib-hdr");
  EXPECT_DOUBLE_EQ(a100->axes[0].link.bandwidth, 25e9);

  auto cpu = parseMeshSpec("dp=2,tp=4", *deviceByName("cpu"));
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->axes[0].link.name, "shm");
  EXPECT_EQ(cpu->axes[1].link.name, "shm");
  EXPECT_FALSE(describeMesh(*cpu).empty());
}

TEST(MeshSpec, ShortFormErrors) {
  DeviceSpec d = h100_sxm();
  EXPECT_NE(errorOf(parseMeshSpec("", d)).find("empty"), std::string::npos);
  EXPECT_EQ(errorOf(parseMeshSpec("dp=2,tp=x", d)),
            "mesh spec: axis 2 ('tp'): size 'x' is not a positive integer");
  EXPECT_EQ(errorOf(parseMeshSpec("dp=0", d)),
            "mesh spec: axis 1 ('dp'): size '0' is not a positive integer");
  EXPECT_NE(errorOf(parseMeshSpec("dp=2,,tp=2", d)).find("axis 2: empty"),
            std::string::npos);
  EXPECT_NE(errorOf(parseMeshSpec("dp2", d)).find("expected name=size"),
            std::string::npos);
  EXPECT_NE(errorOf(parseMeshSpec("2x=2", d)).find("not an identifier"),
            std::string::npos);
  EXPECT_NE(errorOf(parseMeshSpec("tp=2,tp=4", d)).find("repeats axis 1"),
            std::string::npos);
  EXPECT_NE(errorOf(parseMeshSpec("dp=2,", d)).find("axis 2: empty"),
            std::string::npos);
}

TEST(MeshSpec, Json) {
  auto m = parseMeshJson(R"({"device": "h100", "devices_per_node": 4,
    "axes": [{"name": "dp", "size": 4},
             {"name": "tp", "size": 4,
              "link": {"bandwidth_gbps": 100, "latency_us": 2}},
             {"name": "ep", "size": 2, "link": "pcie5"}]})");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->devicesPerNode, 4);
  EXPECT_EQ(m->axes[0].link.name, "ib-ndr"); // 4*4*2 > 4: across nodes
  EXPECT_DOUBLE_EQ(m->axes[1].link.bandwidth, 100e9);
  EXPECT_DOUBLE_EQ(m->axes[1].link.latency, 2e-6);
  EXPECT_EQ(m->axes[2].link.name, "pcie5");

  auto custom = parseMeshJson(R"({"device": {"name": "mygpu",
      "peak_tflops": {"bf16": 100, "f32": 10}, "mem_bandwidth_gbps": 1000,
      "mem_capacity_gb": 24}, "axes": [{"name": "tp", "size": 2}]})");
  ASSERT_TRUE(custom.ok()) << custom.error().message;
  EXPECT_EQ(custom->device.name, "mygpu");
  EXPECT_DOUBLE_EQ(custom->device.peakFlops(ElemType::BF16), 100e12);
  EXPECT_DOUBLE_EQ(custom->device.memCapacity, 24e9);

  auto based = parseMeshJson(R"({"device": {"base": "h100",
      "mem_capacity_gb": 94}, "axes": [{"name": "tp", "size": 2}]})");
  ASSERT_TRUE(based.ok()) << based.error().message;
  EXPECT_DOUBLE_EQ(based->device.memCapacity, 94e9);
  EXPECT_DOUBLE_EQ(based->device.memBandwidth, 3350e9);
}

TEST(MeshSpec, JsonErrorsNameTheField) {
  EXPECT_EQ(errorOf(parseMeshJson("{")), "mesh spec: not valid JSON");
  EXPECT_EQ(errorOf(parseMeshJson("[]")),
            "mesh spec: the top level must be an object");
  EXPECT_EQ(errorOf(parseMeshJson(R"({"axes": []})")),
            "mesh spec: missing field 'device'");
  EXPECT_NE(errorOf(parseMeshJson(R"({"device": "tpu", "axes": []})"))
                .find("field 'device': unknown device 'tpu'"),
            std::string::npos);
  EXPECT_EQ(errorOf(parseMeshJson(R"({"device": "h100"})")),
            "mesh spec: missing field 'axes'");
  EXPECT_EQ(errorOf(parseMeshJson(R"({"device": "h100", "axes": []})")),
            "mesh spec: field 'axes' must be a non-empty array");
  EXPECT_EQ(errorOf(parseMeshJson(
                R"({"device": "h100", "axes": [{"name": "tp", "size": -1}]})")),
            "mesh spec: axes[0] ('tp'): field 'size' must be a positive "
            "integer");
  EXPECT_EQ(
      errorOf(parseMeshJson(R"({"device": "h100", "axes": [{"size": 2}]})")),
      "mesh spec: axes[0]: missing field 'name'");
  EXPECT_NE(errorOf(parseMeshJson(R"({"device": "h100", "axes":
                [{"name": "tp", "size": 2, "link": "carrier-pigeon"}]})"))
                .find("axes[0] ('tp'): field 'link': unknown link"),
            std::string::npos);
  EXPECT_EQ(errorOf(parseMeshJson(R"({"device": "h100", "axes":
                [{"name": "tp", "size": 2, "link": {"latency_us": 1}}]})")),
            "mesh spec: axes[0] ('tp'): link: missing field 'bandwidth_gbps'");
  EXPECT_EQ(errorOf(parseMeshJson(R"({"device": {"name": "x",
      "peak_tflops": {"bf16": 1}, "mem_capacity_gb": 1},
      "axes": [{"name": "tp", "size": 2}]})")),
            "mesh spec: device: missing field 'mem_bandwidth_gbps'");
  EXPECT_EQ(errorOf(parseMeshJson(R"({"device": {"name": "x",
      "peak_tflops": {"bf17": 1}, "mem_capacity_gb": 1,
      "mem_bandwidth_gbps": 1}, "axes": [{"name": "tp", "size": 2}]})")),
            "mesh spec: device: field 'peak_tflops.bf17' is not an element "
            "type (f32, tf32, bf16, fp8)");
  EXPECT_EQ(errorOf(parseMeshJson(R"({"device": "h100", "devices_per_node": 0,
      "axes": [{"name": "tp", "size": 2}]})")),
            "mesh spec: field 'devices_per_node' must be a positive integer");
}

TEST(Devices, Names) {
  EXPECT_TRUE(deviceByName("a100-40gb").ok());
  EXPECT_DOUBLE_EQ(deviceByName("a100-40gb")->memCapacity, 40e9);
  EXPECT_DOUBLE_EQ(deviceByName("h200")->memBandwidth, 4.8e12);
  auto bad = deviceByName("v100");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("known: a100-40gb"), std::string::npos);
  EXPECT_EQ(*parseElemType("bf16"), ElemType::BF16);
  EXPECT_FALSE(parseElemType("f64").ok());
  EXPECT_EQ(elemBytes(ElemType::FP8), 1u);
}

TEST(Devices, MeasuredCpuIsPlausible) {
  DeviceSpec d = measureCpu(1, 8u << 20);
  EXPECT_EQ(d.kind, DeviceKind::CPU);
  EXPECT_GT(d.memBandwidth, 0.5e9);
  EXPECT_GT(d.peakF32, 0.5e9);
}
