//===- loom-gpu-kernels.cpp - generate and compile qmatmul GPU kernels ----===//
//
// Generates the qmatmul kernels either for the loom.qmatmul ops of a module
// or for one spec given on the command line, and writes them as MLIR (the
// gpu.module), PTX or cubins:
//
//   loom-gpu-kernels model.mlir --emit=mlir
//   loom-gpu-kernels --format=q4_0 --n=4096 --k=4096 --emit=ptx --chip=sm_80
//   loom-gpu-kernels --format=int4 --block=128 --mode=symmetric --act=f16 \
//       --n=4096 --k=11008 --emit=cubin --chip=sm_80,sm_90 -o out/
//   loom-gpu-kernels --format=q8_0 --n=64 --k=64 --list
//
//===----------------------------------------------------------------------===//

#include "lib/Target/GpuTarget/GpuTarget.h"

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace loom::gpu;
namespace cl = llvm::cl;

static cl::opt<std::string> input(cl::Positional, cl::init(""),
                                  cl::desc("[module with loom.qmatmul ops]"));
static cl::opt<std::string> fmt("format", cl::init(""),
                                cl::desc("q4_0, q4_1, q8_0, int4 or int8"));
static cl::opt<int64_t> nOpt("n", cl::init(0), cl::desc("N (weight rows)"));
static cl::opt<int64_t> kOpt("k", cl::init(0), cl::desc("K (weight columns)"));
static cl::opt<int64_t> blockOpt("block", cl::init(32),
                                 cl::desc("int4/int8 block: 32, 64, 128"));
static cl::opt<std::string> modeOpt("mode", cl::init("symmetric"),
                                    cl::desc("int4/int8: symmetric, min, "
                                             "zero_point"));
static cl::opt<std::string> scaleOpt("scale", cl::init("f16"),
                                     cl::desc("int4/int8 scale: f16, bf16, "
                                              "f32"));
static cl::opt<std::string> actOpt("act", cl::init("f32"),
                                   cl::desc("activation type: f32 or f16"));
static cl::opt<std::string> gemvDequantOpt(
    "gemv-dequant", cl::init("packed"),
    cl::desc("4-bit GEMV code conversion: packed (two codes per lop3, f16x2 "
             "products with f16 activations) or scalar (the first "
             "generator's, for A/B runs); one spec only"));
static cl::opt<std::string> emit("emit", cl::init("mlir"),
                                 cl::desc("mlir, ptx, cubin or fatbin"));
static cl::list<std::string> chips("chip", cl::CommaSeparated,
                                   cl::desc("sm_80,sm_90 (default sm_90)"));
static cl::opt<std::string> output("o", cl::init("-"),
                                   cl::desc("output file, or a directory for "
                                            "cubins of several chips"));
static cl::opt<bool> list("list", cl::init(false),
                          cl::desc("print kernel names and plane sizes as "
                                   "JSON"));

