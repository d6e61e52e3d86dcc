//===- Gemm.cpp - f32 GEMM for generated code -----------------------------===//
//
// Large f32 matrix products are called, not generated: OpenBLAS is the
// well-kept library for them (docs/ARCHITECTURE.md says which is which).
// Without OpenBLAS a cache-blocked loop keeps the build working.
//
// OpenBLAS is loaded with dlopen on first use, not linked: its DYNAMIC_ARCH
// build picks its kernels from a table of CPU model numbers in a library
// constructor, and a CPU newer than the table (an AVX-512 Xeon for Debian's
// 0.3.21) falls back to SSE3 kernels, 3-4x slower. Before loading it, the
// runtime names the core from the CPU's *features* (OPENBLAS_CORETYPE,
// unless the user set it): AVX-512 F/BW/VL/DQ/CD -> SkylakeX (Cooperlake
// with AVX512-BF16), AVX2+FMA -> Haswell (Zen on AMD), AVX -> SandyBridge.
// `loom-run --bench` prints the result (gemmBackend()).
//
// Products whose right operand is a weight do not go to OpenBLAS: the
// weight is packed into panels (GemmPacked.cpp) and the micro-kernel chosen
// from cpuid runs on the rank's thread pool, so no call repacks the weight
// or zeroes C ($LOOM_GEMM=openblas|avx2|avx512 overrides the choice, for
// measurements). The executor packs the weights the manifest marks
// ("gemm_b") when it loads them and registers them on each rank's context
// (a hash lookup per call finds them); a weight of a rank's mapping that
// is not marked (an older bundle, a weight mapped by hand) is packed on its
// first use and kept for the process.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"

#include "loom/runtime/Gemm.h"
#include "loom/runtime/Runtime.h"
#include "loom/runtime/abi.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#ifdef LOOM_RT_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>
#endif

namespace loom::rt {

std::string openBlasCoreFor(bool amd, bool avx, bool avx2, bool fma,
                            bool avx512, bool avx512bf16) {
  if (avx512)
    return avx512bf16 ? "Cooperlake" : "SkylakeX";
  if (avx2 && fma)
    return amd ? "Zen" : "Haswell";
  if (avx)
    return "SandyBridge";
  return "";
}

} // namespace loom::rt

namespace {

#ifdef LOOM_RT_HAVE_OPENBLAS
/// OpenBLAS's entry points, resolved once (null members: not loaded).
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&openblas_set_num_threads) setNumThreads = nullptr;
  decltype(&openblas_get_corename) coreName = nullptr;
  decltype(&openblas_get_config) config = nullptr;
  std::string description;
};

/// The core to ask OpenBLAS for, from this CPU's features; empty: let
/// OpenBLAS choose (not x86, or no AVX).
std::string coreFromFeatures(std::string &why) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  bool amd = __builtin_cpu_is("amd");
  bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd");
  bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  bool avx2 = __builtin_cpu_supports("avx2"),
       fma = __builtin_cpu_supports("fma"), avx = __builtin_cpu_supports("avx");
  why = avx512 ? (bf16 ? "avx512 f/bw/vl/dq/cd + bf16" : "avx512 f/bw/vl/dq/cd")
        : avx2 && fma ? (amd ? "avx2 + fma, AMD" : "avx2 + fma")
        : avx         ? "avx"
                      : "";
  return loom::rt::openBlasCoreFor(amd, avx, avx2, fma, avx512, bf16);
#else
  return "";
#endif
}

