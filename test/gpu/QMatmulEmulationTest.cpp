//===- test/gpu/QMatmulEmulationTest.cpp - the kernels' arithmetic on a CPU
//===//
//
// No GPU in CI, so the generated kernels are also emitted as host functions
// (KernelOptions::hostEmulation: same emitter, same index arithmetic, loads,
// dequantization and accumulation; thread/block ids become arguments, the
// warp shuffle becomes a sum over lanes here, barriers a std::barrier), JIT
// compiled with MLIR's ExecutionEngine and run thread by thread against a
// double-precision reference over an independent dequantizer
// (QuantReference.h). What this does not cover — the NVPTX lowering,
// shuffles, shared memory banks, timing — is scripts/gpu-check.sh's.
//
//===----------------------------------------------------------------------===//

#include "lib/Target/GpuTarget/GpuTarget.h"
#include "test/gpu/QuantReference.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace mlir;
using namespace loom::gpu;

namespace {

std::barrier<> *currentBarrier = nullptr;

} // namespace

// Called by the emulated tiled kernel at each gpu.barrier (resolved by the
// JIT from this executable's exported symbols).
extern "C" void loom_emu_barrier() {
  if (!currentBarrier) {
    // A kernel that should not reach a barrier here (QMatmulZeroRows).
    std::fprintf(stderr, "loom_emu_barrier called with no barrier set\n");
    std::abort();
  }
  currentBarrier->arrive_and_wait();
}

namespace {

using KernelFn = void (*)(void *w, void *x, void *y, int32_t m, int32_t tid,
                          int32_t bx, int32_t by, void *xs, void *ws);

struct Case {
  const char *format;
  int64_t block;
  const char *mode, *scale, *act;
  int64_t n, k;
};

std::string name(const Case &c) {
  return std::string(c.format) + "_b" + std::to_string(c.block) + "_" + c.mode +
         "_" + c.scale + "_" + c.act + "_n" + std::to_string(c.n) + "_k" +
         std::to_string(c.k);
}

// gtest prints parameters in test listings (and ctest names); a readable
// one instead of the bytes.
void PrintTo(const Case &c, std::ostream *os) { *os << name(c); }

/// JIT-compiles host-emulation kernels (`text`); `engine` stays null (and
/// a failure is recorded) when they do not parse or lower.
void compileEmulation(const std::string &text,
                      std::unique_ptr<ExecutionEngine> &engine) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  registerGpuTargetDialects(registry);
  MLIRContext ctx(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(module) << "emulation kernels do not parse";
  PassManager pm(&ctx);
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  ExecutionEngineOptions eo;
  auto e = ExecutionEngine::create(*module, eo);
  ASSERT_TRUE(bool(e)) << llvm::toString(e.takeError());
  engine = std::move(*e);
}

/// Runs the kernels of `c` emitted with `opts` (plus hostEmulation) at each
/// batch of `batches` (GEMV up to opts.maxGemvBatch, tiled above) against
/// the float64 reference.
void checkAgainstReference(const Case &c, KernelOptions opts,
                           std::initializer_list<int64_t> batches) {
  QMatmulSpec spec;
  std::optional<loom::quant::Format> format =
      loom::quant::parseFormat(c.format);
  std::optional<loom::quant::Mode> mode = loom::quant::parseMode(c.mode);
  ASSERT_TRUE(format && mode);
  spec.format = *format;
  spec.mode = *mode;
  ASSERT_TRUE(parseElemType(c.scale, spec.scale));
  ASSERT_TRUE(parseElemType(c.act, spec.act));
  spec.block = c.block;
  spec.n = c.n;
  spec.k = c.k;
  ASSERT_EQ(validate(spec), "");

  opts.hostEmulation = true;
  std::unique_ptr<ExecutionEngine> engine;
  compileEmulation(emitQMatmulModule("emu", {spec}, opts), engine);
  ASSERT_TRUE(engine);

  ref::Format f{c.format, std::string(loom::quant::modeName(spec.mode)),
                c.scale,  c.act,
                c.block,  c.n,
                c.k};
  // The reference names the modes as --list prints them.
  std::mt19937 rng(7);
  std::vector<uint8_t> w = ref::randomWeight(f, rng);
  ASSERT_EQ(int64_t(w.size()), weightBytes(spec));
  std::vector<float> wf = ref::dequant(f, w);
  const bool half = spec.act == ElemType::F16;

  for (int64_t m : batches) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(size_t(m * c.k));
    std::vector<uint16_t> xh(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = u(rng);
      xh[i] = ref::toHalf(x[i]);
      if (half)
        x[i] = ref::fromHalf(xh[i]);
    }
    void *xp = half ? static_cast<void *>(xh.data()) : x.data();
    std::vector<float> y(size_t(m * c.n));
    bool gemv = m <= opts.maxGemvBatch;
    std::string kernel =
        gemv ? gemvKernelName(spec, int(m)) : tiledKernelName(spec);
    auto sym = engine->lookup(kernel);
    ASSERT_TRUE(bool(sym)) << kernel;
    auto fn = reinterpret_cast<KernelFn>(*sym);
    if (gemv) {
      // 8 rows per block, 128 threads; lanes' partials summed here.
      std::vector<float> part(size_t(m * c.n * 32), 0.0f);
      for (int32_t b = 0; b < int32_t((c.n + 7) / 8); ++b)
        for (int32_t t = 0; t < 128; ++t)
          fn(w.data(), xp, part.data(), int32_t(m), t, b, 0, nullptr, nullptr);
      for (size_t i = 0; i < y.size(); ++i) {
        float s = 0;
        for (int l = 0; l < 32; ++l)
          s += part[i * 32 + size_t(l)];
        y[i] = s;
      }
    } else {
      // 64x64 tiles, 256 threads per block meeting at barriers.
      std::vector<uint16_t> yh(y.size());
      void *yp = half ? static_cast<void *>(yh.data()) : y.data();
      for (int32_t by = 0; by < int32_t((m + 63) / 64); ++by)
        for (int32_t bx = 0; bx < int32_t((c.n + 63) / 64); ++bx) {
          std::vector<float> xs(32 * 68), ws(32 * 68);
          std::barrier<> bar(256);
          currentBarrier = &bar;
          std::vector<std::thread> threads;
          for (int32_t t = 0; t < 256; ++t)
            threads.emplace_back([&, t] {
              fn(w.data(), xp, yp, int32_t(m), t, bx, by, xs.data(), ws.data());
            });
          for (auto &th : threads)
            th.join();
          currentBarrier = nullptr;
        }
      if (half)
        for (size_t i = 0; i < y.size(); ++i)
          y[i] = ref::fromHalf(yh[i]);
    }
    double maxErr = 0, maxRef = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double r = 0;
        for (int64_t kk = 0; kk < c.k; ++kk)
          r += double(x[size_t(i * c.k + kk)]) *
               double(wf[size_t(j * c.k + kk)]);
        maxErr = std::max(maxErr, std::fabs(y[size_t(i * c.n + j)] - r));
        maxRef = std::max(maxRef, std::fabs(r));
      }
    // f16 outputs (tiled with f16 activations) are rounded once. The
    // packed 4-bit GEMV with f16 activations rounds its f16x2 partial sums
    // (8 products per f16 lane, each FMA to 2^-12 of the partial; docs/
    // GPU.md): 1.7e-4 .. 7.5e-4 of max |y| over the QMatmulGemv4 cases, the
    // order of the 2^-11 = 4.9e-4 with which the kernel stores its f16
    // output anyway; the bound is the tiled one.
    bool fourBit = spec.format != loom::quant::Format::Q8_0 &&
                   spec.format != loom::quant::Format::Int8;
    bool halfProducts =
        half && gemv && fourBit && opts.gemvDequant == GemvDequant::Packed;
    double tol = half && (!gemv || halfProducts) ? 2e-3 : 1e-5;
    EXPECT_LE(maxErr / maxRef, tol) << kernel << " batch " << m;
    testing::Test::RecordProperty(kernel, std::to_string(maxErr / maxRef));
  }
}

