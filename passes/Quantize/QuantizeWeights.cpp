//===- QuantizeWeights.cpp - f32/f16/bf16 weights to int4/int8 blocks -----===//
//
// The quantize phase (docs/QUANTIZE.md). Reads each float matmul weight from
// its file (memory-mapped through the weight store), quantizes it with
// lib/Quant, appends the blocks to one output file (written to a temporary
// name and renamed when complete) and rewrites the matmuls into
// loom.qmatmul on a !loom.qtensor weight stored in that file.
//
//===----------------------------------------------------------------------===//

#include "passes/Quantize/Passes.h"

#include "dialects/Loom/IR/LoomEnums.h"
#include "loom/Support/OutputFile.h"

#include "loom/Formats/WeightStore.h"
#include "loom/Quant/Quant.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <tuple>

namespace loom {
#define GEN_PASS_DEF_QUANTIZEWEIGHTSPASS
#include "passes/Quantize/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

constexpr const char *kDefaultSkip =
    "token_embd.weight,output.weight,lm_head.weight,*embed_tokens*,wte*,wpe*";

QuantAttr toAttr(MLIRContext *ctx, const quant::Scheme &s) {
  QuantFormat f = toQuantFormat(s.format);
  QuantMode m = toQuantMode(s.mode); // symmetric or min (checked)
  Builder b(ctx);
  Type scale = s.scale == quant::ScaleType::F16    ? Type(b.getF16Type())
               : s.scale == quant::ScaleType::BF16 ? Type(b.getBF16Type())
                                                   : Type(b.getF32Type());
  return QuantAttr::get(ctx, f, s.block, m, scale);
}

/// A float weight and the matmuls that read it.
struct Candidate {
  WeightOp op;
  SmallVector<MatmulOp> matmuls;
  SmallVector<CastOp> casts;
  bool transposed = false; ///< stored [K, N] (matmul without transpose_b)
};

struct Rule {
  llvm::GlobPattern glob;
  std::optional<quant::Scheme> scheme; ///< none: skip
};

struct QuantizeWeightsPass
    : loom::impl::QuantizeWeightsPassBase<QuantizeWeightsPass> {
  using QuantizeWeightsPassBase::QuantizeWeightsPassBase;

  /// Why `w` is not a candidate, or empty when it is one (fills `c`).
  std::string analyse(WeightOp w, Candidate &c) {
    auto t = dyn_cast<RankedTensorType>(w.getType());
    if (!t)
      return "not a float tensor";
    Type e = t.getElementType();
    if (!(e.isF32() || e.isF16() || e.isBF16()))
      return "element type is not f32, f16 or bf16";
    if (t.getRank() != 2)
      return "not a rank-2 matrix";
    c.op = w;
    std::optional<bool> transposed;
    auto useAsRhs = [&](OpOperand &use) -> std::string {
      auto mm = dyn_cast<MatmulOp>(use.getOwner());
      if (!mm || use.getOperandNumber() != 1)
        return "used by " + use.getOwner()->getName().getStringRef().str() +
               " (not as a matmul weight)";
      if (mm.getTransposeA() ||
          !mm.getLhs().getType().getElementType().isF32() ||
          !mm.getResult().getType().getElementType().isF32())
        return "matmul is transposed on the left or not f32";
      bool tr = !mm.getTransposeB();
      if (transposed && *transposed != tr)
        return "used both as [N, K] and as [K, N]";
      transposed = tr;
      c.matmuls.push_back(mm);
      return {};
    };
    for (OpOperand &use : w.getResult().getUses()) {
      if (auto cast = dyn_cast<CastOp>(use.getOwner())) {
        if (!cast.getResult().getType().getElementType().isF32())
          return "cast to a type other than f32";
        c.casts.push_back(cast);
        for (OpOperand &u2 : cast.getResult().getUses())
          if (std::string why = useAsRhs(u2); !why.empty())
            return why;
        continue;
      }
      if (std::string why = useAsRhs(use); !why.empty())
        return why;
    }
    if (c.matmuls.empty())
      return "unused";
    c.transposed = *transposed;
    return {};
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto fail = [&](const Twine &msg) {
      module.emitError() << "quantize: " << msg;
      signalPassFailure();
    };

    // The option spells the portable kinds with a dash (int8-portable).
    std::optional<QuantActivations> act;
    if (activations != "auto") {
      act = parseQuantActivations(activations);
      if (!act)
        return fail("activations=" + activations +
                    ": expected auto, f32, int8 or int8x3 (or "
                    "int8-portable, int8x3-portable)");
    }
    // The generated kernels read this to quantize activations per block
    // (passes/Lowering/QuantKernels.cpp); GGUF qmatmuls are marked too.
    auto markActivations = [&] {
      if (act)
        module.walk([&](QMatmulOp op) {
          op.setQuantActivationsAttr(QuantActivationsAttr::get(ctx, *act));
        });
    };
    if (scheme == "none") {
      markActivations();
      return;
    }
    auto dflt = quant::parseScheme(scheme);
    if (!dflt)
      return fail(dflt.error().message);
    if (dflt->isGguf())
      return fail("scheme " + scheme +
                  ": GGUF blocks are consumed as the file stores them, "
                  "never produced; quantize to int4 or int8");
    if (dflt->mode == quant::Mode::ZeroPoint)
      return fail("scheme " + scheme +
                  ": mode zero_point is not produced; use sym or min");
    std::vector<Rule> ruleList;
    for (StringRef r : llvm::split(StringRef(rules), ';')) {
      r = r.trim();
      if (r.empty())
        continue;
      auto [g, s] = r.split('=');
      if (s.empty())
        return fail("rule '" + r + "': expected GLOB=SCHEME or GLOB=skip");
      auto glob = llvm::GlobPattern::create(g.trim());
      if (!glob)
        return fail("rule '" + r + "': " + llvm::toString(glob.takeError()));
      Rule rule{*glob, std::nullopt};
      if (s.trim() != "skip") {
        auto sc = quant::parseScheme(s.trim().str());
        if (!sc)
          return fail("rule '" + r + "': " + sc.error().message);
        if (sc->isGguf() || sc->mode == quant::Mode::ZeroPoint)
          return fail("rule '" + r +
                      "': only int4/int8 with sym or min "
                      "are produced");
        rule.scheme = *sc;
      }
      ruleList.push_back(std::move(rule));
    }
    std::vector<llvm::GlobPattern> skips;
    std::string skipText = skip == "default" ? std::string(kDefaultSkip)
                           : skip == "none"  ? std::string()
                                             : std::string(skip);
    for (StringRef g : llvm::split(StringRef(skipText), ',')) {
      if (g.trim().empty())
        continue;
      auto glob = llvm::GlobPattern::create(g.trim());
      if (!glob)
        return fail("skip '" + g + "': " + llvm::toString(glob.takeError()));
      skips.push_back(*glob);
    }
    auto schemeFor = [&](StringRef name) -> std::optional<quant::Scheme> {
      for (const Rule &r : ruleList)
        if (r.glob.match(name))
          return r.scheme;
      for (const llvm::GlobPattern &g : skips)
        if (g.match(name))
          return std::nullopt;
      return *dflt;
    };

    // Candidates and what is kept, in program order.
    llvm::json::Array kept;
    llvm::StringSet<> keptNames; // entry points share weights: list once
    SmallVector<std::pair<Candidate, quant::Scheme>> work;
    module.walk([&](WeightOp w) {
      if (auto q = dyn_cast<QTensorType>(w.getType())) {
        if (!keptNames.insert(w.getName()).second)
          return;
        kept.push_back(llvm::json::Object{
            {"name", w.getName()},
            {"reason",
             "already quantized (" +
                 std::string(stringifyQuantFormat(q.getQuant().getFormat())) +
                 "): kept as stored, never re-quantised"}});
        return;
      }
      Candidate c;
      std::string why = analyse(w, c);
      std::optional<quant::Scheme> s;
      if (why.empty()) {
        s = schemeFor(w.getName());
        if (!s)
          why = "skipped by name";
      }
      if (!why.empty()) {
        if (!keptNames.insert(w.getName()).second)
          return;
        kept.push_back(
            llvm::json::Object{{"name", w.getName()}, {"reason", why}});
        return;
      }
      work.push_back({std::move(c), *s});
    });
    // A weight without storage (planned from a config alone) gets the type
    // quantizing it would give, and stays without storage: nothing is read
    // or written for it.
    SmallVector<std::pair<Candidate, quant::Scheme>> typeOnly;
    llvm::erase_if(work, [&](auto &item) {
      if (item.first.op.getSource())
        return false;
      typeOnly.push_back(std::move(item));
      return true;
    });
    llvm::json::Array planned;
    for (auto &[c, s] : typeOnly) {
      auto t = cast<RankedTensorType>(c.op.getType());
      int64_t rows = t.getDimSize(0), cols = t.getDimSize(1);
      int64_t n = c.transposed ? cols : rows, k = c.transposed ? rows : cols;
      std::string what = ("tensor '" + c.op.getName() + "' [" + Twine(n) +
                          ", K=" + Twine(k) + "]")
                             .str();
      if (auto st = quant::checkShape(s, k, what); !st)
        return fail(st.error().message);
      planned.push_back(llvm::json::Object{
          {"name", c.op.getName()},
          {"shape", llvm::json::Array{n, k}},
          {"transposed", c.transposed},
          {"scheme", quant::schemeName(s)},
          {"nbytes", n * s.rowBytes(k)},
          {"storage", "none (planned from a config alone)"}});
      rewrite(c, QTensorType::get(ctx, {n, k}, toAttr(ctx, s)), ExternAttr());
    }
    if (work.empty()) {
      writeReport(kept, std::move(planned), "");
      markActivations();
      return;
    }
    if (output.empty())
      return fail("the quantize pass needs output=<file> for the quantized "
                  "weights");

    SmallString<256> outPath(output);
    llvm::sys::fs::make_absolute(outPath);
    llvm::sys::path::remove_dots(outPath, true);
    std::string tmpPath = (outPath + ".tmp").str();
    std::error_code ec;
    llvm::raw_fd_ostream os(tmpPath, ec);
    if (ec)
      return fail("cannot write '" + tmpPath + "': " + ec.message());
    bool ok = false;
    auto cleanup = llvm::make_scope_exit([&] {
      if (!ok)
        llvm::sys::fs::remove(tmpPath);
    });

    fmt::WeightStore store;
    // One quantized copy per (file, offset, type, shape, layout, scheme):
    // entry points that share a weight share its blocks.
    using Key = std::tuple<std::string, int64_t, std::string, int64_t, int64_t,
                           bool, std::string>;
    std::map<Key, std::pair<int64_t, int64_t>> done; // -> offset, bytes
    llvm::json::Array tensors;
    int64_t offset = 0, inBytes = 0;
    for (auto &[c, s] : work) {
      WeightOp w = c.op;
      auto t = cast<RankedTensorType>(w.getType());
      int64_t rows = t.getDimSize(0), cols = t.getDimSize(1);
      int64_t n = c.transposed ? cols : rows, k = c.transposed ? rows : cols;
      std::string what = ("tensor '" + w.getName() + "' [" + Twine(n) +
                          ", K=" + Twine(k) + "]")
                             .str();
      if (auto st = quant::checkShape(s, k, what); !st)
        return fail(st.error().message);
      ExternAttr src = *w.getSource();
      SmallString<256> path(src.getFile().getValue());
      if (!llvm::sys::path::is_absolute(path) && !baseDir.empty()) {
        SmallString<256> base(baseDir);
        llvm::sys::path::append(base, path);
        path = base;
      }
      Type e = t.getElementType();
      fmt::ElementType et = e.isF32()   ? fmt::ElementType::F32
                            : e.isF16() ? fmt::ElementType::F16
                                        : fmt::ElementType::BF16;
      int64_t eltBytes = e.isF32() ? 4 : 2;
      Key key{path.str().str(),
              src.getOffset(),
              std::string(fmt::elementTypeName(et)),
              rows,
              cols,
              c.transposed,
              quant::schemeName(s)};
      int64_t qbytes = n * s.rowBytes(k);
      auto it = done.find(key);
      if (it == done.end()) {
        fmt::TensorRef ref;
        ref.name = w.getName().str();
        ref.file = path.str().str();
        ref.offset = src.getOffset();
        ref.nbytes = rows * cols * eltBytes;
        ref.format = et;
        ref.shape = {rows, cols};
        auto bytes = store.bytes(ref);
        if (!bytes)
          return fail(what + ": " + bytes.error().message);
        std::vector<float> x(rows * cols);
        if (auto st = fmt::dequantizeToF32(et, *bytes, x); !st)
          return fail(what + ": " + st.error().message);
        if (c.transposed) {
          std::vector<float> tx(rows * cols);
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j)
              tx[j * rows + i] = x[i * cols + j];
          x.swap(tx);
        }
        std::vector<std::byte> q(qbytes);
        if (auto st = quant::quantize(s, x.data(), n, k, k, q); !st)
          return fail(what + ": " + st.error().message);
        std::vector<float> xq(n * k);
        if (auto st = quant::dequantize(s, q, n, k, xq.data()); !st)
          return fail(what + ": " + st.error().message);
        quant::ErrorStats es =
            quant::measureError(x.data(), xq.data(), n, k, k, s.block);
        os.write(reinterpret_cast<const char *>(q.data()), q.size());
        it = done.emplace(key, std::make_pair(offset, qbytes)).first;
        inBytes += rows * cols * eltBytes;
        tensors.push_back(llvm::json::Object{
            {"name", w.getName()},
            {"shape", llvm::json::Array{n, k}},
            {"transposed", c.transposed},
            {"source_dtype", std::string(fmt::elementTypeName(et))},
            {"scheme", quant::schemeName(s)},
            {"offset", offset},
            {"nbytes", qbytes},
            {"source_nbytes", rows * cols * eltBytes},
            {"rmse", es.rmse},
            {"max_abs_error", es.maxAbs},
            {"rms", es.rms},
            {"relative_rmse", es.relRmse},
            {"worst_block",
             llvm::json::Object{{"row", es.worstRow},
                                {"block", es.worstBlock},
                                {"rmse", es.worstBlockRmse},
                                {"max_abs_error", es.worstBlockMaxAbs}}}});
        if (verbose)
          llvm::errs() << llvm::formatv(
              "quantize: {0,-40} {1}x{2} {3,-16} rmse {4:e3} max {5:e3} "
              "rel {6:e3} worst block (row {7}, block {8})\n",
              w.getName(), n, k, quant::schemeName(s), es.rmse, es.maxAbs,
              es.relRmse, es.worstRow, es.worstBlock);
        offset += qbytes;
        // 64-byte aligned tensors.
        int64_t pad = (64 - offset % 64) % 64;
        for (int64_t i = 0; i < pad; ++i)
          os << '\0';
        offset += pad;
      }
      rewrite(c, QTensorType::get(ctx, {n, k}, toAttr(ctx, s)),
              ExternAttr::get(ctx, StringAttr::get(ctx, outPath),
                              it->second.first));
    }
    if (std::string msg = loom::closeChecked(os, tmpPath); !msg.empty())
      return fail(msg);
    if (std::error_code rc = llvm::sys::fs::rename(tmpPath, outPath))
      return fail("cannot rename '" + tmpPath + "' to '" + outPath +
                  "': " + rc.message());
    ok = true;
    markActivations();
    for (llvm::json::Value &p : planned)
      tensors.push_back(std::move(p));
    llvm::json::Object totals{{"tensors", int64_t(tensors.size())},
                              {"source_bytes", inBytes},
                              {"quantized_bytes", offset}};
    writeReport(kept, std::move(tensors),
                outputName.empty() ? outPath.str() : StringRef(outputName),
                std::move(totals));
  }

