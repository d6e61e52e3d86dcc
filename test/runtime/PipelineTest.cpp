//===- PipelineTest.cpp - pipelined bundles on thread ranks ---------------===//
//
// Bundles made here around hand-written stage entries (contract B of
// docs/BUNDLE.md "pipeline": test/runtime/Inputs/pipeline_mlp.c, a chain of
// MLP layers split into stages with a pass-through boundary and an entry
// input used only by the last stage) and run through the Executor on
// thread ranks: outputs equal the unsplit function run as a 1-rank bundle
// (pp = 2 and 4, dp = 2 x pp = 2, with and without microbatches); bad
// pipeline sections are refused by name; the trace has the contract-D
// events and its measured bubble matches (p-1)/(m+p-1); a stage that fails
// mid-schedule stops every rank with its message.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Executor.h"
#include "loom/runtime/Fnv.h"
#include "loom/runtime/Npy.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

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

Json tensor(const std::string &name, std::vector<int64_t> shape) {
  return {{"name", name}, {"dtype", "f32"}, {"shape", shape}};
}
Json output(const std::string &name, std::vector<int64_t> shape) {
  return {{"name", name},
          {"dtype", "f32"},
          {"rank", shape.size()},
          {"shape", shape}};
}

/// The model: B x H activations through `layers` layers.
struct Model {
  int64_t B = 4, H = 16, layers = 8;
};

/// Deterministic weights f32 [layers, H, H], scaled to keep h bounded.
void writeWeights(const fs::path &file, const Model &mo) {
  std::ofstream w(file, std::ios::binary);
  uint64_t s = 12345;
  for (int64_t i = 0; i < mo.layers * mo.H * mo.H; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    float v = (float(s >> 40) / float(1 << 24) - 0.5f) * 2.0f /
              std::sqrt(float(mo.H));
    w.write(reinterpret_cast<const char *>(&v), sizeof(v));
  }
}

fs::path freshDir(const std::string &name) {
  fs::path dir = fs::path(::testing::TempDir()) /
                 ("loom-pipe-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "weights");
  fs::copy_file(LOOM_PIPE_KERNEL, dir / "k.so");
  return dir;
}

Json slice(int64_t layer0, int64_t nl, const Model &mo) {
  int64_t bytes = nl * mo.H * mo.H * 4;
  return {{"name", "W"},
          {"file", "weights/W.bin"},
          {"offset", layer0 * mo.H * mo.H * 4},
          {"nbytes", bytes},
          {"shape", {nl, mo.H, mo.H}},
          {"strides", {mo.H * mo.H, mo.H, 1}}};
}

void finish(const fs::path &dir, Json &m,
            const std::function<void(Json &)> &edit, bool hashPipeline = true) {
  m["integrity"] = {{"library", fnv(readAll(dir / "k.so"))},
                    {"entries", fnv(m["entries"].dump())}};
  if (hashPipeline && m.contains("pipeline"))
    m["integrity"]["pipeline"] = fnv(m["pipeline"].dump());
  if (edit)
    edit(m);
  std::ofstream(dir / "manifest.json") << m.dump(1);
}

/// The unsplit function "f" as a 1-rank bundle (the reference).
std::string makeFull(const std::string &name, const Model &mo) {
  fs::path dir = freshDir(name);
  writeWeights(dir / "weights" / "W.bin", mo);
  Json entries = Json::array();
  entries.push_back(
      {{"name", "f"},
       {"symbol", "loom_entry_full"},
       {"inputs", {tensor("x", {mo.B, mo.H}), tensor("bias", {mo.B, mo.H})}},
       {"outputs", {output("y", {mo.B, mo.H})}},
       {"weights", {tensor("W", {mo.layers, mo.H, mo.H})}}});
  Json m = {{"format", "loom-bundle"},
            {"version", 1},
            {"abi_version", 1},
            {"model", "pipe-test"},
            {"mesh", {{"axes", {"world"}}, {"shape", {1}}}},
            {"num_ranks", 1},
            {"library", "k.so"},
            {"entries", entries},
            {"ranks",
             {{{"rank", 0},
               {"coords", {0}},
               {"weights", {{"f", {slice(0, mo.layers, mo)}}}}}}}};
  finish(dir, m, {});
  return dir.string();
}

/// "f" split into `p` stages over the mesh axis "pp" of `axes`/`shape`
/// (layers evenly; each rank lists only its stage's weights).
std::string makePipelined(const std::string &name, const Model &mo,
                          std::vector<std::string> axes,
                          std::vector<int64_t> shape,
                          const std::function<void(Json &)> &edit = {},
                          bool hashPipeline = true) {
  fs::path dir = freshDir(name);
  writeWeights(dir / "weights" / "W.bin", mo);
  size_t ai = size_t(std::find(axes.begin(), axes.end(), "pp") - axes.begin());
  int64_t p = shape[ai], ls = mo.layers / p;
  Json entries = Json::array(), names = Json::array();
  for (int64_t k = 0; k < p; ++k) {
    std::string n = "f__stage" + std::to_string(k);
    names.push_back(n);
    Json in = Json::array(), out = Json::array();
    std::string sym;
    if (k == 0) {
      Json x = tensor("x", {mo.B, mo.H});
      x["entry_arg"] = 0;
      in.push_back(x);
      sym = "loom_entry_first";
    } else {
      Json h = tensor("h", {mo.B, mo.H}), s = tensor("skip", {mo.B, mo.H});
      h["boundary"] = 0;
      s["boundary"] = 1;
      in.push_back(h);
      in.push_back(s);
      sym = k + 1 < p ? "loom_entry_mid" : "loom_entry_last";
    }
    if (k + 1 < p) {
      out.push_back(output("h", {mo.B, mo.H}));
      out.push_back(output("skip", {mo.B, mo.H}));
    } else {
      Json b = tensor("bias", {mo.B, mo.H});
      b["entry_arg"] = 1;
      in.push_back(b);
      out.push_back(output("y", {mo.B, mo.H}));
    }
    entries.push_back({{"name", n},
                       {"symbol", sym},
                       {"inputs", in},
                       {"outputs", out},
                       {"weights", {tensor("W", {ls, mo.H, mo.H})}}});
  }
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  Json ranks = Json::array();
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int64_t> c(shape.size());
    for (int64_t a = int64_t(shape.size()) - 1, rest = r; a >= 0; --a) {
      c[size_t(a)] = rest % shape[size_t(a)];
      rest /= shape[size_t(a)];
    }
    int64_t k = c[ai];
    ranks.push_back(
        {{"rank", r},
         {"coords", c},
         {"weights",
          {{"f__stage" + std::to_string(k), {slice(k * ls, ls, mo)}}}}});
  }
  Json m = {{"format", "loom-bundle"},
            {"version", 1},
            {"abi_version", 1},
            {"model", "pipe-test"},
            {"mesh", {{"axes", axes}, {"shape", shape}}},
            {"num_ranks", n},
            {"library", "k.so"},
            {"entries", entries},
            {"ranks", ranks},
            {"pipeline",
             {{"axis", "pp"},
              {"axis_index", ai},
              {"stages", p},
              {"entries", {{"f", names}}}}}};
  finish(dir, m, edit, hashPipeline);
  return dir.string();
}