static int fail(const std::string &msg) {
  llvm::errs() << "loom-gpu-kernels: " << msg << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  registerGpuTargetPasses();
  cl::ParseCommandLineOptions(argc, argv, "Loom qmatmul GPU kernels\n");

  DialectRegistry registry;
  registerGpuTargetDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  // The module: the user's (kernels for its qmatmul ops) or an empty one.
  OwningOpRef<ModuleOp> module;
  std::vector<QMatmulSpec> specs;
  if (!input.empty()) {
    if (gemvDequantOpt.getNumOccurrences())
      return fail("--gemv-dequant applies to one spec (--format=...), not "
                  "to a module's qmatmuls");
    llvm::SourceMgr sm;
    std::string err;
    auto file = openInputFile(input, &err);
    if (!file)
      return fail(err);
    sm.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    SourceMgrDiagnosticHandler diag(sm, &ctx);
    module = parseSourceFile<ModuleOp>(sm, &ctx);
    if (!module)
      return 1;
    PassManager pm(&ctx);
    pm.addPass(createBuildQMatmulKernelsPass());
    if (failed(pm.run(*module)))
      return 1;
    module->walk([&](loom::QMatmulOp op) {
      std::string why;
      specs.push_back(*specFromQMatmul(op, &why));
    });
  } else {
    QMatmulSpec s;
    std::optional<loom::quant::Format> format = loom::quant::parseFormat(fmt);
    if (!format)
      return fail("--format='" + fmt +
                  "' is not one of q4_0, q4_1, q8_0, int4, int8");
    s.format = *format;
    ElemType act;
    if (!parseElemType(actOpt, act))
      return fail("--act='" + actOpt + "': expected f32 or f16");
    if (loom::quant::isGgufFormat(s.format)) {
      s = ggufSpec(s.format, nOpt, kOpt, act);
    } else {
      s.block = blockOpt;
      s.n = nOpt;
      s.k = kOpt;
      s.act = act;
      std::optional<loom::quant::Mode> mode = loom::quant::parseMode(modeOpt);
      if (!mode)
        return fail("--mode='" + modeOpt +
                    "': expected symmetric, min or zero_point");
      s.mode = *mode;
      if (!parseElemType(scaleOpt, s.scale))
        return fail("--scale='" + scaleOpt + "': expected f16, bf16 or f32");
    }
    std::string err = validate(s);
    if (!err.empty())
      return fail(err);
    KernelOptions kernelOpts;
    if (!parseGemvDequant(gemvDequantOpt, kernelOpts.gemvDequant))
      return fail("--gemv-dequant='" + gemvDequantOpt +
                  "': expected packed or scalar");
    specs.push_back(s);
    module = ModuleOp::create(UnknownLoc::get(&ctx));
    if (failed(appendQMatmulKernels(*module, specs, kQMatmulModuleName,
                                    kernelOpts)))
      return 1;
  }

  std::string err;
  auto out = openOutputFile(output, &err);
  if (list) {
    // One object per spec: what a host program needs to allocate and
    // launch (docs/GPU.md).
    if (!out)
      return fail(err);
    llvm::raw_ostream &os = out->os();
    os << "[\n";
    for (size_t i = 0; i < specs.size(); ++i) {
      const QMatmulSpec &s = specs[i];
      os << "  {\"base\": \"" << kernelBaseName(s) << "\", \"format\": \""
         << loom::quant::formatName(s.format) << "\", \"block\": " << s.block
         << ", \"mode\": \"" << loom::quant::modeName(s.mode)
         << "\", \"scale\": \"" << elemTypeName(s.scale) << "\", \"act\": \""
         << elemTypeName(s.act) << "\", \"n\": " << s.n << ", \"k\": " << s.k
         << ", \"weight_bytes\": " << weightBytes(s) << "}"
         << (i + 1 < specs.size() ? "," : "") << "\n";
    }
    os << "]\n";
    out->keep();
    return 0;
  }
  if (emit == "mlir") {
    if (!out)
      return fail(err);
    module->print(out->os());
    out->keep();
    return 0;
  }

  std::string format = emit == "ptx"      ? "isa"
                       : emit == "cubin"  ? "bin"
                       : emit == "fatbin" ? "fatbin"
                                          : "";
  if (format.empty())
    return fail("--emit='" + emit + "': expected mlir, ptx, cubin or fatbin");
  std::vector<std::string> chipList(chips.begin(), chips.end());
  if (chipList.empty())
    chipList.push_back("sm_90");
  bool toDir = llvm::sys::fs::is_directory(output.getValue());
  if (!input.empty() && format == "bin" && toDir) {
    // The path `loomc --target=cuda` takes: one cubin per chip for every
    // qmatmul of the module, named after the gpu.module.
    auto written = emitQMatmulCubins(*module, chipList, output, &err);
    if (!written)
      return fail(err);
    for (const std::string &path : *written)
      llvm::outs() << path << "\n";
    return 0;
  }
  if (format != "isa" && chipList.size() > 1 && !toDir)
    return fail("-o must be an existing directory for binaries of several "
                "chips");
  for (const std::string &chip : chipList) {
    GpuCompileOptions opts;
    opts.chip = chip;
    opts.format = format;
    auto objs = compileGpuModules(*module, opts, &err);
    if (!objs)
      return fail(err);
    for (auto &[name, bytes] : *objs) {
      if (toDir) {
        llvm::SmallString<256> path(output.getValue());
        // One spec: files named after its kernels' base name.
        std::string stem = input.empty() ? kernelBaseName(specs.front()) : name;
        llvm::sys::path::append(
            path, stem + "." + chip + "." +
                      (emit == "ptx" ? std::string("ptx") : emit.getValue()));
        std::string e;
        auto f = openOutputFile(path, &e);
        if (!f)
          return fail(e);
        f->os() << bytes;
        f->keep();
        continue;
      }
      if (!out)
        return fail(err);
      out->os() << bytes;
    }
  }
  if (!toDir)
    out->keep();
  return 0;
}
