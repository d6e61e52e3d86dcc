//===- bench/gpu/QmmBench.cpp - qmatmul kernels on a GPU: numerics, speed -===//
//
// Runs on a machine with an NVIDIA GPU (scripts/gpu-check.sh); links only
// the CUDA runtime (driver, cuBLAS, NCCL dlopen'ed), not the compiler.
//
//   loom-gpu-bench verify <manifest.tsv> <cubin-dir>
//       no device: the staged cubins exist and name their SM
//   loom-gpu-bench selftest <cubin-dir> <out-dir>
//       device, memory, streams, events, graphs, module errors (a cubin for
//       the wrong architecture, garbage bytes, a missing kernel), cuBLAS,
//       a one-rank NCCL all-reduce
//   loom-gpu-bench check <manifest.tsv> <cubin-dir> <out-dir>
//       every kernel family of the manifest against a CPU reference
//       (double accumulation over an independent dequantizer), batches
//       1, 2, 3, 8 (GEMV) and 9, 64, 100 (tiled)
//   loom-gpu-bench perf <manifest.tsv> <cubin-dir> <out-dir>
//       batch-1 GEMV of the manifest's `perf` rows: bytes of W over time,
//       weights rotated across copies larger than L2, CUDA-graph replay;
//       against cuBLAS fp16 GEMV of the same [N, K]
//
// Manifest rows (tab-separated, written by gpu-check.sh --prepare):
//   role base format block mode scale act n k weight_bytes
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/abi.h"
#include "loom/runtime/cuda.h"

#include "test/gpu/QuantReference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using loom::gpu::ref::dequant;
using loom::gpu::ref::fromHalf;
using loom::gpu::ref::randomWeight;
using loom::gpu::ref::toHalf;

struct Spec : loom::gpu::ref::Format {
  std::string role, base;
  int64_t weightBytes = 0;
};

[[noreturn]] void die(const std::string &msg) {
  std::fprintf(stderr, "loom-gpu-bench: %s\n", msg.c_str());
  std::exit(1);
}

void check(int32_t rc, const char *what) {
  if (rc != 0)
    die(std::string(what) + ": " + loom_cuda_last_error());
}

std::vector<Spec> readManifest(const std::string &path) {
  std::ifstream f(path);
  if (!f)
    die("cannot read " + path);
  std::vector<Spec> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream is(line);
    Spec s;
    is >> s.role >> s.base >> s.format >> s.block >> s.mode >> s.scale >>
        s.act >> s.n >> s.k >> s.weightBytes;
    if (!is)
      die("bad manifest line: " + line);
    out.push_back(s);
  }
  return out;
}

struct Dev {
  loom_cuda_device *dev = nullptr;
  loom_cuda_device_info info{};
};

loom_cuda_ptr upload(Dev &d, const void *p, int64_t bytes) {
  loom_cuda_ptr x = 0;
  check(loom_cuda_malloc(d.dev, bytes, &x), "malloc");
  check(loom_cuda_copy_to_device(d.dev, x, p, bytes, nullptr), "copy");
  return x;
}

std::string cubinPath(const std::string &dir, const std::string &base, int sm) {
  return dir + "/" + base + ".sm_" + std::to_string(sm) + ".cubin";
}

/// The cubin that runs on a device of `sm`: its own, else the same major's
/// x0 (sm_80 runs on sm_86 and sm_89).
std::string deviceCubin(const std::string &dir, const std::string &base,
                        int sm) {
  std::string exact = cubinPath(dir, base, sm);
  if (std::ifstream(exact))
    return exact;
  return cubinPath(dir, base, sm / 10 * 10);
}

//===----------------------------------------------------------------------===//
// check: numerics against the CPU reference
//===----------------------------------------------------------------------===//

