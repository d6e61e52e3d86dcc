//===- ExecutorTest.cpp - the executor API used directly -----------------===//
//
// Opens small bundles made here (the C entry points of the loom-run lit
// tests, compiled by the build: test/tools/Inputs/loom-run/add_allreduce.c,
// a manifest with its integrity hashes, per-rank weights) and runs them on 1
// and 2 thread ranks through include/loom/runtime/Executor.h: outputs equal
// the reference (y = sum over ranks r of x + w_r, w_r = arange(4) + 10 r) and
// loom-run's .npy output of the same bundle bit for bit; state is kept from
// one run to the next; a bad bundle, bad inputs and a failing rank come back
// as errors, and the process goes on.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Executor.h"
#include "loom/runtime/Fnv.h"
#include "loom/runtime/Npy.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <unistd.h>

using namespace loom::run;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string readAll(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fnv(const std::string &bytes) {
  return loom::fnvString(loom::fnv1a64(bytes.data(), bytes.size()));
}

Json tensor(const std::string &name, const std::string &dtype,
            std::vector<int64_t> shape) {
  return {{"name", name}, {"dtype", dtype}, {"shape", shape}};
}

/// Writes a bundle of `kernel` for `nranks` ranks on a 1-D mesh into a new
/// directory: entries "main" (x f32 [?, 4], weight w f32 [4] = arange(4) +
/// 10 r on rank r; outputs y f32 rank 2, r i64 rank 0) and "twice" (y = 2x),
/// with the integrity hashes loomc writes. `edit` changes the manifest
/// after the hashes (a tampered bundle).
std::string makeBundle(const std::string &name, const std::string &kernel,
                       int nranks,
                       const std::function<void(Json &)> &edit = {}) {
  fs::path dir = fs::path(::testing::TempDir()) /
                 ("loom-exec-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "weights");
  fs::copy_file(kernel, dir / "k.so");
  Json entries = Json::array();
  entries.push_back({{"name", "main"},
                     {"symbol", "loom_entry_main"},
                     {"inputs", {tensor("x", "f32", {-1, 4})}},
                     {"outputs",
                      {{{"name", "y"}, {"dtype", "f32"}, {"rank", 2}},
                       {{"name", "r"}, {"dtype", "i64"}, {"rank", 0}}}},
                     {"weights", {tensor("w", "f32", {4})}}});
  entries.push_back(
      {{"name", "twice"},
       {"symbol", "loom_entry_twice"},
       {"inputs", {tensor("x", "f32", {-1, 4})}},
       {"outputs", {{{"name", "y"}, {"dtype", "f32"}, {"rank", 2}}}},
       {"weights", Json::array()}});
  Json ranks = Json::array();
  std::ofstream w(dir / "weights" / "w.bin", std::ios::binary);
  for (int r = 0; r < nranks; ++r) {
    float v[4];
    for (int j = 0; j < 4; ++j)
      v[j] = float(j + 10 * r);
    w.write(reinterpret_cast<const char *>(v), sizeof(v));
    Json slice = {{"name", "w"},      {"file", "weights/w.bin"},
                  {"offset", 16 * r}, {"nbytes", 16},
                  {"shape", {4}},     {"strides", {1}}};
    ranks.push_back(
        {{"rank", r},
         {"coords", {r}},
         {"ir", "ir/rank0.mlir"},
         {"weights", {{"main", {slice}}, {"twice", Json::array()}}}});
  }
  w.close();
  Json m = {{"format", "loom-bundle"},
            {"version", 1},
            {"abi_version", 1},
            {"model", "exec-test"},
            {"mesh", {{"axes", {"tp"}}, {"shape", {nranks}}}},
            {"num_ranks", nranks},
            {"library", "k.so"},
            {"entries", entries},
            {"ranks", ranks}};
  m["integrity"] = {{"library", fnv(readAll(dir / "k.so"))},
                    {"entries", fnv(entries.dump())}};
  if (edit)
    edit(m);
  std::ofstream(dir / "manifest.json") << m.dump(1);
  return dir.string();
}

OpenOptions quietThreads() {
  OpenOptions o;
  o.backend = Backend::Threads; // also under mpirun
  o.quiet = true;
  return o;
}

/// x = arange(rows * 4) + start, f32 [rows, 4].
std::vector<float> arange(int rows, float start = 0) {
  std::vector<float> x(size_t(rows) * 4);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i) + start;
  return x;
}

/// The numpy reference: sum over ranks r of (x + arange(4) + 10 r).
std::vector<float> reference(const std::vector<float> &x, int nranks) {
  std::vector<float> y(x.size(), 0.0f);
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < x.size(); ++i)
      y[i] += x[i] + float(i % 4 + 10 * r);
  return y;
}

