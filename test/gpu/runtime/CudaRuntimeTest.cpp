//===- test/gpu/runtime/CudaRuntimeTest.cpp - CUDA runtime without a GPU --===//
//
// What the CUDA runtime must do on a machine without a GPU (CI): every call
// fails with a clear message, nothing crashes; the cubin architecture check
// and the NCCL TCP rendezvous work without a device. On a machine with a
// GPU the no-device cases skip themselves (scripts/gpu-check.sh covers the
// device paths).
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/abi.h"
#include "loom/runtime/cuda.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string err() { return loom_cuda_last_error(); }

bool haveGpu() {
  int32_t n = 0;
  return loom_cuda_device_count(&n) == 0 && n > 0;
}

/// A TCP port that was free a moment ago.
int freePort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr *>(&a), &len);
  int port = ntohs(a.sin_port);
  close(s);
  return port;
}

/// A 64-byte ELF64 header with e_machine and e_flags set.
std::vector<unsigned char> elfHeader(unsigned machine, unsigned abi,
                                     uint32_t flags) {
  std::vector<unsigned char> h(64, 0);
  std::memcpy(h.data(),
              "\x7f"
              "ELF",
              4);
  h[4] = 2; // 64-bit
  h[5] = 1; // little endian
  h[6] = 1;
  h[7] = 0x33; // CUDA OS ABI
  h[8] = static_cast<unsigned char>(abi);
  h[18] = machine & 0xff;
  h[19] = machine >> 8;
  for (int i = 0; i < 4; ++i)
    h[48 + i] = (flags >> (8 * i)) & 0xff;
  return h;
}

} // namespace

TEST(CudaRuntime, AbiVersion) {
  EXPECT_EQ(loom_cuda_abi_version(), LOOM_CUDA_ABI_VERSION);
}

// No GPU: the device count, opening a device and the mgpu* ABI fail with
// "no CUDA device: ..." naming why.
TEST(CudaRuntime, NoDeviceIsAClearError) {
  if (haveGpu())
    GTEST_SKIP() << "a GPU is present";
  int32_t n = -1;
  EXPECT_EQ(loom_cuda_device_count(&n), -1);
  EXPECT_EQ(n, 0);
  EXPECT_EQ(err().rfind("no CUDA device: ", 0), 0u) << err();
  loom_cuda_device *dev = nullptr;
  EXPECT_EQ(loom_cuda_open(0, &dev), -1);
  EXPECT_EQ(dev, nullptr);
  EXPECT_EQ(err().rfind("no CUDA device: ", 0), 0u) << err();
}