int runCheck(Dev &d, const std::vector<Spec> &specs, const std::string &dir,
             FILE *out) {
  std::mt19937 rng(1234);
  int failures = 0;
  std::fprintf(out, "| kernel | batch | max abs err / max abs ref | result |\n"
                    "|---|---|---|---|\n");
  for (const Spec &s : specs) {
    if (s.role != "check")
      continue;
    loom_cuda_module *mod = nullptr;
    check(loom_cuda_module_load_file(
              d.dev, deviceCubin(dir, s.base, d.info.sm).c_str(), &mod),
          "module load");
    std::vector<uint8_t> w = randomWeight(s, rng);
    std::vector<float> wf = dequant(s, w);
    loom_cuda_ptr dw = upload(d, w.data(), int64_t(w.size()));
    bool half = s.act == "f16";
    for (int64_t m : {1, 2, 3, 8, 9, 64, 100}) {
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      std::vector<float> x(size_t(m * s.k));
      std::vector<uint16_t> xh(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = u(rng);
        if (half) {
          xh[i] = toHalf(x[i]);
          x[i] = fromHalf(xh[i]);
        }
      }
      loom_cuda_ptr dx = half ? upload(d, xh.data(), int64_t(xh.size() * 2))
                              : upload(d, x.data(), int64_t(x.size() * 4));
      int64_t yBytes = m * s.n * (half ? 2 : 4);
      loom_cuda_ptr dy = 0;
      check(loom_cuda_malloc(d.dev, yBytes, &dy), "malloc y");
      check(loom_cuda_memset(d.dev, dy, 0xff, yBytes, nullptr), "memset");
      check(loom_cuda_qmatmul(mod, s.base.c_str(), dw, dx, dy, m, s.n, nullptr),
            "qmatmul");
      check(loom_cuda_stream_sync(d.dev, nullptr), "sync");
      std::vector<float> y(size_t(m * s.n));
      if (half) {
        std::vector<uint16_t> yh(y.size());
        check(loom_cuda_copy_to_host(d.dev, yh.data(), dy, yBytes, nullptr),
              "copy y");
        for (size_t i = 0; i < y.size(); ++i)
          y[i] = fromHalf(yh[i]);
      } else {
        check(loom_cuda_copy_to_host(d.dev, y.data(), dy, yBytes, nullptr),
              "copy y");
      }
      double maxErr = 0, maxRef = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double ref = 0;
          for (int64_t kk = 0; kk < s.k; ++kk)
            ref += double(x[size_t(i * s.k + kk)]) *
                   double(wf[size_t(j * s.k + kk)]);
          double got = y[size_t(i * s.n + j)];
          maxErr = std::max(maxErr, std::isfinite(got) ? std::fabs(got - ref)
                                                       : INFINITY);
          maxRef = std::max(maxRef, std::fabs(ref));
        }
      double rel = maxErr / (maxRef + 1e-30);
      bool ok = rel <= (half ? 2e-3 : 1e-4);
      failures += !ok;
      std::fprintf(out, "| %s | %lld | %.3g | %s |\n", s.base.c_str(),
                   (long long)m, rel, ok ? "ok" : "FAIL");
      std::fflush(out);
      loom_cuda_free(d.dev, dx);
      loom_cuda_free(d.dev, dy);
    }
    loom_cuda_free(d.dev, dw);
    loom_cuda_module_unload(mod);
  }
  std::fprintf(out, "\n%d failure(s)\n", failures);
  return failures ? 1 : 0;
}

//===----------------------------------------------------------------------===//
// perf: batch-1 GEMV bandwidth, ours vs cuBLAS fp16
//===----------------------------------------------------------------------===//

/// Mean milliseconds of one call of `launch(i)` (i = copy index), from a
/// CUDA graph of `perGraph` calls replayed `reps` times.
template <typename F>
double timeIt(Dev &d, loom_cuda_stream st, int copies, F launch) {
  const int perGraph = 32, reps = 20;
  for (int i = 0; i < copies; ++i) // warm up (module load, cuBLAS heuristics)
    launch(i, st);
  check(loom_cuda_stream_sync(d.dev, st), "sync");
  check(loom_cuda_graph_begin(d.dev, st), "graph begin");
  for (int i = 0; i < perGraph; ++i)
    launch(i % copies, st);
  loom_cuda_graph *g = nullptr;
  check(loom_cuda_graph_end(d.dev, st, &g), "graph end");
  loom_cuda_event *e0, *e1;
  check(loom_cuda_event_create(d.dev, &e0), "event");
  check(loom_cuda_event_create(d.dev, &e1), "event");
  check(loom_cuda_graph_launch(g, st), "graph launch");
  check(loom_cuda_event_record(e0, st), "record");
  for (int r = 0; r < reps; ++r)
    check(loom_cuda_graph_launch(g, st), "graph launch");
  check(loom_cuda_event_record(e1, st), "record");
  float ms = 0;
  check(loom_cuda_event_elapsed_ms(e0, e1, &ms), "elapsed");
  loom_cuda_event_destroy(e0);
  loom_cuda_event_destroy(e1);
  loom_cuda_graph_destroy(g);
  return double(ms) / (perGraph * reps);
}