OpenOptions threads(int perRank = 1) {
  OpenOptions o;
  o.backend = Backend::Threads;
  o.quiet = true;
  o.threadsPerRank = perRank;
  o.timeoutSeconds = 20;
  return o;
}

std::vector<float> input(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = scale * float(int64_t(i * 7919 % 101) - 50) / 50.0f;
  return v;
}

std::vector<float> values(const Array &a) {
  const float *p = static_cast<const float *>(a.data);
  return std::vector<float>(p, p + a.numElements());
}

/// Runs "f" of `dir` on x [rows, H] and returns y (rank: the rank whose
/// outputs come back first).
std::vector<float> runF(const std::string &dir, const Model &mo, int64_t rows,
                        int mb, int64_t *rank = nullptr,
                        const OpenOptions &oo = threads()) {
  auto ex = Executor::open(dir, oo);
  EXPECT_TRUE(bool(ex)) << ex.error().message;
  if (!ex)
    return {};
  std::vector<float> x = input(rows * mo.H, 1.0f),
                     bias = input(rows * mo.H, 0.1f);
  RunOptions o;
  o.entry = "f";
  o.microbatches = mb;
  RunResult res;
  Status st = (*ex)->run({{"x", {DType::F32, {rows, mo.H}, x.data()}},
                          {"bias", {DType::F32, {rows, mo.H}, bias.data()}}},
                         o, res);
  EXPECT_TRUE(bool(st)) << st.error().message;
  if (!st || res.ranks.empty())
    return {};
  if (rank)
    *rank = res.ranks[0].rank;
  EXPECT_EQ(res.ranks[0].outputs[0].shape, (std::vector<int64_t>{rows, mo.H}));
  return values(res.ranks[0].outputs[0]);
}

void expectNear(const std::vector<float> &a, const std::vector<float> &b,
                float tol) {
  ASSERT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst,
                     std::fabs(a[i] - b[i]) / std::max(1.0f, std::fabs(b[i])));
  EXPECT_LE(worst, tol);
}

struct MeshCase {
  const char *name;
  std::vector<std::string> axes;
  std::vector<int64_t> shape;
  int64_t lastRank;                ///< first rank of the last stage
  const char *groupMask = nullptr; ///< a collective over these axes per call
};

class PipelineMeshes : public ::testing::TestWithParam<MeshCase> {};

// pp = 2, pp = 4, dp = 2 x pp = 2, pp = 2 x tp = 2, dp x pp x tp = 2 x 2 x 2
// (the last three with a collective over the other axes inside every stage
// call, while the stages exchange boundaries): y equals the unsplit
// function's on one rank, bit for bit without microbatches and within
// 1e-6 with 4 (row blocks of another GEMM height); outputs come from the
// first rank of the last stage.
TEST_P(PipelineMeshes, EqualsOneRank) {
  const MeshCase &c = GetParam();
  if (c.groupMask)
    ::setenv("LOOM_TEST_GROUP_MASK", c.groupMask, 1);
  Model mo;
  std::string full = makeFull(std::string("full-") + c.name, mo);
  std::string pipe = makePipelined(c.name, mo, c.axes, c.shape);
  std::vector<float> ref = runF(full, mo, mo.B, 1);
  int64_t rank = -1;
  std::vector<float> y = runF(pipe, mo, mo.B, 1, &rank);
  EXPECT_EQ(rank, c.lastRank);
  EXPECT_EQ(y, ref);

  // Microbatches: 4 x the compiled batch, against the reference on it.
  Model big = mo;
  big.B = 4 * mo.B;
  std::string full4 = makeFull(std::string("full4-") + c.name, big);
  std::vector<float> ref4 = runF(full4, big, big.B, 1);
  std::vector<float> y4 = runF(pipe, mo, big.B, 4);
  expectNear(y4, ref4, 1e-6f);
  ::unsetenv("LOOM_TEST_GROUP_MASK");
}