// The kernels' element types are DType's float types, spelled as DType
// spells them; any other dtype is refused by name, never generated.
// A launch with m = 0 does nothing: a run-time M launches both the GEMV
// for one row and the tiled kernel, the one not chosen with 0 rows
// (loom-gpu-qmatmul-launches); neither may write y.
TEST(QMatmulZeroRows, NothingWritten) {
  QMatmulSpec spec =
      ggufSpec(loom::quant::Format::Q4_1, /*n=*/70, /*k=*/128, ElemType::F32);
  KernelOptions opts;
  opts.hostEmulation = true;
  opts.maxGemvBatch = 1;
  std::unique_ptr<ExecutionEngine> engine;
  compileEmulation(emitQMatmulModule("emu", {spec}, opts), engine);
  ASSERT_TRUE(engine);
  std::vector<uint8_t> w(size_t(weightBytes(spec)), 0x11);
  std::vector<float> x(size_t(64 * spec.k), 1.0f);
  const float sentinel = 12345.0f;
  for (const std::string &kernel :
       {gemvKernelName(spec, 1), tiledKernelName(spec)}) {
    auto sym = engine->lookup(kernel);
    ASSERT_TRUE(bool(sym)) << kernel;
    auto fn = reinterpret_cast<KernelFn>(*sym);
    bool tiled = kernel == tiledKernelName(spec);
    // GEMV: 8 rows per block, 128 threads, 32 partials per output; tiled:
    // one 64-row tile of blocks (run here one thread after the other: no
    // thread reaches a barrier when m = 0).
    std::vector<float> y(size_t(64 * spec.n * 32), sentinel);
    std::vector<float> xs(32 * 68), ws(32 * 68);
    int32_t blocks = int32_t(tiled ? (spec.n + 63) / 64 : (spec.n + 7) / 8);
    for (int32_t b = 0; b < blocks; ++b)
      for (int32_t t = 0; t < (tiled ? 256 : 128); ++t)
        fn(w.data(), x.data(), y.data(), /*m=*/0, t, b, 0, xs.data(),
           ws.data());
    for (float v : y)
      ASSERT_EQ(v, sentinel) << kernel << " wrote with m = 0";
  }
}