int runPerf(Dev &d, const std::vector<Spec> &specs, const std::string &dir,
            FILE *out, FILE *json) {
  loom_cuda_stream st = nullptr;
  check(loom_cuda_stream_create(d.dev, &st), "stream");
  std::mt19937 rng(99);
  const double peak = 4.8e12; // H200 HBM3e, the target's reference
  std::fprintf(out,
               "| kernel | N x K | weight MB | ours us | ours TB/s | %% of "
               "4.8 TB/s | cuBLAS fp16 us | cuBLAS TB/s | speedup |\n"
               "|---|---|---|---|---|---|---|---|---|\n");
  std::fprintf(json, "[\n");
  bool first = true;
  for (const Spec &s : specs) {
    if (s.role != "perf")
      continue;
    loom_cuda_module *mod = nullptr;
    check(loom_cuda_module_load_file(
              d.dev, deviceCubin(dir, s.base, d.info.sm).c_str(), &mod),
          "module load");
    // Enough copies that the set is >= 4x a 60 MB L2: every call streams
    // its weights from HBM.
    int copies = int(std::max<int64_t>(2, (256ll << 20) / s.weightBytes + 1));
    std::vector<uint8_t> w = randomWeight(s, rng);
    std::vector<loom_cuda_ptr> dw(static_cast<size_t>(copies));
    for (auto &p : dw)
      p = upload(d, w.data(), int64_t(w.size()));
    std::vector<uint16_t> xh(size_t(s.k));
    for (auto &v : xh)
      v = toHalf(0.5f);
    loom_cuda_ptr dx = upload(d, xh.data(), int64_t(xh.size() * 2));
    loom_cuda_ptr dy = 0;
    check(loom_cuda_malloc(d.dev, s.n * 4, &dy), "malloc");
    double ours = timeIt(d, st, copies, [&](int i, loom_cuda_stream t) {
      check(loom_cuda_qmatmul(mod, s.base.c_str(), dw[size_t(i)], dx, dy, 1,
                              s.n, t),
            "qmatmul");
    });
    for (auto p : dw)
      loom_cuda_free(d.dev, p);

    // cuBLAS fp16: y[1, N] = x[1, K] W^T, W stored [N, K].
    int64_t fp16Bytes = s.n * s.k * 2;
    int hc = int(std::max<int64_t>(2, (256ll << 20) / fp16Bytes + 1));
    std::vector<uint16_t> wh(size_t(s.n * s.k), toHalf(0.01f));
    std::vector<loom_cuda_ptr> dwh(static_cast<size_t>(hc));
    for (auto &p : dwh)
      p = upload(d, wh.data(), fp16Bytes);
    double blas = timeIt(d, st, hc, [&](int i, loom_cuda_stream t) {
      check(loom_cuda_gemm(d.dev, LOOM_RT_F16, 0, 1, 1, s.n, s.k, dx,
                           dwh[size_t(i)], dy, t),
            "cublas gemm");
    });
    for (auto p : dwh)
      loom_cuda_free(d.dev, p);
    loom_cuda_free(d.dev, dx);
    loom_cuda_free(d.dev, dy);
    loom_cuda_module_unload(mod);

    double oursBw = double(s.weightBytes) / (ours * 1e-3);
    double blasBw = double(fp16Bytes) / (blas * 1e-3);
    std::fprintf(out,
                 "| %s | %lld x %lld | %.1f | %.2f | %.2f | %.0f%% | %.2f | "
                 "%.2f | %.2fx |\n",
                 s.base.c_str(), (long long)s.n, (long long)s.k,
                 s.weightBytes / 1e6, ours * 1e3, oursBw / 1e12,
                 100 * oursBw / peak, blas * 1e3, blasBw / 1e12, blas / ours);
    std::fprintf(json,
                 "%s  {\"kernel\": \"%s\", \"n\": %lld, \"k\": %lld, "
                 "\"weight_bytes\": %lld, \"ours_us\": %.3f, "
                 "\"ours_bytes_per_s\": %.4g, \"cublas_fp16_us\": %.3f, "
                 "\"cublas_bytes_per_s\": %.4g, \"speedup\": %.3f, "
                 "\"fraction_of_4.8TBps\": %.3f}",
                 first ? "" : ",\n", s.base.c_str(), (long long)s.n,
                 (long long)s.k, (long long)s.weightBytes, ours * 1e3, oursBw,
                 blas * 1e3, blasBw, blas / ours, oursBw / peak);
    first = false;
    std::fflush(out);
  }
  std::fprintf(json, "\n]\n");
  std::fprintf(out, "\nTargets: >= 85%% of 4.8 TB/s and >= 3.5x cuBLAS fp16 "
                    "GEMV for int4 at batch 1.\n");
  loom_cuda_stream_destroy(d.dev, st);
  return 0;
}

//===----------------------------------------------------------------------===//
// selftest: the device paths of the runtime
//===----------------------------------------------------------------------===//