const OpenBlas &openBlas() {
  static OpenBlas blas = [] {
    OpenBlas b;
    std::string why, core;
    const char *user = std::getenv("OPENBLAS_CORETYPE");
    if (user && *user) {
      why = "OPENBLAS_CORETYPE from the environment";
    } else {
      core = coreFromFeatures(why);
      if (!core.empty())
        ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    }
    void *h = ::dlopen(LOOM_RT_OPENBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      h = ::dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!core.empty())
      ::unsetenv("OPENBLAS_CORETYPE");
    if (!h) {
      b.description = "blocked loop (OpenBLAS not loadable: " +
                      std::string(::dlerror() ? ::dlerror() : "?") + ")";
      return b;
    }
    b.sgemm = reinterpret_cast<decltype(b.sgemm)>(::dlsym(h, "cblas_sgemm"));
    b.setNumThreads = reinterpret_cast<decltype(b.setNumThreads)>(
        ::dlsym(h, "openblas_set_num_threads"));
    b.coreName = reinterpret_cast<decltype(b.coreName)>(
        ::dlsym(h, "openblas_get_corename"));
    b.config =
        reinterpret_cast<decltype(b.config)>(::dlsym(h, "openblas_get_config"));
    if (!b.sgemm || !b.setNumThreads) {
      b.sgemm = nullptr;
      b.description = "blocked loop (OpenBLAS lacks cblas_sgemm)";
      return b;
    }
    std::string config = b.config ? b.config() : "OpenBLAS";
    std::string name = b.coreName ? b.coreName() : "?";
    b.description = config + ", core " + name;
    if (!core.empty())
      b.description += " (chosen from CPU features: " + why + ")";
    else if (!why.empty())
      b.description += " (" + why + ")";
    return b;
  }();
  return blas;
}

/// BLAS threads: the rank's thread count (one owner of the threads: the
/// rank's pool is idle while the rank is inside OpenBLAS, and generated code
/// never calls BLAS from a pool task), or $LOOM_BLAS_THREADS when set (an
/// override for measurements). OpenBLAS's count is per process; thread
/// ranks of one job share one count.
void configureThreads(const OpenBlas &blas, loom_rt_ctx *ctx) {
  static std::mutex mu;
  static std::atomic<int> current{0};
  static const int env = [] {
    const char *v = std::getenv("LOOM_BLAS_THREADS");
    return v ? std::max(0, std::atoi(v)) : 0;
  }();
  int threads = env > 0 ? env : std::max(1, ctx ? ctx->numThreads : 1);
  if (current.load(std::memory_order_acquire) == threads)
    return;
  std::lock_guard<std::mutex> lock(mu);
  if (current.load(std::memory_order_relaxed) != threads) {
    blas.setNumThreads(threads);
    current.store(threads, std::memory_order_release);
  }
}
#endif

/// The packed kernel for weight products: the best one this CPU's features
/// allow, or the one $LOOM_GEMM names (measurements): "openblas" (None:
/// weights through OpenBLAS, unpacked), "avx2", "avx512". `note` says why
/// when the choice is not the default.
struct WeightKernel {
  loom::rt::GemmKernel kernel = loom::rt::GemmKernel::None;
  std::string note;
};

const WeightKernel &weightKernelChoice() {
  using loom::rt::GemmKernel;
  static const WeightKernel k = [] {
    WeightKernel w;
    w.kernel = loom::rt::bestGemmKernel();
    const char *v = std::getenv("LOOM_GEMM");
    std::string want = v ? v : "";
    if (want.empty())
      return w;
    bool known = want == "openblas" || want == "avx2" || want == "avx512";
    GemmKernel asked = want == "avx2"     ? GemmKernel::Avx2Fma
                       : want == "avx512" ? GemmKernel::Avx512
                                          : GemmKernel::None;
    if (!known)
      w.note =
          "LOOM_GEMM=" + want + " ignored: not one of openblas, avx2, avx512";
    else if (!loom::rt::gemmKernelSupported(asked))
      w.note = "LOOM_GEMM=" + want + " ignored: this CPU lacks its features";
    else {
      w.kernel = asked;
      w.note = "LOOM_GEMM=" + want;
    }
    return w;
  }();
  return k;
}

loom::rt::GemmKernel weightKernel() { return weightKernelChoice().kernel; }

/// Packed weights of the process, keyed by the mapping they lie in and
/// their place and use in it. An entry lives while its mapping does (a
/// weak pointer: an address reused by a later mapping never hits a stale
/// entry); expired ones are dropped when a weight is packed.
struct PackedCache {
  using Key = std::tuple<const loom::MappedFile *, const float *, bool, int64_t,
                         int64_t>;
  struct Value {
    std::weak_ptr<const loom::MappedFile> file;
    std::shared_ptr<const loom::rt::PackedB> packed;
  };
  std::mutex mu;
  std::map<Key, Value> entries;
};