TEST(CudaRuntime, MissingDriverLibrary) {
  if (haveGpu())
    GTEST_SKIP() << "a GPU is present (the driver is loaded for the process)";
  setenv("LOOM_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  int32_t n = 0;
  EXPECT_EQ(loom_cuda_device_count(&n), -1);
  unsetenv("LOOM_CUDA_DRIVER");
  EXPECT_NE(err().find("no CUDA device: cannot load the CUDA driver "
                       "'/nonexistent/libcuda.so.1'"),
            std::string::npos)
      << err();
}

// The toolkit's stub libcuda.so loads but every call reports
// CUDA_ERROR_STUB_LIBRARY: the closest thing to "a driver without a GPU".
TEST(CudaRuntime, StubDriver) {
#ifdef LOOM_TEST_CUDA_STUB
  if (haveGpu())
    GTEST_SKIP() << "a GPU is present";
  setenv("LOOM_CUDA_DRIVER", LOOM_TEST_CUDA_STUB, 1);
  int32_t n = 0;
  EXPECT_EQ(loom_cuda_device_count(&n), -1);
  unsetenv("LOOM_CUDA_DRIVER");
  EXPECT_EQ(err().rfind("no CUDA device: cuInit failed: ", 0), 0u) << err();
#else
  GTEST_SKIP() << "no stub libcuda.so in the toolkit";
#endif
}

// Every entry point checks its handles: a null device is a message.
TEST(CudaRuntime, NullHandlesAreErrors) {
  loom_cuda_ptr p = 0;
  EXPECT_EQ(loom_cuda_malloc(nullptr, 16, &p), -1);
  EXPECT_NE(err().find("null device"), std::string::npos) << err();
  EXPECT_EQ(loom_cuda_copy_to_device(nullptr, 1, "x", 1, nullptr), -1);
  EXPECT_EQ(loom_cuda_stream_sync(nullptr, nullptr), -1);
  loom_cuda_module *mod = nullptr;
  EXPECT_EQ(loom_cuda_module_load(nullptr, "x", 1, &mod), -1);
  EXPECT_EQ(loom_cuda_module_load_file(nullptr, "/nonexistent.cubin", &mod),
            -1);
  EXPECT_NE(err().find("cannot read '/nonexistent.cubin'"), std::string::npos)
      << err();
  uint32_t g[3] = {1, 1, 1};
  EXPECT_EQ(loom_cuda_launch(nullptr, "k", g, g, 0, nullptr, nullptr), -1);
  EXPECT_EQ(loom_cuda_qmatmul(nullptr, "base", 0, 0, 0, 0, 4, nullptr), -1);
  EXPECT_NE(err().find("bad base name or sizes"), std::string::npos) << err();
  EXPECT_EQ(loom_cuda_graph_begin(nullptr, nullptr), -1);
  EXPECT_NE(err().find("not the default stream"), std::string::npos) << err();
  EXPECT_EQ(loom_cuda_graph_launch(nullptr, nullptr), -1);
  EXPECT_EQ(loom_cuda_gemm(nullptr, 42, 0, 0, 1, 1, 1, 1, 1, 1, nullptr), -1);
  EXPECT_NE(err().find("dtype 42 is not f16, bf16 or f32"), std::string::npos)
      << err();
  EXPECT_EQ(
      loom_cuda_gemm(nullptr, LOOM_RT_F16, 0, 0, 1, 1, 1, 1, 1, 1, nullptr),
      -1);
  EXPECT_NE(err().find("null device"), std::string::npos) << err();
  loom_cuda_close(nullptr);
  loom_cuda_module_unload(nullptr);
  loom_cuda_graph_destroy(nullptr);
  loom_cuda_nccl_destroy(nullptr);
}

TEST(CudaRuntime, CubinArchFromElfHeader) {
  auto v7 = elfHeader(190, 7, 0x00500050); // CUDA <= 12: sm in bits 0-7
  EXPECT_EQ(loom_cuda_cubin_sm(v7.data(), 64), 80);
  auto v8 = elfHeader(190, 8, 0x06005a04); // CUDA 13: sm in bits 8-15
  EXPECT_EQ(loom_cuda_cubin_sm(v8.data(), 64), 90);
  auto x86 = elfHeader(62, 8, 0x5a00);
  EXPECT_EQ(loom_cuda_cubin_sm(x86.data(), 64), -1);
  const char ptx[] = "//\n.version 7.8\n.target sm_90\n";
  EXPECT_EQ(loom_cuda_cubin_sm(ptx, sizeof ptx), -1);
  EXPECT_EQ(loom_cuda_cubin_sm(v8.data(), 10), -1);
  EXPECT_EQ(loom_cuda_cubin_sm(nullptr, 64), -1);
}

// A cubin runs on its own major architecture at the same or a newer minor.
TEST(CudaRuntime, WrongArchitectureIsAClearError) {
  EXPECT_EQ(loom_cuda_check_arch(80, 80), 0);
  EXPECT_EQ(loom_cuda_check_arch(80, 86), 0);
  EXPECT_EQ(loom_cuda_check_arch(86, 80), -1);
  EXPECT_EQ(loom_cuda_check_arch(80, 90), -1);
  EXPECT_NE(err().find("cubin is for sm_80 but the device is sm_90"),
            std::string::npos)
      << err();
  EXPECT_NE(err().find("--chip=sm_90"), std::string::npos) << err();
  EXPECT_EQ(loom_cuda_check_arch(90, 80), -1);
}

// The cubins that the gpu.cubin.* tests compiled (when they ran first).
TEST(CudaRuntime, CompiledCubinsNameTheirArchitecture) {
  const char *dir = std::getenv("LOOM_GPU_CUBIN_DIR");
  if (!dir)
    GTEST_SKIP() << "LOOM_GPU_CUBIN_DIR not set";
  DIR *d = opendir(dir);
  if (!d)
    GTEST_SKIP() << "no cubins in " << dir << " (gpu.cubin.* did not run)";
  int checked = 0;
  while (dirent *e = readdir(d)) {
    std::string name = e->d_name;
    size_t pos = name.find(".sm_");
    if (pos == std::string::npos || name.size() < 6 ||
        name.substr(name.size() - 6) != ".cubin")
      continue;
    int expect = std::atoi(name.c_str() + pos + 4);
    std::ifstream f(std::string(dir) + "/" + name, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                            std::istreambuf_iterator<char>());
    EXPECT_EQ(loom_cuda_cubin_sm(bytes.data(), int64_t(bytes.size())), expect)
        << name;
    ++checked;
  }
  closedir(d);
  if (!checked)
    GTEST_SKIP() << "no *.sm_NN.cubin in " << dir;
}

TEST(CudaRuntime, NcclEnvBootstrapErrors) {
  loom_cuda_nccl *c = nullptr;
  unsetenv("RANK");
  EXPECT_EQ(loom_cuda_nccl_init_env(nullptr, 1, &c), -1);
  EXPECT_NE(err().find("$RANK is not set"), std::string::npos) << err();
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  EXPECT_EQ(loom_cuda_nccl_init_env(nullptr, 1, &c), -1);
  EXPECT_NE(err().find("RANK=3 is not below WORLD_SIZE=2"), std::string::npos)
      << err();
  setenv("RANK", "x", 1);
  EXPECT_EQ(loom_cuda_nccl_init_env(nullptr, 1, &c), -1);
  EXPECT_NE(err().find("$RANK='x' is not a non-negative integer"),
            std::string::npos)
      << err();
  setenv("RANK", "0", 1);
  EXPECT_EQ(loom_cuda_nccl_init_env(nullptr, 1, &c), -1);
  EXPECT_NE(err().find("no CUDA device"), std::string::npos) << err();
  for (const char *v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    unsetenv(v);
  EXPECT_EQ(c, nullptr);
  uint8_t id[LOOM_CUDA_NCCL_ID_BYTES] = {0};
  EXPECT_EQ(loom_cuda_nccl_init_id(nullptr, 0, 1, id, &c), -1);
  EXPECT_NE(err().find("no CUDA device"), std::string::npos) << err();
  EXPECT_EQ(loom_cuda_nccl_all_reduce(nullptr, LOOM_RT_F32, LOOM_RT_SUM, 0, 0,
                                      1, nullptr),
            -1);
  EXPECT_NE(err().find("null communicator"), std::string::npos) << err();
}

// Rank 0 hands its id to three other ranks over TCP.
TEST(CudaRuntime, NcclTcpRendezvous) {
  const int world = 4;
  int port = freePort();
  std::vector<std::vector<uint8_t>> ids(
      world, std::vector<uint8_t>(LOOM_CUDA_NCCL_ID_BYTES, 0));
  for (int i = 0; i < LOOM_CUDA_NCCL_ID_BYTES; ++i)
    ids[0][i] = uint8_t(i * 7 + 1);
  std::vector<int> rc(world, -2);
  std::vector<std::string> msg(world);
  std::vector<std::thread> ts;
  for (int r = world - 1; r >= 0; --r) // clients first: they must retry
    ts.emplace_back([&, r] {
      rc[r] = loom_cuda_tcp_exchange_id(r, world, "127.0.0.1", port, 20,
                                        ids[r].data());
      msg[r] = loom_cuda_last_error();
    });
  for (auto &t : ts)
    t.join();
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(rc[r], 0) << "rank " << r << ": " << msg[r];
    EXPECT_EQ(ids[r], ids[0]) << "rank " << r;
  }
}

TEST(CudaRuntime, NcclTcpTimeouts) {
  int port = freePort();
  uint8_t id[LOOM_CUDA_NCCL_ID_BYTES] = {0};
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(loom_cuda_tcp_exchange_id(1, 2, "127.0.0.1", port, 0.5, id), -1);
  EXPECT_NE(
      err().find("could not reach rank 0 at 127.0.0.1:" + std::to_string(port)),
      std::string::npos)
      << err();
  EXPECT_EQ(loom_cuda_tcp_exchange_id(0, 2, "127.0.0.1", port, 0.5, id), -1);
  EXPECT_NE(err().find("rank 0 timed out"), std::string::npos) << err();
  EXPECT_NE(err().find("0 of 1 ranks connected"), std::string::npos) << err();
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_LT(s, 5.0);
  EXPECT_EQ(loom_cuda_tcp_exchange_id(2, 2, "127.0.0.1", port, 1, id), -1);
  EXPECT_NE(err().find("bad arguments"), std::string::npos) << err();
  EXPECT_EQ(
      loom_cuda_tcp_exchange_id(1, 2, "no-such-host.invalid", port, 1, id), -1);
  EXPECT_NE(err().find("cannot resolve MASTER_ADDR"), std::string::npos)
      << err();
}

// Something else listening at MASTER_PORT: an error naming it, not a hang.
TEST(CudaRuntime, NcclTcpWrongPeer) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr *>(&a), &len);
  listen(s, 1);
  std::thread server([s] {
    int c = accept(s, nullptr, nullptr);
    char buf[12];
    (void)!read(c, buf, sizeof buf);
    std::string junk(8 + LOOM_CUDA_NCCL_ID_BYTES, 'X');
    (void)!write(c, junk.data(), junk.size());
    close(c);
  });
  uint8_t id[LOOM_CUDA_NCCL_ID_BYTES];
  EXPECT_EQ(
      loom_cuda_tcp_exchange_id(1, 2, "127.0.0.1", ntohs(a.sin_port), 5, id),
      -1);
  EXPECT_NE(err().find("is not a Loom rank 0"), std::string::npos) << err();
  server.join();
  close(s);
}

// The mgpu* ABI (MLIR's gpu-to-llvm host code) is fatal without a device,
// with the message, not a crash.
TEST(CudaRuntimeDeathTest, MgpuWithoutDeviceExitsWithMessage) {
  if (haveGpu())
    GTEST_SKIP() << "a GPU is present";
  EXPECT_EXIT(mgpuStreamCreate(), testing::ExitedWithCode(1),
              "loom-cuda: mgpuStreamCreate failed: no CUDA device: ");
  EXPECT_EXIT(mgpuModuleLoad(nullptr, 0), testing::ExitedWithCode(1),
              "loom-cuda: mgpuModuleLoad failed: no CUDA device: ");
}