int runSelftest(Dev &d, const std::string &dir, FILE *out) {
  int failures = 0;
  auto report = [&](const char *what, bool ok, const std::string &detail) {
    std::fprintf(out, "%-44s %s %s\n", what, ok ? "ok  " : "FAIL",
                 detail.c_str());
    std::fflush(out);
    failures += !ok;
  };
  // Memory round trip on a stream.
  loom_cuda_stream st = nullptr;
  check(loom_cuda_stream_create(d.dev, &st), "stream");
  std::vector<int> h(1 << 20), back(h.size());
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = int(i * 2654435761u);
  loom_cuda_ptr a = 0, b = 0;
  check(loom_cuda_malloc(d.dev, int64_t(h.size() * 4), &a), "malloc");
  check(loom_cuda_malloc(d.dev, int64_t(h.size() * 4), &b), "malloc");
  check(loom_cuda_copy_to_device(d.dev, a, h.data(), int64_t(h.size() * 4), st),
        "h2d");
  check(loom_cuda_copy_device(d.dev, b, a, int64_t(h.size() * 4), st), "d2d");
  check(
      loom_cuda_copy_to_host(d.dev, back.data(), b, int64_t(h.size() * 4), st),
      "d2h");
  report("memory h2d/d2d/d2h 4 MB", back == h, "");

  // Graph capture and replay of device work.
  check(loom_cuda_memset(d.dev, b, 0, int64_t(h.size() * 4), st), "memset");
  check(loom_cuda_graph_begin(d.dev, st), "graph begin");
  check(loom_cuda_copy_device(d.dev, b, a, int64_t(h.size() * 4), st), "d2d");
  loom_cuda_graph *g = nullptr;
  check(loom_cuda_graph_end(d.dev, st, &g), "graph end");
  check(loom_cuda_stream_sync(d.dev, st), "sync");
  std::fill(back.begin(), back.end(), 0);
  check(
      loom_cuda_copy_to_host(d.dev, back.data(), b, int64_t(h.size() * 4), st),
      "d2h");
  bool notYet = back != h; // capture does not execute
  check(loom_cuda_graph_launch(g, st), "graph launch");
  check(
      loom_cuda_copy_to_host(d.dev, back.data(), b, int64_t(h.size() * 4), st),
      "d2h");
  report("CUDA graph capture + replay", notYet && back == h, "");
  loom_cuda_graph_destroy(g);

  // Module errors: garbage, a missing kernel, a cubin for another SM.
  loom_cuda_module *mod = nullptr;
  const char junk[] = "not a cubin";
  int rc = loom_cuda_module_load(d.dev, junk, sizeof junk, &mod);
  report("garbage image is an error", rc == -1, loom_cuda_last_error());
  int otherSm = d.info.sm / 10 == 9 ? 80 : 90;
  std::string other;
  {
    std::ifstream list(dir + "/manifest.tsv");
    std::string line;
    while (std::getline(list, line))
      if (!line.empty() && line[0] != '#') {
        std::istringstream is(line);
        std::string role, base;
        is >> role >> base;
        other = base;
        break;
      }
  }
  if (!other.empty()) {
    rc = loom_cuda_module_load_file(
        d.dev, cubinPath(dir, other, otherSm).c_str(), &mod);
    std::string e = loom_cuda_last_error();
    report("cubin for the wrong SM is an error",
           rc == -1 && e.find("cubin is for sm_") != std::string::npos, e);
    rc = loom_cuda_module_load_file(
        d.dev, deviceCubin(dir, other, d.info.sm).c_str(), &mod);
    report("cubin for this SM loads", rc == 0, loom_cuda_last_error());
    if (rc == 0) {
      uint32_t one[3] = {1, 1, 1};
      rc = loom_cuda_launch(mod, "no_such_kernel", one, one, 0, st, nullptr);
      report("missing kernel is an error", rc == -1, loom_cuda_last_error());
      loom_cuda_module_unload(mod);
    }
  }

  // cuBLAS: [2, 3] x [3, 4] in f32 against the obvious loop.
  float A[6] = {1, 2, 3, 4, 5, 6}, B[12], C[8] = {0}, R[8] = {0};
  for (int i = 0; i < 12; ++i)
    B[i] = float(i) * 0.5f;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        R[i * 4 + j] += A[i * 3 + k] * B[k * 4 + j];
  loom_cuda_ptr da = upload(d, A, sizeof A), db = upload(d, B, sizeof B), dc;
  check(loom_cuda_malloc(d.dev, sizeof C, &dc), "malloc");
  rc = loom_cuda_gemm(d.dev, LOOM_RT_F32, 0, 0, 2, 4, 3, da, db, dc, st);
  std::string gemmErr = rc ? loom_cuda_last_error() : "";
  if (!rc)
    check(loom_cuda_copy_to_host(d.dev, C, dc, sizeof C, st), "d2h");
  report("cuBLAS row-major sgemm 2x3x4",
         !rc && std::equal(
                    C, C + 8, R,
                    [](float x, float y) { return std::fabs(x - y) < 1e-4f; }),
         gemmErr);

  // NCCL on one rank: all-reduce is a copy.
  uint8_t id[LOOM_CUDA_NCCL_ID_BYTES];
  loom_cuda_nccl *comm = nullptr;
  rc = loom_cuda_nccl_unique_id(id);
  if (!rc)
    rc = loom_cuda_nccl_init_id(d.dev, 0, 1, id, &comm);
  if (!rc)
    rc = loom_cuda_nccl_all_reduce(comm, LOOM_RT_I32, LOOM_RT_SUM, a, b,
                                   int64_t(h.size()), st);
  std::string ncclErr = rc ? loom_cuda_last_error() : "";
  if (!rc)
    check(loom_cuda_copy_to_host(d.dev, back.data(), b, int64_t(h.size() * 4),
                                 st),
          "d2h");
  report("NCCL one-rank all_reduce", !rc && back == h, ncclErr);
  loom_cuda_nccl_destroy(comm);

  for (loom_cuda_ptr p : {a, b, da, db, dc})
    loom_cuda_free(d.dev, p);
  loom_cuda_stream_destroy(d.dev, st);
  std::fprintf(out, "\n%d failure(s)\n", failures);
  return failures ? 1 : 0;
}

} // namespace