PackedCache &packedCache() {
  static PackedCache *c = new PackedCache; // outlives every rank
  return *c;
}

std::atomic<int64_t> packedAtLoad{0}, packedAtLoadBytes{0}, packedOnFirstUse{0};

/// B's packed form when the executor packed it at load for this rank and
/// this orientation and size (a hash lookup, no lock: the table is filled
/// before the rank runs).
const loom::rt::PackedB *loadPackedWeight(loom_rt_ctx *ctx, bool tb, int64_t k,
                                          int64_t n, const float *b) {
  if (!ctx)
    ctx = loom::rt::threadContext();
  if (!ctx || ctx->loadPacked.empty())
    return nullptr;
  auto it = ctx->loadPacked.find(b);
  if (it == ctx->loadPacked.end() || it->second.transB != tb)
    return nullptr;
  const loom::rt::PackedB &p = *it->second.packed;
  return p.k == k && p.n == n ? &p : nullptr;
}

/// B packed, when B (`tb`: [N, K], else [K, N]) lies inside one of ctx's
/// weight mappings; null otherwise (an activation, or a weight copied at
/// load because it is strided in its file).
std::shared_ptr<const loom::rt::PackedB>
packedWeight(loom_rt_ctx *ctx, bool tb, int64_t k, int64_t n, const float *b) {
  if (!ctx)
    ctx = loom::rt::threadContext();
  if (!ctx || ctx->mappings.empty())
    return nullptr;
  const char *lo = reinterpret_cast<const char *>(b);
  const char *hi = lo + sizeof(float) * size_t(k) * size_t(n);
  const std::shared_ptr<const loom::MappedFile> *file = nullptr;
  for (const auto &f : ctx->mappings) {
    const char *d = static_cast<const char *>(f->data());
    if (lo >= d && hi <= d + f->size()) {
      file = &f;
      break;
    }
  }
  if (!file)
    return nullptr;
  PackedCache &cache = packedCache();
  PackedCache::Key key{file->get(), b, tb, k, n};
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.entries.find(key);
  if (it != cache.entries.end() && it->second.file.lock() == *file)
    return it->second.packed;
  std::erase_if(cache.entries,
                [](const auto &e) { return e.second.file.expired(); });
  auto packed =
      std::make_shared<loom::rt::PackedB>(loom::rt::packGemmB(tb, k, n, b));
  if (!packed->data)
    return nullptr; // out of memory: the unpacked path needs none
  cache.entries[key] = {*file, packed};
  packedOnFirstUse.fetch_add(1, std::memory_order_relaxed);
  return packed;
}

/// Rows of A from which a product of two activations packs B for the
/// call and runs on the packed kernel (fewer: OpenBLAS, whose small-M
/// paths are faster than packing B for a GEMV; measured in
/// docs/BENCHMARKS.md).
constexpr int64_t kMinRowsToPackPerCall = 16;

/// This thread's 64-byte-aligned scratch of at least `floats` floats (kept
/// and grown; null when out of memory).
float *packScratch(int64_t floats) {
  struct Scratch {
    float *p = nullptr;
    int64_t size = 0;
    ~Scratch() { std::free(p); }
  };
  thread_local Scratch s;
  if (s.size < floats) {
    std::free(s.p);
    size_t bytes = (size_t(floats) * sizeof(float) + 63) / 64 * 64;
    s.p = static_cast<float *>(std::aligned_alloc(64, bytes));
    s.size = s.p ? floats : 0;
  }
  return s.p;
}

/// C = A B through the packed kernel, A transposed into a scratch copy
/// when `ta` ([K, M]).
void packedSgemm(loom_rt_ctx *ctx, bool ta, int64_t m, int64_t k,
                 const float *a, const loom::rt::PackedB &b, float *c) {
  std::vector<float> at;
  if (ta) {
    at.resize(size_t(m) * size_t(k));
    for (int64_t p = 0; p < k; ++p)
      for (int64_t i = 0; i < m; ++i)
        at[size_t(i * k + p)] = a[p * m + i];
    a = at.data();
  }
  loom::rt::gemmPacked(ctx, weightKernel(), m, a, k, b, c, b.n);
}