INSTANTIATE_TEST_SUITE_P(
    Threads, PipelineMeshes,
    ::testing::Values(MeshCase{"pp2", {"pp"}, {2}, 1},
                      MeshCase{"pp4", {"pp"}, {4}, 3},
                      MeshCase{"dp2pp2", {"dp", "pp"}, {2, 2}, 1, "1"},
                      MeshCase{"pp2tp2", {"pp", "tp"}, {2, 2}, 2, "2"},
                      MeshCase{
                          "dp2pp2tp2", {"dp", "pp", "tp"}, {2, 2, 2}, 2, "5"}),
    [](const auto &info) { return std::string(info.param.name); });

// A stage entry run alone by name (every rank runs that stage, its boundary
// inputs given): the ranks of other stages take their peer's slices (the
// manifest lists a stage's weights on its own ranks only).
TEST(Pipeline, StageAloneRunsOnEveryRank) {
  Model mo;
  std::string dir = makePipelined("alone", mo, {"pp"}, {2});
  auto ex = Executor::open(dir, threads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  EXPECT_EQ((*ex)->manifest().ranks[1].weights.at("f__stage0")[0].offset,
            (*ex)->manifest().ranks[0].weights.at("f__stage0")[0].offset);
  std::vector<float> x = input(mo.B * mo.H, 1);
  RunOptions o;
  o.entry = "f__stage0";
  o.allRanks = true;
  RunResult res;
  Status st = (*ex)->run({{"x", {DType::F32, {mo.B, mo.H}, x.data()}}}, o, res);
  ASSERT_TRUE(bool(st)) << st.error().message;
  ASSERT_EQ(res.ranks.size(), 2u);
  EXPECT_EQ(values(res.ranks[0].outputs[0]), values(res.ranks[1].outputs[0]));
  EXPECT_EQ(values(res.ranks[0].outputs[1]), x); // skip = x

  // Stage 1 alone, its boundary inputs given as ordinary inputs: the
  // pipelined entry's output.
  std::vector<float> h = values(res.ranks[0].outputs[0]);
  std::vector<float> bias = input(mo.B * mo.H, 0.1f);
  o.entry = "f__stage1";
  o.allRanks = false;
  RunResult res1;
  st = (*ex)->run({{"h", {DType::F32, {mo.B, mo.H}, h.data()}},
                   {"skip", {DType::F32, {mo.B, mo.H}, x.data()}},
                   {"bias", {DType::F32, {mo.B, mo.H}, bias.data()}}},
                  o, res1);
  ASSERT_TRUE(bool(st)) << st.error().message;
  std::vector<float> y = values(res1.ranks[0].outputs[0]);
  EXPECT_EQ(y, runF(dir, mo, mo.B, 1));
}

// Microbatches on a plain (unpipelined) bundle: the same rows as one call.
TEST(Pipeline, MicrobatchesOfAPlainEntry) {
  Model mo;
  Model big = mo;
  big.B = 4 * mo.B;
  std::string full = makeFull("plain-mb", mo);
  std::string full4 = makeFull("plain-mb4", big);
  expectNear(runF(full, mo, big.B, 4), runF(full4, big, big.B, 1), 1e-6f);

  auto ex = Executor::open(full, threads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  std::vector<float> x = input(5 * mo.H, 1), bias = input(8 * mo.H, 1);
  RunOptions o;
  o.microbatches = 2;
  RunResult res;
  Status st = (*ex)->run({{"x", {DType::F32, {5, mo.H}, x.data()}},
                          {"bias", {DType::F32, {8, mo.H}, bias.data()}}},
                         o, res);
  ASSERT_FALSE(bool(st));
  EXPECT_NE(st.error().message.find("input 'x': dimension 0 is 5, but 2 "
                                    "microbatches need 2 x 4 = 8"),
            std::string::npos)
      << st.error().message;
  // An input without the batch dimension (bias given [4, 16]).
  std::vector<float> x8 = input(8 * mo.H, 1);
  st = (*ex)->run({{"x", {DType::F32, {8, mo.H}, x8.data()}},
                   {"bias", {DType::F32, {mo.B, mo.H}, bias.data()}}},
                  o, res);
  ASSERT_FALSE(bool(st));
  EXPECT_NE(st.error().message.find("input 'bias': dimension 0 is 4"),
            std::string::npos)
      << st.error().message;

  // A dynamic dimension 0 is not known to be the batch.
  std::string dyn = makePipelined("dyn-mb", mo, {"pp"}, {2}, [&](Json &m) {
    m["entries"][0]["inputs"][0]["shape"] = {-1, mo.H};
    m["integrity"]["entries"] = fnv(m["entries"].dump());
  });
  auto ex2 = Executor::open(dyn, threads());
  ASSERT_TRUE(bool(ex2)) << ex2.error().message;
  std::vector<float> b8 = input(8 * mo.H, 1);
  st = (*ex2)->run({{"x", {DType::F32, {8, mo.H}, x8.data()}},
                    {"bias", {DType::F32, {8, mo.H}, b8.data()}}},
                   o, res);
  ASSERT_FALSE(bool(st));
  EXPECT_NE(st.error().message.find("input 'x' of entry 'f' has a dynamic "
                                    "dimension 0"),
            std::string::npos)
      << st.error().message;
}

// Pipeline sections that do not fit are refused by name at open.
TEST(Pipeline, RefusesBadSections) {
  Model mo;
  auto refused = [&](const std::string &name,
                     const std::function<void(Json &)> &edit,
                     const std::string &want, bool hash = true) {
    std::string dir = makePipelined(name, mo, {"pp"}, {2}, edit, hash);
    auto ex = Executor::open(dir, threads());
    ASSERT_FALSE(bool(ex)) << name;
    EXPECT_NE(ex.error().message.find(want), std::string::npos)
        << name << ": " << ex.error().message;
  };
  // A boundary of another per-rank shape than the result it receives.
  refused(
      "shape",
      [](Json &m) {
        m["entries"][1]["inputs"][0]["shape"] = {4, 8};
      },
      "input 'h' (boundary 0) is f32 [4, 8] per rank, but result 0 'h' of "
      "stage 0 ('f__stage0') is f32 [4, 16]");
  // (the entries hash covers that edit too; re-hash to reach the check)
  refused(
      "missing-stage",
      [](Json &m) { m["pipeline"]["entries"]["f"][1] = "f__stage9"; },
      "pipeline.entries.f[1]: names no entry ('f__stage9'");
  refused(
      "axis", [](Json &m) { m["pipeline"]["stages"] = 3; },
      "pipeline.stages: 3 stages, but the mesh axis 'pp' has 2 ranks");
  refused(
      "unreceived",
      [](Json &m) { m["entries"][1]["inputs"][1].erase("boundary"); },
      "no input receives result 1 'skip' of 'f__stage0'");
  // The section is covered by the integrity hashes.
  refused("nohash", {}, "integrity.pipeline", /*hash=*/false);
  refused(
      "tampered", [](Json &m) { m["pipeline"]["schedule"] = "1f1b"; },
      "integrity.pipeline");
}

/// The pipeline events of a trace, per rank: (start, end) in us.
std::map<int64_t, std::vector<std::pair<double, double>>>
stageCalls(const std::string &trace, int *p2p = nullptr) {
  Json t = Json::parse(readAll(trace), nullptr, false);
  std::map<int64_t, std::vector<std::pair<double, double>>> out;
  if (t.is_discarded())
    return out;
  for (const Json &e : t["traceEvents"]) {
    if (e.value("ph", "") != "X")
      continue;
    if (e.value("cat", "") == "p2p" && p2p)
      ++*p2p;
    if (e.value("cat", "") != "pipeline")
      continue;
    double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    out[e["tid"].get<int64_t>()].push_back({ts, ts + dur});
  }
  return out;
}

/// Measured bubble: per stage, the idle fraction of the schedule's span
/// (first call of stage 0 to the last call of the last stage), averaged.
double measuredBubble(
    const std::map<int64_t, std::vector<std::pair<double, double>>> &calls) {
  double lo = 1e300, hi = 0;
  for (auto &[r, v] : calls)
    for (auto [a, b] : v) {
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
  double idle = 0;
  for (auto &[r, v] : calls) {
    double busy = 0;
    for (auto [a, b] : v)
      busy += b - a;
    idle += 1 - busy / (hi - lo);
  }
  return idle / double(calls.size());
}

// The trace of a pp = p run with m microbatches: one "forward stage k mb i"
// event per call with its args, p2p events, and a bubble of (p-1)/(m+p-1)
// within 0.04 (absolute). Every call also sleeps 40 ms (a fixed compute time,
// so that the loaded 2-core test machine measures the schedule, not the cores).
TEST(Pipeline, TraceAndBubble) {
  Model mo;
  ::setenv("LOOM_TEST_STAGE_SLEEP_US", "40000", 1);
  for (int64_t p : {2, 4})
    for (int m : {1, 4, 16}) {
      std::string name =
          "bubble-p" + std::to_string(p) + "-m" + std::to_string(m);
      std::string dir = makePipelined(name, mo, {"pp"}, {p});
      std::string trace = dir + "/trace.json";
      OpenOptions oo = threads();
      oo.tracePath = trace;
      Model big = mo;
      big.B = mo.B * m;
      runF(dir, mo, big.B, m, nullptr, oo);
      int p2p = 0;
      auto calls = stageCalls(trace, &p2p);
      ASSERT_EQ(calls.size(), size_t(p)) << name;
      for (auto &[r, v] : calls)
        EXPECT_EQ(v.size(), size_t(m)) << name << " rank " << r;
      EXPECT_EQ(p2p, int((p - 1) * m * 2)) << name; // a send and a recv each
      double want = double(p - 1) / double(m + p - 1);
      double got = measuredBubble(calls);
      std::printf("bubble pp=%lld m=%d: measured %.4f, (p-1)/(m+p-1) = %.4f\n",
                  (long long)p, m, got, want);
      EXPECT_NEAR(got, want, 0.04) << name;
    }
  ::unsetenv("LOOM_TEST_STAGE_SLEEP_US");

  // The event of contract D, exactly.
  std::string dir = makePipelined("trace-names", mo, {"pp"}, {2});
  OpenOptions oo = threads();
  oo.tracePath = dir + "/trace.json";
  runF(dir, mo, 2 * mo.B, 2, nullptr, oo);
  Json t = Json::parse(readAll(oo.tracePath), nullptr, false);
  bool found = false;
  for (const Json &e : t["traceEvents"])
    if (e.value("name", "") == "f stage 1 mb 1") {
      found = true;
      EXPECT_EQ(e["cat"], "pipeline");
      EXPECT_EQ(e["ph"], "X");
      EXPECT_EQ(e["tid"], 1);
      EXPECT_EQ(e["args"],
                (Json{{"entry", "f"}, {"stage", 1}, {"microbatch", 1}}));
    }
  EXPECT_TRUE(found);
}

// With compute instead of sleeps (a bigger MLP): measured where the host
// has a core per rank and thread (skipped otherwise); the tolerance is wider
// (the p2p copies and the cores' shared caches count).
TEST(Pipeline, BubbleWithCompute) {
  unsigned cores = std::thread::hardware_concurrency();
  if (cores < 8 && !std::getenv("LOOM_TEST_BUBBLE_COMPUTE"))
    GTEST_SKIP() << "needs 8 cores for pp=4 with compute (has " << cores << ")";
  Model mo;
  mo.B = 64;
  mo.H = 512;
  mo.layers = 16;
  for (int64_t p : {2, 4})
    for (int m : {1, 4, 16}) {
      std::string name =
          "cbubble-p" + std::to_string(p) + "-m" + std::to_string(m);
      std::string dir = makePipelined(name, mo, {"pp"}, {p});
      OpenOptions oo = threads(1);
      oo.tracePath = dir + "/trace.json";
      runF(dir, mo, mo.B * m, m, nullptr, oo);
      double want = double(p - 1) / double(m + p - 1);
      double got = measuredBubble(stageCalls(oo.tracePath));
      std::printf("compute bubble pp=%lld m=%d: measured %.4f, "
                  "(p-1)/(m+p-1) = %.4f\n",
                  (long long)p, m, got, want);
      EXPECT_NEAR(got, want, 0.06) << name;
    }
}

// A stage that fails mid-schedule (its second call) stops every rank, the
// ones waiting on a receive from it included, with its message, well within
// the timeout.
TEST(Pipeline, RankDiesMidSchedule) {
  Model mo;
  for (int dead : {0, 1, 3}) {
    ::setenv("LOOM_TEST_ABORT_RANK", std::to_string(dead).c_str(), 1);
    std::string dir =
        makePipelined("dies" + std::to_string(dead), mo, {"pp"}, {4});
    auto ex = Executor::open(dir, threads());
    ASSERT_TRUE(bool(ex)) << ex.error().message;
    std::vector<float> x = input(4 * mo.B * mo.H, 1),
                       bias = input(4 * mo.B * mo.H, 1);
    RunOptions o;
    o.microbatches = 4;
    RunResult res;
    double t0 = nowMs();
    Status st =
        (*ex)->run({{"x", {DType::F32, {4 * mo.B, mo.H}, x.data()}},
                    {"bias", {DType::F32, {4 * mo.B, mo.H}, bias.data()}}},
                   o, res);
    double ms = nowMs() - t0;
    ASSERT_FALSE(bool(st)) << "rank " << dead;
    EXPECT_TRUE(res.jobFailed);
    EXPECT_NE(st.error().message.find("stage gives up on purpose"),
              std::string::npos)
        << st.error().message;
    EXPECT_LT(ms, 5000) << "rank " << dead; // the timeout is 20 s
    // The executor stays usable: the next run (no failure) works.
    ::unsetenv("LOOM_TEST_ABORT_RANK");
  }
}

//===----------------------------------------------------------------------===//
// Generation through the stages of `decode`
//===----------------------------------------------------------------------===//

constexpr int64_t kV = 32, kD = 8;

Json itensor(const std::string &name, std::vector<int64_t> shape) {
  return {{"name", name}, {"dtype", "i64"}, {"shape", shape}};
}
Json cache(const std::string &name, int64_t entryArg) {
  Json c = tensor(name, {1, 1, -1, kD});
  c["state"] = "kv_cache";
  c["ctx_dim"] = 2;
  if (entryArg >= 0)
    c["entry_arg"] = entryArg;
  return c;
}
Json wslice(const std::string &name, int64_t offset, int64_t rows) {
  return {{"name", name},        {"file", "weights/lm.bin"},
          {"offset", offset},    {"nbytes", rows * kD * 4},
          {"shape", {rows, kD}}, {"strides", {kD, 1}}};
}

/// The toy LM of Inputs/pipeline_decode.c: `decode` whole on one rank, or
/// split in two stages over "pp" of the mesh `axes`/`shape`.
std::string makeDecode(const std::string &name, bool split,
                       std::vector<std::string> axes = {"world"},
                       std::vector<int64_t> shape = {1}) {
  fs::path dir = fs::path(::testing::TempDir()) /
                 ("loom-pipe-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "weights");
  fs::copy_file(LOOM_PIPE_DECODE_KERNEL, dir / "k.so");
  {
    std::ofstream w(dir / "weights" / "lm.bin", std::ios::binary);
    uint64_t st = 99;
    for (int64_t i = 0; i < (kV + 2 * kD) * kD; ++i) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      float v = float(st >> 40) / float(1 << 24) - 0.5f;
      w.write(reinterpret_cast<const char *>(&v), sizeof(v));
    }
  }
  int64_t e0 = 0, w0 = kV * kD * 4, w1 = w0 + kD * kD * 4;
  Json E = tensor("E", {kV, kD}), W0 = tensor("W0", {kD, kD}),
       W1 = tensor("W1", {kD, kD});
  Json tokens = itensor("tokens", {1, -1}),
       positions = itensor("positions", {-1});
  Json logits = {{"name", "logits"}, {"dtype", "f32"}, {"rank", 2}};
  Json entries = Json::array(), ranks = Json::array();
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  size_t ai = size_t(std::find(axes.begin(), axes.end(), "pp") - axes.begin());
  if (!split) {
    entries.push_back(
        {{"name", "decode"},
         {"symbol", "loom_entry_decode_full"},
         {"inputs",
          {tokens, positions, cache("cache0", -1), cache("cache1", -1)}},
         {"outputs", {logits}},
         {"weights", {E, W0, W1}}});
    for (int64_t r = 0; r < n; ++r)
      ranks.push_back({{"rank", r},
                       {"coords", {r}},
                       {"weights",
                        {{"decode",
                          {wslice("E", e0, kV), wslice("W0", w0, kD),
                           wslice("W1", w1, kD)}}}}});
  } else {
    Json t = tokens, p = positions, h = tensor("h", {1, -1, kD});
    t["entry_arg"] = 0;
    p["entry_arg"] = 1;
    Json hout = {
        {"name", "h"}, {"dtype", "f32"}, {"rank", 3}, {"shape", {1, -1, kD}}};
    h["boundary"] = 0;
    entries.push_back({{"name", "decode__stage0"},
                       {"symbol", "loom_entry_decode_s0"},
                       {"inputs", {t, p, cache("cache0", 2)}},
                       {"outputs", {hout}},
                       {"weights", {E, W0}}});
    Json lg = logits;
    lg["shape"] = {1, kV};
    entries.push_back({{"name", "decode__stage1"},
                       {"symbol", "loom_entry_decode_s1"},
                       {"inputs", {h, p, cache("cache1", 3)}},
                       {"outputs", {lg}},
                       {"weights", {E, W1}}});
    for (int64_t r = 0; r < n; ++r) {
      std::vector<int64_t> c(shape.size());
      for (int64_t a = int64_t(shape.size()) - 1, rest = r; a >= 0; --a) {
        c[size_t(a)] = rest % shape[size_t(a)];
        rest /= shape[size_t(a)];
      }
      Json w = c[ai] == 0 ? Json{{"decode__stage0",
                                  {wslice("E", e0, kV), wslice("W0", w0, kD)}}}
                          : Json{{"decode__stage1",
                                  {wslice("E", e0, kV), wslice("W1", w1, kD)}}};
      ranks.push_back({{"rank", r}, {"coords", c}, {"weights", w}});
    }
  }
  Json m = {{"format", "loom-bundle"},
            {"version", 1},
            {"abi_version", 1},
            {"model", "toy-lm"},
            {"mesh", {{"axes", axes}, {"shape", shape}}},
            {"num_ranks", n},
            {"library", "k.so"},
            {"entries", entries},
            {"ranks", ranks}};
  if (split)
    m["pipeline"] = {
        {"axis", "pp"},
        {"axis_index", ai},
        {"stages", 2},
        {"entries", {{"decode", {"decode__stage0", "decode__stage1"}}}}};
  finish(dir, m, {});
  return dir.string();
}

std::vector<std::vector<int32_t>>
generateAll(const std::string &dir, std::vector<std::vector<int32_t>> prompts) {
  auto ex = Executor::open(dir, threads());
  EXPECT_TRUE(bool(ex)) << ex.error().message;
  if (!ex)
    return {};
  GenerateOptions o;
  o.promptIds = std::move(prompts);
  o.maxTokens = 16;
  o.ctx = 32;
  o.ignoreEog = true;
  GenerateResult res;
  Status st = (*ex)->generate(o, {}, res);
  EXPECT_TRUE(bool(st)) << st.error().message;
  std::vector<std::vector<int32_t>> out;
  for (const GeneratedSequence &g : res.sequences)
    out.push_back(g.ids);
  return out;
}

std::vector<int32_t> generateIds(const std::string &dir) {
  auto all = generateAll(dir, {{1, 5, 7, 3, 9}});
  return all.empty() ? std::vector<int32_t>() : all[0];
}

// Generation through the two stages of a pipelined `decode` (each stage's
// KV cache on its ranks, the last stage's first rank sampling, the token
// reaching every rank) gives the tokens of the whole decode on one rank:
// pp = 2 alone and with tp = 2 (both tp ranks of a stage compute).
TEST(Pipeline, GenerationEqualsOneRank) {
  std::vector<int32_t> ref = generateIds(makeDecode("lm-full", false));
  ASSERT_EQ(ref.size(), 16u);
  EXPECT_EQ(generateIds(makeDecode("lm-pp2", true, {"pp"}, {2})), ref);
  EXPECT_EQ(generateIds(makeDecode("lm-pp2tp2", true, {"pp", "tp"}, {2, 2})),
            ref);
  EXPECT_EQ(generateIds(makeDecode("lm-tp2pp2", true, {"tp", "pp"}, {2, 2})),
            ref);
}

// Several sequences in flight through the stages (one group per sequence:
// stage 0 on sequence i while stage 1 is on i-1), prompts of different
// lengths: each sequence's tokens equal that prompt generated alone on one
// rank.
TEST(Pipeline, GenerationInFlight) {
  std::string full = makeDecode("lm-full-if", false);
  std::vector<std::vector<int32_t>> prompts = {
      {1, 5, 7, 3, 9}, {2, 4}, {11, 12, 13}, {30}};
  std::vector<std::vector<int32_t>> ref;
  for (auto &p : prompts)
    ref.push_back(generateAll(full, {p}).at(0));
  EXPECT_NE(ref[0], ref[1]);
  EXPECT_EQ(generateAll(makeDecode("lm-pp2-if", true, {"pp"}, {2}), prompts),
            ref);
  EXPECT_EQ(generateAll(makeDecode("lm-pp2tp2-if", true, {"pp", "tp"}, {2, 2}),
                        {prompts[0], prompts[1], prompts[2]}),
            (std::vector<std::vector<int32_t>>{ref[0], ref[1], ref[2]}));
}

// In flight, the two stages work at once: two sequences of 8 tokens with
// every stage call taking 20 ms finish in well under the time of the same
// two generated one after the other (ideally 1/2: 19 ticks of one stage
// call against 2 x 9 steps of two calls).
TEST(Pipeline, GenerationInFlightKeepsStagesBusy) {
  ::setenv("LOOM_TEST_STAGE_SLEEP_US", "20000", 1);
  std::string dir = makeDecode("lm-busy", true, {"pp"}, {2});
  auto ex = Executor::open(dir, threads());
  ASSERT_TRUE(bool(ex)) << ex.error().message;
  auto timed = [&](std::vector<std::vector<int32_t>> prompts) {
    GenerateOptions o;
    o.promptIds = std::move(prompts);
    o.maxTokens = 8;
    o.ctx = 32;
    o.ignoreEog = true;
    GenerateResult res;
    double t0 = nowMs();
    Status st = (*ex)->generate(o, {}, res);
    EXPECT_TRUE(bool(st)) << st.error().message;
    return nowMs() - t0;
  };
  double alone = timed({{1, 2, 3}}) + timed({{4, 5, 6}});
  double together = timed({{1, 2, 3}, {4, 5, 6}});
  ::unsetenv("LOOM_TEST_STAGE_SLEEP_US");
  std::printf("2 sequences on pp=2, 20 ms per stage call: one after the "
              "other %.0f ms, in flight %.0f ms (%.2fx)\n",
              alone, together, together / alone);
  EXPECT_LT(together, 0.75 * alone);
}

/// Runs the per-stage step lists on a unit-time simulator (a step starts
/// when its stage is free and its inputs exist: F(k, i) after F(k-1, i);
/// B(k, i) after F(k, i) and B(k+1, i)); the makespan, or -1 on a deadlock,
/// and each stage's most activations held at once (forwards not yet
/// backward).
int64_t simulate(const std::vector<std::vector<PipelineStep>> &sched, int64_t m,
                 std::vector<int64_t> &peak) {
  int64_t p = int64_t(sched.size());
  std::map<std::tuple<int64_t, int64_t, bool>, int64_t> done; // -> end time
  std::vector<size_t> next(size_t(p), 0);
  std::vector<int64_t> freeAt(size_t(p), 0), held(size_t(p), 0);
  peak.assign(size_t(p), 0);
  size_t total = 0, ran = 0;
  for (auto &v : sched)
    total += v.size();
  int64_t end = 0;
  while (ran < total) {
    bool progress = false;
    for (int64_t k = 0; k < p; ++k) {
      if (next[size_t(k)] >= sched[size_t(k)].size())
        continue;
      const PipelineStep &st = sched[size_t(k)][next[size_t(k)]];
      std::vector<std::tuple<int64_t, int64_t, bool>> deps;
      if (!st.backward && k > 0)
        deps.push_back({k - 1, st.microbatch, false});
      if (st.backward) {
        deps.push_back({k, st.microbatch, false});
        if (k + 1 < p)
          deps.push_back({k + 1, st.microbatch, true});
      }
      int64_t start = freeAt[size_t(k)];
      bool ready = true;
      for (auto &d : deps) {
        auto it = done.find(d);
        if (it == done.end())
          ready = false;
        else
          start = std::max(start, it->second);
      }
      if (!ready)
        continue;
      done[{k, st.microbatch, st.backward}] = freeAt[size_t(k)] = start + 1;
      end = std::max(end, start + 1);
      held[size_t(k)] += st.backward ? -1 : 1;
      peak[size_t(k)] = std::max(peak[size_t(k)], held[size_t(k)]);
      ++next[size_t(k)];
      ++ran;
      progress = true;
    }
    if (!progress)
      return -1;
  }
  (void)m;
  return end;
}

// The schedules as step lists: forward-only both are microbatches 0..m-1
// (what the executor runs); with backward steps both finish in 2(m+p-1)
// unit steps without deadlock, GPipe holding m activations per stage and
// 1F1B at most p-k on stage k.
TEST(Pipeline, Schedules) {
  for (int64_t p : {1, 2, 4})
    for (int64_t m : {1, 4, 8, 16}) {
      for (auto kind : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
        auto fwd = pipelineSchedule(kind, p, m, false);
        ASSERT_EQ(fwd.size(), size_t(p));
        for (int64_t k = 0; k < p; ++k) {
          ASSERT_EQ(fwd[size_t(k)].size(), size_t(m));
          for (int64_t i = 0; i < m; ++i)
            EXPECT_EQ(fwd[size_t(k)][size_t(i)], (PipelineStep{k, i, false}));
        }
        std::vector<int64_t> peak;
        auto full = pipelineSchedule(kind, p, m, true);
        EXPECT_EQ(simulate(full, m, peak), 2 * (m + p - 1))
            << "p=" << p << " m=" << m;
        for (int64_t k = 0; k < p; ++k)
          EXPECT_EQ(peak[size_t(k)],
                    kind == PipelineSchedule::GPipe ? m : std::min(m, p - k))
              << "p=" << p << " m=" << m << " stage " << k;
      }
    }
  // Stage 0 of 1F1B with p = 4, m = 6: three warm-up forwards, then 1F1B.
  auto s = pipelineSchedule(PipelineSchedule::OneFOneB, 4, 6, true)[0];
  std::string order;
  for (const PipelineStep &st : s)
    order += (st.backward ? "B" : "F") + std::to_string(st.microbatch) + " ";
  EXPECT_EQ(order, "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
}

/// Runs `cmd` (stdout and stderr into `log`); its exit status.
int shell(const std::string &cmd, const std::string &log) {
  int rc = std::system((cmd + " > " + log + " 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

// loom-run on the same bundle: threads and MPI (one process per rank),
// --microbatches, outputs from the last stage; a stage that fails
// mid-schedule under MPI ends the job non-zero with its message.
TEST(Pipeline, LoomRunThreadsAndMpi) {
  Model mo;
  Model big = mo;
  big.B = 2 * mo.B;
  std::string full = makeFull("cli-full", big);
  std::vector<float> ref = runF(full, big, big.B, 1);
  std::string dir = makePipelined("cli", mo, {"pp"}, {2});
  std::vector<float> x = input(big.B * mo.H, 1.0f),
                     bias = input(big.B * mo.H, 0.1f);
  std::string err;
  ASSERT_TRUE(writeNpy(dir + "/x.npy", "<f4", {big.B, mo.H}, x.data(),
                       int64_t(x.size() * 4), &err))
      << err;
  ASSERT_TRUE(writeNpy(dir + "/bias.npy", "<f4", {big.B, mo.H}, bias.data(),
                       int64_t(bias.size() * 4), &err))
      << err;
  std::string args = " " + dir + " --input x=" + dir +
                     "/x.npy --input bias=" + dir +
                     "/bias.npy --microbatches 2 --threads 1 --output ";
  std::vector<std::string> runs = {std::string(LOOM_RUN_BIN) +
                                   " --backend threads" + args + dir +
                                   "/threads"};
  bool mpi = shell("command -v mpirun", dir + "/which.log") == 0;
  std::string mpirun = "mpirun --allow-run-as-root --oversubscribe --mca btl "
                       "self,vader -np 2 ";
  if (mpi)
    runs.push_back(mpirun + LOOM_RUN_BIN + " --backend mpi" + args + dir +
                   "/mpi");
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string log = dir + "/run" + std::to_string(i) + ".log";
    ASSERT_EQ(shell(runs[i], log), 0) << runs[i] << "\n" << readAll(log);
    NpyArray y;
    std::string out = dir + (i ? "/mpi" : "/threads") + "/y.npy";
    ASSERT_TRUE(readNpy(out, y, &err)) << out << ": " << err;
    EXPECT_EQ(y.shape, (std::vector<int64_t>{big.B, mo.H}));
    const float *p = reinterpret_cast<const float *>(y.data.get());
    std::vector<float> got(p, p + y.numElements());
    expectNear(got, ref, 1e-6f);
  }
  if (!mpi)
    GTEST_SKIP() << "mpirun not found: the MPI half is not run";
  std::string log = dir + "/dies.log";
  double t0 = nowMs();
  int rc = shell(mpirun + "-x LOOM_TEST_ABORT_RANK=1 " + LOOM_RUN_BIN +
                     " --backend mpi --timeout 30" + args + dir + "/dies",
                 log);
  double ms = nowMs() - t0;
  EXPECT_NE(rc, 0) << readAll(log);
  EXPECT_NE(readAll(log).find("stage gives up on purpose"), std::string::npos)
      << readAll(log);
  EXPECT_LT(ms, 20000);

  // A process that exits mid-schedule (stage 1 of 2, no message of its
  // own): mpirun ends the job, the survivor says what it was waiting in.
  log = dir + "/exits.log";
  t0 = nowMs();
  rc = shell(mpirun + "-x LOOM_TEST_EXIT_RANK=1 " + LOOM_RUN_BIN +
                 " --backend mpi --timeout 30" + args + dir + "/exits",
             log);
  ms = nowMs() - t0;
  EXPECT_NE(rc, 0) << readAll(log);
  EXPECT_NE(readAll(log).find("rank 0: terminated by SIGTERM"),
            std::string::npos)
      << readAll(log);
  EXPECT_LT(ms, 20000);
}

} // namespace