/// No device needed: every manifest row has a cubin per staged SM that
/// names its SM, and the reference generator agrees on the weight size.
int runVerify(const std::vector<Spec> &specs, const std::string &dir) {
  int bad = 0;
  std::mt19937 rng(1);
  for (const Spec &s : specs) {
    for (int sm : {80, 90}) {
      std::ifstream f(cubinPath(dir, s.base, sm), std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
      int got = loom_cuda_cubin_sm(bytes.data(), int64_t(bytes.size()));
      if (got != sm) {
        std::fprintf(stderr, "%s: sm_%d cubin missing or for sm_%d\n",
                     s.base.c_str(), sm, got);
        ++bad;
      }
    }
    if (s.role == "check" &&
        int64_t(randomWeight(s, rng).size()) != s.weightBytes) {
      std::fprintf(stderr, "%s: reference layout disagrees on the size\n",
                   s.base.c_str());
      ++bad;
    }
  }
  std::printf("verified %zu manifest rows: %d problem(s)\n", specs.size(), bad);
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2)
    die("usage: loom-gpu-bench info | verify <manifest.tsv> <cubin-dir> | "
        "selftest <cubin-dir> <out-dir> | "
        "check|perf <manifest.tsv> <cubin-dir> <out-dir>");
  std::string mode = argv[1];
  if (mode == "verify" && argc == 4)
    return runVerify(readManifest(argv[2]), argv[3]);
  Dev d;
  check(loom_cuda_open(0, &d.dev), "open device 0");
  check(loom_cuda_info(d.dev, &d.info), "device info");
  if (mode == "info") {
    std::printf("%s sm_%d, %d SMs, %.1f GiB, peak %.2f TB/s (from clocks), "
                "driver %d\n",
                d.info.name, d.info.sm, d.info.multiprocessors,
                d.info.total_memory / double(1 << 30),
                d.info.peak_bandwidth / 1e12, d.info.driver_version);
    std::printf("sm=%d\n", d.info.sm);
    return 0;
  }
  if (mode == "selftest" && argc == 4) {
    FILE *out =
        std::fopen((std::string(argv[3]) + "/selftest.txt").c_str(), "w");
    int rc = runSelftest(d, argv[2], out ? out : stdout);
    if (out)
      std::fclose(out);
    return rc;
  }
  if ((mode == "check" || mode == "perf") && argc == 5) {
    std::vector<Spec> specs = readManifest(argv[2]);
    std::string outDir = argv[4];
    if (mode == "check") {
      FILE *out = std::fopen((outDir + "/numerics.md").c_str(), "w");
      return runCheck(d, specs, argv[3], out ? out : stdout);
    }
    FILE *out = std::fopen((outDir + "/perf.md").c_str(), "w");
    FILE *json = std::fopen((outDir + "/perf.json").c_str(), "w");
    return runPerf(d, specs, argv[3], out ? out : stdout, json ? json : stdout);
  }
  die("bad arguments");
}