/// Products [begin, end) of a batched GEMM on the packed kernel, B packed
/// per product (loom_rt_sgemm_batched's grouped-query indexing).
struct BatchJob {
  loom_rt_ctx *ctx;
  bool ta, tb;
  int64_t heads, group, kvHeads, m, n, k;
  const float *a, *b;
  float *c;
};

void runBatch(void *closure, int64_t begin, int64_t end) {
  const BatchJob &j = *static_cast<const BatchJob *>(closure);
  float *scratch = packScratch(loom::rt::packedGemmBFloats(j.k, j.n));
  if (!scratch)
    loom_rt_abort(j.ctx, "loom_rt_sgemm_batched: out of memory for the "
                         "packed right operand");
  for (int64_t i = begin; i < end; ++i) {
    int64_t r = (i / j.heads) * j.kvHeads + (i % j.heads) / j.group;
    loom::rt::PackedB packed =
        loom::rt::packGemmBInto(j.tb, j.k, j.n, j.b + r * j.k * j.n, scratch);
    // Inside a pool task the product's own split runs serially.
    packedSgemm(j.ctx, j.ta, j.m, j.k, j.a + i * j.m * j.k, packed,
                j.c + i * j.m * j.n);
  }
}

/// C[m,n] = sum_k A[m,k] B[k,n] with optional transposes, row-major.
void blockedGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                 const float *a, const float *b, float *c) {
  auto A = [&](int64_t i, int64_t p) {
    return ta ? a[p * m + i] : a[i * k + p];
  };
  auto B = [&](int64_t p, int64_t j) {
    return tb ? b[j * k + p] : b[p * n + j];
  };
  std::fill(c, c + m * n, 0.0f);
  constexpr int64_t kb = 256;
  for (int64_t p0 = 0; p0 < k; p0 += kb) {
    int64_t p1 = std::min(k, p0 + kb);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = p0; p < p1; ++p) {
        float av = A(i, p);
        float *ci = c + i * n;
        for (int64_t j = 0; j < n; ++j)
          ci[j] += av * B(p, j);
      }
  }
}

} // namespace

extern "C" LOOM_RT_EXPORT void
loom_rt_sgemm(loom_rt_ctx *ctx, int32_t trans_a, int32_t trans_b, int64_t m,
              int64_t n, int64_t k, const float *a, const float *b, float *c) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    std::memset(c, 0, sizeof(float) * size_t(m) * size_t(n));
    return;
  }
  if (weightKernel() != loom::rt::GemmKernel::None) {
    if (const auto *packed = loadPackedWeight(ctx, trans_b != 0, k, n, b)) {
      packedSgemm(ctx, trans_a != 0, m, k, a, *packed, c);
      return;
    }
    if (auto packed = packedWeight(ctx, trans_b != 0, k, n, b)) {
      packedSgemm(ctx, trans_a != 0, m, k, a, *packed, c);
      return;
    }
    // Two activations (attention's products): B packed for this call into
    // the thread's scratch when A has rows enough to repay it.
    if (m >= kMinRowsToPackPerCall) {
      float *scratch = packScratch(loom::rt::packedGemmBFloats(k, n));
      if (scratch) {
        loom::rt::PackedB packed =
            loom::rt::packGemmBInto(trans_b != 0, k, n, b, scratch);
        packedSgemm(ctx, trans_a != 0, m, k, a, packed, c);
        return;
      }
    }
  }
#ifdef LOOM_RT_HAVE_OPENBLAS
  const OpenBlas &blas = openBlas();
  if (blas.sgemm) {
    configureThreads(blas, ctx);
    blas.sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
               trans_b ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
               blasint(k), 1.0f, a, blasint(trans_a ? m : k), b,
               blasint(trans_b ? k : n), 0.0f, c, blasint(n));
    return;
  }
#endif
  (void)ctx;
  blockedGemm(trans_a != 0, trans_b != 0, m, n, k, a, b, c);
}