  /// The quantized weight `qtype` from `source` (none: without storage),
  /// and qmatmul for every matmul of `c`.
  static void rewrite(Candidate &c, QTensorType qtype, ExternAttr source) {
    WeightOp w = c.op;
    OpBuilder b(w);
    auto nw = WeightOp::create(b, w.getLoc(), qtype, w.getNameAttr(), source);
    nw->setDiscardableAttrs(w->getDiscardableAttrDictionary());
    for (MatmulOp mm : c.matmuls) {
      b.setInsertionPoint(mm);
      auto qm = QMatmulOp::create(b, mm.getLoc(), mm.getResult().getType(),
                                  mm.getLhs(), nw.getResult(),
                                  /*quant_activations=*/nullptr);
      qm->setDiscardableAttrs(mm->getDiscardableAttrDictionary());
      mm.getResult().replaceAllUsesWith(qm.getResult());
      mm.erase();
    }
    for (CastOp cast : c.casts)
      cast.erase();
    w.erase();
  }

  void writeReport(llvm::json::Array kept, llvm::json::Array tensors,
                   StringRef file, llvm::json::Object totals = {}) {
    if (report.empty())
      return;
    llvm::json::Object doc{{"scheme", scheme},
                           {"file", file},
                           {"tensors", std::move(tensors)},
                           {"kept", std::move(kept)},
                           {"totals", std::move(totals)}};
    llvm::json::Value value(std::move(doc));
    if (std::string msg =
            loom::writeFileAtomically(report,
                                      [&](raw_ostream &os) {
                                        os << llvm::formatv("{0:2}", value)
                                           << "\n";
                                      });
        !msg.empty()) {
      getOperation().emitError() << "quantize: " << msg;
      signalPassFailure();
    }
  }
};

} // namespace
