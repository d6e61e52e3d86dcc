//===- tools/loom-run/unittests/CudaBackendTest.cpp - --backend cuda ------===//
//
// Which device communicator --backend cuda / --devices / --device choose,
// and what they refuse (one line each).
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <gtest/gtest.h>

using namespace loom::run;

namespace {

std::string refusal(bool cuda, std::vector<int> devices, int device,
                    bool mpirun, int local = 0, int locals = 1) {
  CudaBackendChoice c;
  std::string err;
  EXPECT_FALSE(
      chooseCudaBackend(cuda, devices, device, mpirun, local, locals, c, &err));
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  return err;
}

} // namespace

TEST(CudaBackend, ParseDevices) {
  std::vector<int> d;
  std::string err;
  ASSERT_TRUE(parseDevices("0,1,3", d, &err)) << err;
  EXPECT_EQ(d, (std::vector<int>{0, 1, 3}));
  ASSERT_TRUE(parseDevices("2", d, &err)) << err;
  EXPECT_EQ(d, (std::vector<int>{2}));
  for (const char *bad : {"", "0,", ",1", "a", "-1", "0,,1", "1x"}) {
    EXPECT_FALSE(parseDevices(bad, d, &err)) << bad;
    EXPECT_NE(err.find("--devices takes CUDA device numbers"),
              std::string::npos)
        << err;
  }
  EXPECT_FALSE(parseDevices("0,1,0", d, &err));
  EXPECT_NE(err.find("names device 0 twice"), std::string::npos) << err;
}

TEST(CudaBackend, SingleDeviceWithoutMpirun) {
  CudaBackendChoice c;
  std::string err;
  ASSERT_TRUE(chooseCudaBackend(true, {}, -1, false, 0, 1, c, &err)) << err;
  EXPECT_EQ(c.kind, CudaBackendChoice::SingleDevice);
  EXPECT_EQ(c.device, 0);
  ASSERT_TRUE(chooseCudaBackend(true, {3}, -1, false, 0, 1, c, &err)) << err;
  EXPECT_EQ(c.device, 3);
  ASSERT_TRUE(chooseCudaBackend(true, {}, 2, false, 0, 1, c, &err)) << err;
  EXPECT_EQ(c.kind, CudaBackendChoice::SingleDevice);
  EXPECT_EQ(c.device, 2);
  // Not --backend cuda: nothing (the executor's own --device rules apply).
  ASSERT_TRUE(chooseCudaBackend(false, {}, 1, false, 0, 1, c, &err)) << err;
  EXPECT_EQ(c.kind, CudaBackendChoice::None);
}

TEST(CudaBackend, NcclUnderMpirun) {
  CudaBackendChoice c;
  std::string err;
  ASSERT_TRUE(chooseCudaBackend(true, {4, 5}, -1, true, 1, 2, c, &err)) << err;
  EXPECT_EQ(c.kind, CudaBackendChoice::Nccl);
  EXPECT_EQ(c.device, 5);
  ASSERT_TRUE(chooseCudaBackend(true, {}, -1, true, 3, 4, c, &err)) << err;
  EXPECT_EQ(c.device, 3);
}

TEST(CudaBackend, Refusals) {
  EXPECT_NE(refusal(false, {0, 1}, -1, false).find("add --backend cuda"),
            std::string::npos);
  EXPECT_NE(
      refusal(true, {0}, 1, false).find("--devices or --device, not both"),
      std::string::npos);
  EXPECT_NE(refusal(true, {0, 1}, -1, false)
                .find("one process per GPU is started by mpirun"),
            std::string::npos);
  // More local ranks than devices under mpirun.
  EXPECT_NE(refusal(true, {0}, -1, true, 1, 2)
                .find("2 ranks run on this host but --devices names 1"),
            std::string::npos);
}