extern "C" LOOM_RT_EXPORT void
loom_rt_sgemm_batched(loom_rt_ctx *ctx, int32_t trans_a, int32_t trans_b,
                      int64_t batch, int64_t heads, int64_t group, int64_t m,
                      int64_t n, int64_t k, const float *a, const float *b,
                      float *c) {
  if (batch <= 0)
    return;
  if (heads <= 0 || group <= 0 || heads % group != 0)
    loom_rt_abort(ctx, "loom_rt_sgemm_batched: heads must be a positive "
                       "multiple of group");
  int64_t kvHeads = heads / group;
  if (weightKernel() != loom::rt::GemmKernel::None &&
      m >= kMinRowsToPackPerCall) {
    // Packed products, one per pool task (each on one thread, its B packed
    // into that thread's scratch): the heads split over the threads rather
    // than each small product over them.
    BatchJob job{
        ctx, trans_a != 0, trans_b != 0, heads, group, kvHeads, m, n, k, a, b,
        c};
    int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / (m * n * k));
    loom_rt_parallel_for(ctx, batch, grain, &runBatch, &job);
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    // Grouped-query: product i reads right operand (i / heads) * kvHeads +
    // (i % heads) / group.
    int64_t j = (i / heads) * kvHeads + (i % heads) / group;
    loom_rt_sgemm(ctx, trans_a, trans_b, m, n, k, a + i * m * k, b + j * k * n,
                  c + i * m * n);
  }
}

namespace loom::rt {

void startGemm() {
#ifdef LOOM_RT_HAVE_OPENBLAS
  (void)openBlas();
#endif
}

std::shared_ptr<const PackedB> packWeightAtLoad(bool transB, int64_t k,
                                                int64_t n, const float *b,
                                                bool mapped) {
  if (weightKernel() == GemmKernel::None || k <= 0 || n <= 0)
    return nullptr;
  // Entries of one bundle (prefill and decode) and bundles open together
  // share the packed copy of one mapped slice: the mapping stays at its
  // address while a packed copy of it lives.
  using Key = std::tuple<const float *, bool, int64_t, int64_t>;
  static std::mutex mu;
  static auto *shared = new std::map<Key, std::weak_ptr<const PackedB>>;
  std::lock_guard<std::mutex> lock(mu);
  if (mapped)
    if (auto p = (*shared)[Key{b, transB, k, n}].lock())
      return p;
  auto packed = std::make_shared<PackedB>(packGemmB(transB, k, n, b));
  if (!packed->data)
    return nullptr;
  packedAtLoad.fetch_add(1, std::memory_order_relaxed);
  packedAtLoadBytes.fetch_add(packedGemmBFloats(k, n) * int64_t(sizeof(float)),
                              std::memory_order_relaxed);
  if (mapped) {
    std::erase_if(*shared, [](const auto &e) { return e.second.expired(); });
    (*shared)[Key{b, transB, k, n}] = packed;
  }
  return packed;
}

void registerLoadPackedWeight(loom_rt_ctx *ctx, const float *b,
                              LoadPackedWeight w) {
  if (ctx && b && w.packed)
    ctx->loadPacked[b] = std::move(w);
}

GemmPackStats gemmPackStats() {
  GemmPackStats s;
  s.atLoad = packedAtLoad.load(std::memory_order_relaxed);
  s.atLoadBytes = packedAtLoadBytes.load(std::memory_order_relaxed);
  s.onFirstUse = packedOnFirstUse.load(std::memory_order_relaxed);
  return s;
}

std::string gemmBackend() {
#ifdef LOOM_RT_HAVE_OPENBLAS
  std::string other = openBlas().description;
#else
  std::string other = "blocked loop (built without OpenBLAS)";
#endif
  const WeightKernel &w = weightKernelChoice();
  std::string why = w.note.empty() ? "chosen from CPU features" : w.note;
  if (w.kernel == GemmKernel::None)
    return other + "; weights not packed (" +
           (w.note.empty() ? "no packed kernel for this CPU's features"
                           : w.note) +
           ")";
  GemmPackStats st = gemmPackStats();
  return std::string("weights packed once, kernel ") +
         gemmKernelName(w.kernel) + " (" + why + "); other products: " + other +
         "; packed at load: " + std::to_string(st.atLoad) + " weights (" +
         std::to_string((st.atLoadBytes + (1 << 19)) >> 20) +
         " MiB), on first use: " + std::to_string(st.onFirstUse);
}

} // namespace loom::rt