std::vector<float> values(const Array &a) {
  const float *p = static_cast<const float *>(a.data);
  return std::vector<float>(p, p + a.numElements());
}

class ExecutorRanks : public ::testing::TestWithParam<int> {};

// One and two thread ranks: rank 0's outputs equal the reference; the
// entry's weights are this rank's slice; a second run reuses the mapping.
TEST_P(ExecutorRanks, RunsAndMatchesTheReference) {
  int n = GetParam();
  std::string dir =
      makeBundle("ranks" + std::to_string(n), LOOM_EXEC_KERNEL, n);
  auto ex = Executor::open(dir, quietThreads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  EXPECT_EQ((*ex)->localRanks().size(), size_t(n));
  std::vector<float> x = arange(3);
  RunResult res;
  Status st = (*ex)->run({{"x", {DType::F32, {3, 4}, x.data()}}}, {}, res);
  ASSERT_TRUE(bool(st)) << st.error().message;
  ASSERT_EQ(res.ranks.size(), 1u);
  const RankOutputs &r0 = res.ranks[0];
  EXPECT_EQ(r0.rank, 0);
  ASSERT_EQ(r0.outputs.size(), 2u);
  EXPECT_EQ(r0.outputs[0].shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values(r0.outputs[0]), reference(x, n));
  EXPECT_EQ(r0.outputs[1].dtype, DType::I64);
  EXPECT_EQ(*static_cast<const int64_t *>(r0.outputs[1].data), 0);
  EXPECT_EQ(res.prepared.weightSlices, size_t(n));

  // Every rank's outputs, several iterations, another input size.
  RunOptions all;
  all.allRanks = true;
  all.iterations = 3;
  std::vector<float> x2 = arange(5, 1.5f);
  st = (*ex)->run({{"x", {DType::F32, {5, 4}, x2.data()}}}, all, res);
  ASSERT_TRUE(bool(st)) << st.error().message;
  ASSERT_EQ(res.ranks.size(), size_t(n));
  EXPECT_EQ(res.iterationMs.size(), 3u);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(res.ranks[size_t(r)].rank, r);
    EXPECT_EQ(values(res.ranks[size_t(r)].outputs[0]), reference(x2, n));
    EXPECT_EQ(
        *static_cast<const int64_t *>(res.ranks[size_t(r)].outputs[1].data), r);
  }
}

// Inputs given per rank: rank r's x is its own (y = sum of every rank's).
TEST_P(ExecutorRanks, PerRankInputsAndZeroCopy) {
  int n = GetParam();
  std::string dir =
      makeBundle("perrank" + std::to_string(n), LOOM_EXEC_KERNEL, n);
  auto ex = Executor::open(dir, quietThreads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  std::vector<std::vector<float>> xs;
  std::vector<Input> in;
  for (int r = 0; r < n; ++r)
    xs.push_back(arange(2, float(100 * r)));
  for (int r = 0; r < n; ++r)
    in.push_back({"x", {DType::F32, {2, 4}, xs[size_t(r)].data()}, r});
  RunOptions o;
  o.copyInputs = false;
  RunResult res;
  Status st = (*ex)->run(in, o, res);
  ASSERT_TRUE(bool(st)) << st.error().message;
  std::vector<float> want(8, 0.0f);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < 8; ++i)
      want[i] += xs[size_t(r)][i] + float(i % 4 + 10 * r);
  EXPECT_EQ(values(res.ranks[0].outputs[0]), want);
}

