//===- Device.cpp - Device specs for the cost model -----------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Cost/Device.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace loom::cost {

std::string_view elemTypeName(ElemType t) {
  switch (t) {
  case ElemType::F32:
    return "f32";
  case ElemType::TF32:
    return "tf32";
  case ElemType::BF16:
    return "bf16";
  case ElemType::F16:
    return "f16";
  case ElemType::FP8:
    return "fp8";
  case ElemType::INT8:
    return "int8";
  }
  return "?";
}

Result<ElemType> parseElemType(std::string_view s) {
  if (s == "f32" || s == "fp32")
    return ElemType::F32;
  if (s == "tf32")
    return ElemType::TF32;
  if (s == "bf16")
    return ElemType::BF16;
  if (s == "f16" || s == "fp16")
    return ElemType::F16;
  if (s == "fp8" || s == "f8")
    return ElemType::FP8;
  if (s == "int8" || s == "i8")
    return ElemType::INT8;
  return Error{"unknown element type '" + std::string(s) +
               "' (expected f32, tf32, bf16, f16, fp8 or int8)"};
}

ElemType computeTypeOf(DType t) {
  switch (t) {
  case DType::F16:
    return ElemType::F16;
  case DType::BF16:
    return ElemType::BF16;
  default:
    return ElemType::F32;
  }
}

unsigned elemBytes(ElemType t) {
  switch (t) {
  case ElemType::F32:
  case ElemType::TF32:
    return 4;
  case ElemType::BF16:
  case ElemType::F16:
    return 2;
  case ElemType::FP8:
  case ElemType::INT8:
    return 1;
  }
  return 4;
}

double DeviceSpec::peakFlops(ElemType t) const {
  // Fall back to the next wider type that the device has.
  double fp8 = peakFP8, bf16 = peakBF16, tf32 = peakTF32, f32 = peakF32;
  if (tf32 <= 0)
    tf32 = f32;
  if (bf16 <= 0)
    bf16 = tf32;
  if (fp8 <= 0)
    fp8 = bf16;
  switch (t) {
  case ElemType::F32:
    return f32;
  case ElemType::TF32:
    return tf32;
  case ElemType::BF16:
  case ElemType::F16:
    return bf16;
  case ElemType::FP8:
  case ElemType::INT8:
    return fp8;
  }
  return f32;
}

static constexpr double T = 1e12, G = 1e9;

DeviceSpec a100_40gb() {
  DeviceSpec d;
  d.name = "a100-40gb";
  d.peakF32 = 19.5 * T;
  d.peakTF32 = 156 * T;
  d.peakBF16 = 312 * T;
  d.peakFP8 = 624 * T; // int8 tensor cores; A100 has no fp8
  d.memBandwidth = 1555 * G;
  d.memCapacity = 40 * G;
  return d;
}

DeviceSpec a100_80gb() {
  DeviceSpec d = a100_40gb();
  d.name = "a100-80gb";
  d.memBandwidth = 2039 * G;
  d.memCapacity = 80 * G;
  return d;
}

DeviceSpec h100_sxm() {
  DeviceSpec d;
  d.name = "h100-sxm";
  d.peakF32 = 67 * T;
  d.peakTF32 = 494.7 * T;
  d.peakBF16 = 989.4 * T;
  d.peakFP8 = 1978.9 * T;
  d.memBandwidth = 3350 * G;
  d.memCapacity = 80 * G;
  return d;
}

DeviceSpec h200() {
  DeviceSpec d = h100_sxm();
  d.name = "h200";
  d.memBandwidth = 4800 * G;
  d.memCapacity = 141 * G;
  return d;
}

DeviceSpec describeCpu(std::string name, unsigned cores, double flopsPerCycle,
                       double ghz, double memBandwidth, double memCapacity) {
  DeviceSpec d;
  d.name = std::move(name);
  d.kind = DeviceKind::CPU;
  d.peakF32 = cores * flopsPerCycle * ghz * G;
  d.peakTF32 = d.peakF32;
  d.peakBF16 = d.peakF32;
  d.peakFP8 = 2 * d.peakF32;
  d.memBandwidth = memBandwidth;
  d.memCapacity = memCapacity;
  return d;
}

namespace {
double seconds(std::chrono::steady_clock::time_point a,
               std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

template <typename F> void parallelFor(unsigned threads, F &&f) {
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back([&f, t] { f(t); });
  f(0);
  for (auto &th : pool)
    th.join();
}
} // namespace

DeviceSpec measureCpu(unsigned threads, std::size_t triadBytes) {
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  // Triad: a = b + s c, 3 arrays of triadBytes; counts 3 x bytes moved (the
  // STREAM convention: no write-allocate traffic).
  std::size_t n = std::max<std::size_t>(triadBytes / sizeof(float), 1024);
  std::vector<float> a(n, 0.f), b(n, 1.f), c(n, 2.f);
  double best = 1e30;
  for (int rep = 0; rep < 4; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    parallelFor(threads, [&](unsigned t) {
      std::size_t lo = n * t / threads, hi = n * (t + 1) / threads;
      for (std::size_t i = lo; i < hi; ++i)
        a[i] = b[i] + 3.f * c[i];
    });
    best = std::min(best, seconds(t0, std::chrono::steady_clock::now()));
  }
  double bandwidth = 3.0 * n * sizeof(float) / best;

  // GEMM probe: C += A B, 256^3 per thread, i-k-j order that vectorises.
  const int m = 256;
  std::vector<std::vector<float>> A(threads, std::vector<float>(m * m, 1.f)),
      B(threads, std::vector<float>(m * m, 0.5f)),
      C(threads, std::vector<float>(m * m, 0.f));
  double bestG = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    parallelFor(threads, [&](unsigned t) {
      float *a_ = A[t].data(), *b_ = B[t].data(), *c_ = C[t].data();
      for (int i = 0; i < m; ++i)
        for (int k = 0; k < m; ++k) {
          float aik = a_[i * m + k];
          for (int j = 0; j < m; ++j)
            c_[i * m + j] += aik * b_[k * m + j];
        }
    });
    bestG = std::min(bestG, seconds(t0, std::chrono::steady_clock::now()));
  }
  double flops = 2.0 * m * m * m * threads / bestG;
  DeviceSpec d = describeCpu("cpu-measured", threads, 1, 1, bandwidth, 0);
  d.peakF32 = d.peakTF32 = d.peakBF16 = flops;
  d.peakFP8 = 2 * flops;
  // Capacity: not probed portably; 8 GB per thread as a conservative guess
  // (callers that know better overwrite it).
  d.memCapacity = 8e9 * threads;
  return d;
}

Result<DeviceSpec> deviceByName(std::string_view name) {
  if (name == "a100-40gb" || name == "a100-40")
    return a100_40gb();
  if (name == "a100-80gb" || name == "a100-80" || name == "a100")
    return a100_80gb();
  if (name == "h100" || name == "h100-sxm")
    return h100_sxm();
  if (name == "h200")
    return h200();
  if (name == "cpu") // this project's 2-core Zen 3 VM, AVX2 FMA: 2 x 32 x 3
    return describeCpu("cpu", 2, 32, 3.0, 20.2e9, 8e9);
  std::string known;
  for (auto &n : knownDeviceNames())
    known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown device '" + std::string(name) + "' (known: " + known +
               ")"};
}

std::vector<std::string> knownDeviceNames() {
  return {"a100-40gb", "a100-80gb", "h100-sxm", "h200", "cpu"};
}

} // namespace loom::cost