TEST(QMatmulElemType, IsDTypeFloats) {
  for (loom::DType t : loom::kAllDTypes) {
    ElemType e;
    EXPECT_EQ(parseElemType(loom::dtypeName(t), e), isKernelElemType(t))
        << loom::dtypeName(t);
    if (isKernelElemType(t)) {
      EXPECT_EQ(e, t);
      EXPECT_STREQ(elemTypeName(e), loom::dtypeName(t));
    }
  }
  QMatmulSpec s = ggufSpec(loom::quant::Format::Q4_0, 64, 64, loom::DType::I8);
  EXPECT_NE(validate(s).find("f32, f16 or bf16 (got i8"), std::string::npos)
      << validate(s);
}

class QMatmulEmulation : public testing::TestWithParam<Case> {};

TEST_P(QMatmulEmulation, MatchesReference) {
  KernelOptions opts;
  opts.maxGemvBatch = 3;
  checkAgainstReference(GetParam(), opts, {1, 3, 9, 70});
}

// A run-time M (a dynamic batch in the whole-program lowering,
// loom-gpu-qmatmul-launches) takes the tiled kernel at every M, the GEMVs'
// batches included: partial tiles of 1, 2 and 5 rows.
TEST_P(QMatmulEmulation, TiledAtSmallBatches) {
  KernelOptions opts;
  opts.gemv = false;
  opts.maxGemvBatch = 0;
  checkAgainstReference(GetParam(), opts, {1, 2, 5});
}

// Every format and mode; K with fewer chunks than a warp, a partial last
// pass and an unrolled pass; N not a multiple of 8 or 64.
INSTANTIATE_TEST_SUITE_P(
    Formats, QMatmulEmulation,
    testing::Values(Case{"q4_0", 32, "zero_point", "f16", "f32", 20, 128},
                    Case{"q4_1", 32, "min", "f16", "f16", 17, 1056},
                    Case{"q8_0", 32, "symmetric", "f16", "f32", 9, 2048},
                    Case{"int4", 128, "symmetric", "f16", "f16", 12, 1024},
                    Case{"int4", 64, "min", "bf16", "f32", 10, 320},
                    Case{"int4", 32, "zero_point", "f16", "f32", 9, 96},
                    Case{"int8", 32, "symmetric", "f32", "f16", 9, 4160},
                    Case{"int8", 128, "min", "f16", "f32", 8, 384}),
    [](const testing::TestParamInfo<Case> &i) { return name(i.param); });

// The 4-bit GEMV kernels, both dequantizations (GemvDequant), at batches 1, 3
// and 8: every 4-bit format, mode and scale type, blocks 32/64/128, f32 and
// f16 activations (f16x2 products with Packed), partial and full passes.
struct Gemv4Case {
  Case c;
  GemvDequant dequant;
};

std::string name(const Gemv4Case &g) {
  return name(g.c) + (g.dequant == GemvDequant::Packed ? "_packed" : "_scalar");
}

void PrintTo(const Gemv4Case &g, std::ostream *os) { *os << name(g); }

class QMatmulGemv4 : public testing::TestWithParam<Gemv4Case> {};

TEST_P(QMatmulGemv4, MatchesReference) {
  KernelOptions opts;
  opts.tiled = false;
  opts.gemvDequant = GetParam().dequant;
  checkAgainstReference(GetParam().c, opts, {1, 3, 8});
}

std::vector<Gemv4Case> gemv4Cases() {
  const Case base[] = {{"q4_0", 32, "zero_point", "f16", "", 20, 1056},
                       {"q4_1", 32, "min", "f16", "", 9, 2048},
                       {"int4", 128, "symmetric", "f16", "", 12, 1024},
                       {"int4", 64, "symmetric", "bf16", "", 9, 320},
                       {"int4", 32, "symmetric", "f32", "", 8, 96},
                       {"int4", 64, "min", "f16", "", 10, 4160},
                       {"int4", 32, "min", "bf16", "", 9, 1024},
                       {"int4", 128, "min", "f32", "", 11, 384},
                       {"int4", 32, "zero_point", "f16", "", 9, 128},
                       {"int4", 128, "zero_point", "bf16", "", 17, 2048},
                       {"int4", 64, "zero_point", "f32", "", 9, 576}};
  std::vector<Gemv4Case> cases;
  for (GemvDequant d : {GemvDequant::Packed, GemvDequant::Scalar})
    for (const char *act : {"f32", "f16"})
      for (Case c : base) {
        c.act = act;
        cases.push_back({c, d});
      }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Formats, QMatmulGemv4, testing::ValuesIn(gemv4Cases()),
                         [](const testing::TestParamInfo<Gemv4Case> &i) {
                           return name(i.param);
                         });

} // namespace