// The executor and loom-run give the same bytes for the same bundle.
TEST_P(ExecutorRanks, SameAsLoomRun) {
  int n = GetParam();
  std::string dir = makeBundle("cli" + std::to_string(n), LOOM_EXEC_KERNEL, n);
  std::vector<float> x = arange(3, 0.25f);
  std::string err;
  fs::path xPath = fs::path(dir) / "x.npy", out = fs::path(dir) / "out";
  ASSERT_TRUE(writeNpy(xPath.string(), "<f4", {3, 4}, x.data(), 48, &err))
      << err;
  std::string cmd = std::string(LOOM_RUN_BIN) + " " + dir + " --backend " +
                    "threads --input x=" + xPath.string() + " --output " +
                    out.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  NpyArray cli;
  ASSERT_TRUE(readNpy((out / "y.npy").string(), cli, &err)) << err;

  auto ex = Executor::open(dir, quietThreads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  RunResult res;
  Status st = (*ex)->run({{"x", {DType::F32, {3, 4}, x.data()}}}, {}, res);
  ASSERT_TRUE(bool(st)) << st.error().message;
  const Array &y = res.ranks[0].outputs[0];
  EXPECT_EQ(cli.shape, y.shape);
  ASSERT_EQ(cli.numBytes(), y.numBytes());
  EXPECT_EQ(std::memcmp(cli.data.get(), y.data, size_t(y.numBytes())), 0);
}

INSTANTIATE_TEST_SUITE_P(Threads, ExecutorRanks, ::testing::Values(1, 2));

// A strided output (a transposed view) comes back contiguous.
TEST(Executor, StridedOutputIsMadeContiguous) {
  std::string dir = makeBundle("strided", LOOM_EXEC_KERNEL_TRANSPOSED, 2);
  auto ex = Executor::open(dir, quietThreads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  std::vector<float> x = arange(3);
  RunResult res;
  Status st = (*ex)->run({{"x", {DType::F32, {3, 4}, x.data()}}}, {}, res);
  ASSERT_TRUE(bool(st)) << st.error().message;
  EXPECT_EQ(values(res.ranks[0].outputs[0]), reference(x, 2));
}

/// A one-rank bundle of `entries` around `kernel` (no weights).
std::string makeSimpleBundle(const std::string &name, const std::string &kernel,
                             const Json &entries) {
  return makeBundle(name, kernel, 1, [&](Json &m) {
    m["entries"] = entries;
    m["ranks"][0]["weights"] = Json::object();
    for (const Json &e : entries)
      m["ranks"][0]["weights"][e["name"].get<std::string>()] = Json::array();
    m["integrity"]["entries"] = fnv(entries.dump());
  });
}

// State inputs are the executor's: zero-filled at the first run for `ctx`
// positions, written in place and kept by the next run, returned as views,
// freed by resetState().
TEST(Executor, StateIsKeptBetweenRuns) {
  Json cache = tensor("cache", "f32", {-1, 4});
  cache["state"] = "kv_cache";
  cache["ctx_dim"] = 0;
  Json entries = Json::array();
  entries.push_back(
      {{"name", "acc"},
       {"symbol", "loom_entry_acc"},
       {"inputs",
        {tensor("x", "f32", {4}), tensor("positions", "i64", {1}), cache}},
       {"outputs", {{{"name", "y"}, {"dtype", "f32"}, {"rank", 1}}}},
       {"weights", Json::array()}});
  auto ex =
      Executor::open(makeSimpleBundle("state", LOOM_EXEC_KERNEL_STATE, entries),
                     quietThreads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40};
  int64_t p0 = 0, p1 = 1, p9 = 9;
  RunOptions o;
  o.ctx = 8;
  RunResult res;
  auto step = [&](const std::vector<float> &x, int64_t *p) {
    return (*ex)->run({{"x", {DType::F32, {4}, x.data()}},
                       {"positions", {DType::I64, {1}, p}}},
                      o, res);
  };
  Status st = step(a, &p0);
  ASSERT_TRUE(bool(st)) << st.error().message;
  EXPECT_EQ(res.ctx, 8);
  EXPECT_EQ(values(res.ranks[0].outputs[0]), a);
  st = step(b, &p1);
  ASSERT_TRUE(bool(st)) << st.error().message;
  EXPECT_EQ(values(res.ranks[0].outputs[0]),
            (std::vector<float>{11, 22, 33, 44}));
  ASSERT_EQ(res.ranks[0].state.size(), 1u);
  EXPECT_EQ(res.ranks[0].state[0].shape, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(static_cast<const float *>(res.ranks[0].state[0].data)[4], 10);
  // Positions beyond the context are refused before the run.
  st = step(b, &p9);
  ASSERT_FALSE(bool(st));
  EXPECT_NE(st.error().message.find("do not fit in the KV cache of 8"),
            std::string::npos)
      << st.error().message;
  (*ex)->resetState();
  st = step(b, &p1);
  ASSERT_TRUE(bool(st)) << st.error().message;
  EXPECT_EQ(values(res.ranks[0].outputs[0]), b);
}

// Refusals are errors, named, and the process goes on.
TEST(Executor, RefusesBadBundlesWithAnError) {
  auto noManifest = Executor::open("/nonexistent-bundle", quietThreads());
  ASSERT_FALSE(bool(noManifest));
  EXPECT_NE(noManifest.error().message.find("manifest.json"),
            std::string::npos);

  std::string tampered =
      makeBundle("tampered", LOOM_EXEC_KERNEL, 1,
                 [](Json &m) { m["entries"][1]["name"] = "thrice"; });
  auto t = Executor::open(tampered, quietThreads());
  ASSERT_FALSE(bool(t));
  EXPECT_NE(t.error().message.find("integrity"), std::string::npos)
      << t.error().message;

  std::string abi = makeBundle("abi", LOOM_EXEC_KERNEL, 1,
                               [](Json &m) { m["abi_version"] = 99; });
  auto a = Executor::open(abi, quietThreads());
  ASSERT_FALSE(bool(a));
  EXPECT_NE(a.error().message.find("99"), std::string::npos)
      << a.error().message;

  std::string truncated = makeBundle("truncated", LOOM_EXEC_KERNEL, 1);
  fs::resize_file(fs::path(truncated) / "k.so", 100);
  auto tr = Executor::open(truncated, quietThreads());
  ASSERT_FALSE(bool(tr));

  OpenOptions wrongRanks = quietThreads();
  wrongRanks.ranks = 3;
  auto w =
      Executor::open(makeBundle("ranks3", LOOM_EXEC_KERNEL, 2), wrongRanks);
  ASSERT_FALSE(bool(w));
  EXPECT_NE(w.error().message.find("--ranks 3"), std::string::npos);
}

TEST(Executor, RefusesBadInputsWithAnError) {
  auto ex =
      Executor::open(makeBundle("inputs", LOOM_EXEC_KERNEL, 2), quietThreads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  std::vector<float> x = arange(3);
  RunResult res;
  auto message = [&](const std::vector<Input> &in, RunOptions o = {}) {
    Status st = (*ex)->run(in, o, res);
    EXPECT_FALSE(bool(st));
    EXPECT_FALSE(res.jobFailed);
    return st ? std::string() : st.error().message;
  };
  EXPECT_NE(message({}).find("missing input 'x'"), std::string::npos);
  EXPECT_NE(message({{"x", {DType::F32, {3, 5}, x.data()}}})
                .find("shape [3, 5] does not match [?, 4]"),
            std::string::npos);
  EXPECT_NE(
      message({{"x", {DType::I32, {3, 4}, x.data()}}}).find("dtype is i32"),
      std::string::npos);
  EXPECT_NE(
      message({{"q", {DType::F32, {3, 4}, x.data()}}}).find("has no input 'q'"),
      std::string::npos);
  EXPECT_NE(message({{"x", {DType::F32, {3, 4}, x.data()}, 7}}).find("rank 7"),
            std::string::npos);
  RunOptions bad;
  bad.entry = "nope";
  EXPECT_NE(message({}, bad).find("entries: main, twice"), std::string::npos);
}

// A rank that aborts fails the job: an error with the rank's message, and
// the executor can run again.
TEST(Executor, FailingRankIsAnError) {
  auto ex = Executor::open(makeBundle("abort", LOOM_EXEC_KERNEL_ABORT, 2),
                           quietThreads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  std::vector<float> x = arange(3);
  RunResult res;
  Status st = (*ex)->run({{"x", {DType::F32, {3, 4}, x.data()}}}, {}, res);
  ASSERT_FALSE(bool(st));
  EXPECT_TRUE(res.jobFailed);
  EXPECT_NE(st.error().message.find("rank gives up on purpose"),
            std::string::npos)
      << st.error().message;
  RunOptions twice;
  twice.entry = "twice";
  st = (*ex)->run({{"x", {DType::F32, {3, 4}, x.data()}}}, twice, res);
  ASSERT_TRUE(bool(st)) << st.error().message;
  std::vector<float> want = x;
  for (float &v : want)
    v *= 2;
  EXPECT_EQ(values(res.ranks[0].outputs[0]), want);
}

} // namespace
