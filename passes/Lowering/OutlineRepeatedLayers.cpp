//===- OutlineRepeatedLayers.cpp - one function per distinct layer -------===//
//
// A model's layers are unrolled in its entry points: SmolLM2 has 30 copies
// of one layer in `forward` and 30 of another in `decode`, and everything
// below (bufferization, LLVM O3) pays for each copy. This pass finds runs of
// consecutive, structurally identical op ranges in an entry point and
// replaces each repeat by a call of one private function, so the compiled
// program holds one copy of the code per distinct layer.
//
// Detection is structural, not by name: two ranges are repeats when their
// ops match one for one (name, attributes and properties, operand and
// result types, and so every constant value, shape and quantization) and
// their dataflow matches (an operand defined inside the range comes from
// the same position in both; values from outside the range appear in the
// same pattern; constants from outside must be the same constant; weight
// arguments must carry the same `interleave` layout). Values from outside
// become arguments, values used after the range become results.
//
//===----------------------------------------------------------------------===//

#include "passes/Lowering/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "loom-outline-repeated-layers"

namespace loom {
#define GEN_PASS_DEF_OUTLINEREPEATEDLAYERSPASS
#include "passes/Lowering/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// How one operand of a range is produced, relative to the range: the same
/// code in two ranges means the same dataflow.
struct OperandCode {
  enum Kind { Internal, External, Constant, Context } kind;
  /// Internal: op position and result number; External: the index of the
  /// value among the range's external values in order of first use.
  int64_t a = 0, b = 0;
  /// Constant: the constant op (compared by equivalence); External: the
  /// argument attribute the lowering reads (a weight's layout), or null.
  Operation *constant = nullptr;
  Attribute layout;
};

/// A run: `copies` ranges of `period` ops from `start` in the op list.
struct Run {
  size_t start = 0, period = 0, copies = 0;
  size_t coverage() const { return period * copies; }
};

/// The `interleave` layout recorded in a weight argument's `loom.weight`
/// dictionary (the lowering reads the bytes differently with it), or null.
Attribute weightLayout(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return {};
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!fn)
    return {};
  auto desc = fn.getArgAttrOfType<WeightAttr>(arg.getArgNumber(),
                                              LoomDialect::kWeightAttrName);
  return desc ? desc.getInterleave() : Attribute();
}

bool isConstant(Operation *op) {
  return op && op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->hasTrait<OpTrait::ConstantLike>();
}

class EntryOutliner {
public:
  EntryOutliner(func::FuncOp fn, unsigned minOps,
                SmallVectorImpl<func::FuncOp> &layers, unsigned &counter)
      : fn(fn), minOps(std::max(1u, minOps)), layers(layers), counter(counter) {
  }

  LogicalResult run() {
    hoistConstants();
    while (true) {
      collectOps();
      std::optional<Run> best = findRun();
      if (!best)
        return success();
      if (failed(outline(*best)))
        return failure();
    }
  }

private:
  func::FuncOp fn;
  unsigned minOps;
  SmallVectorImpl<func::FuncOp> &layers;
  unsigned &counter;
  /// The body's ops in order (no constants, no terminator), their
  /// structural hashes (unique for barriers) and positions.
  SmallVector<Operation *> ops;
  SmallVector<uint64_t> hashes;
  llvm::DenseMap<Operation *, size_t> position;

  Block &body() { return fn.getBody().front(); }
  Value context() { return fn.getArgument(0); }

  /// Constants move to the top of the body: they then are outside every
  /// range, compared by value and rematerialised in each layer function,
  /// so CSE having merged equal constants of two layers does not make the
  /// layers differ.
  void hoistConstants() {
    Block &b = body();
    Operation *insertAt = nullptr;
    for (Operation &op : llvm::make_early_inc_range(b.without_terminator())) {
      if (!isConstant(&op))
        continue;
      if (insertAt)
        op.moveAfter(insertAt);
      else
        op.moveBefore(&b, b.begin());
      insertAt = &op;
    }
  }

  void collectOps() {
    ops.clear();
    hashes.clear();
    position.clear();
    uint64_t barrier = 0;
    for (Operation &op : body().without_terminator()) {
      if (isConstant(&op))
        continue;
      position[&op] = ops.size();
      ops.push_back(&op);
      // Ops with regions (their bodies may capture values) and calls of
      // layers already outlined never take part in a range.
      if (op.getNumRegions() != 0 || isa<func::CallOp>(op)) {
        hashes.push_back(~barrier++);
        continue;
      }
      llvm::hash_code h = OperationEquivalence::computeHash(
          &op, OperationEquivalence::ignoreHashValue,
          OperationEquivalence::ignoreHashValue,
          OperationEquivalence::IgnoreLocations);
      for (Type t : op.getOperandTypes())
        h = llvm::hash_combine(h, t);
      // Keep barrier hashes (counting down from ~0) out of reach.
      hashes.push_back(static_cast<uint64_t>(h) >> 1);
    }
  }

  bool isBarrier(size_t i) const { return hashes[i] >> 63; }

  /// The operand codes of the range [start, start + period), one list per
  /// op, or failure when the range cannot be outlined.
  FailureOr<SmallVector<SmallVector<OperandCode>>> codesOf(size_t start,
                                                           size_t period) {
    SmallVector<SmallVector<OperandCode>> codes;
    llvm::DenseMap<Value, int64_t> externals;
    for (size_t j = 0; j < period; ++j) {
      if (isBarrier(start + j))
        return failure();
      Operation *op = ops[start + j];
      SmallVector<OperandCode> &list = codes.emplace_back();
      for (Value v : op->getOperands()) {
        OperandCode code{OperandCode::External};
        Operation *def = v.getDefiningOp();
        if (def && position.count(def) && position[def] >= start &&
            position[def] < start + period) {
          code.kind = OperandCode::Internal;
          code.a = position[def] - start;
          code.b = cast<OpResult>(v).getResultNumber();
        } else if (isConstant(def)) {
          code.kind = OperandCode::Constant;
          code.constant = def;
        } else if (v == context()) {
          code.kind = OperandCode::Context;
        } else {
          // A quantized value passes only as a weight argument: the
          // lowering turns the layer's argument into the weight's bytes.
          if (isa<QTensorType>(v.getType()) && !isa<BlockArgument>(v))
            return failure();
          auto [it, inserted] = externals.try_emplace(v, externals.size());
          code.a = it->second;
          code.layout = weightLayout(v);
        }
        list.push_back(code);
      }
    }
    return codes;
  }

  static bool sameCodes(ArrayRef<SmallVector<OperandCode>> x,
                        ArrayRef<SmallVector<OperandCode>> y) {
    for (auto [cx, cy] : llvm::zip_equal(x, y))
      for (auto [p, q] : llvm::zip_equal(cx, cy)) {
        if (p.kind != q.kind || p.a != q.a || p.b != q.b ||
            p.layout != q.layout)
          return false;
        if (p.kind == OperandCode::Constant && p.constant != q.constant &&
            !OperationEquivalence::isEquivalentTo(
                p.constant, q.constant, OperationEquivalence::IgnoreLocations))
          return false;
      }
    return true;
  }

  /// Whether the ops of two ranges match one for one (operands aside).
  bool sameOps(size_t x, size_t y, size_t period) {
    for (size_t j = 0; j < period; ++j) {
      Operation *a = ops[x + j], *b = ops[y + j];
      if (hashes[x + j] != hashes[y + j] ||
          a->getOperandTypes() != b->getOperandTypes() ||
          !OperationEquivalence::isEquivalentTo(
              a, b, OperationEquivalence::ignoreValueEquivalence, nullptr,
              OperationEquivalence::IgnoreLocations))
        return false;
    }
    return true;
  }

  /// The longest verified run from `from` within [from, end): the ranges
  /// that repeat the one at `from` back to back.
  Run verifyFrom(size_t from, size_t period, size_t end) {
    Run run{from, period, 0};
    auto first = codesOf(from, period);
    if (failed(first))
      return run;
    run.copies = 1;
    for (size_t s = from + period; s + period <= end; s += period) {
      if (!sameOps(from, s, period))
        break;
      auto next = codesOf(s, period);
      if (failed(next) || !sameCodes(*first, *next))
        break;
      ++run.copies;
    }
    return run;
  }

  /// The run covering most ops, then with the shortest period, then with
  /// the narrowest interface (arguments and results: a layer's boundary is
  /// where the fewest values cross, e.g. the residual alone, not one op
  /// further), then the first; of at least two ranges of at least minOps
  /// ops each.
  std::optional<Run> findRun() {
    size_t n = ops.size();
    // Candidates from the hashes: a stretch where op i and op i + p hash
    // alike for L >= p positions holds up to L / p + 1 ranges of p ops.
    struct Candidate {
      size_t period, begin, end, bound;
    };
    SmallVector<Candidate> candidates;
    for (size_t p = minOps; 2 * p <= n; ++p) {
      for (size_t i = 0; i + p < n;) {
        if (hashes[i] != hashes[i + p] || isBarrier(i)) {
          ++i;
          continue;
        }
        size_t j = i;
        while (j + p < n && hashes[j] == hashes[j + p] && !isBarrier(j))
          ++j;
        size_t len = j - i;
        if (len >= p)
          candidates.push_back({p, i, j + p, (len / p + 1) * p});
        i = j;
      }
    }
    llvm::stable_sort(candidates, [](const Candidate &x, const Candidate &y) {
      if (x.bound != y.bound)
        return x.bound > y.bound;
      return x.period < y.period;
    });
    std::optional<Run> best;
    size_t bestWidth = 0;
    auto consider = [&](const Run &r) {
      if (r.copies < 2)
        return;
      if (best && r.coverage() != best->coverage()) {
        if (r.coverage() < best->coverage())
          return;
      } else if (best && r.period != best->period) {
        if (r.period > best->period)
          return;
      } else if (best) {
        size_t width = interfaceWidth(r);
        if (width > bestWidth || (width == bestWidth && r.start > best->start))
          return;
        best = r;
        bestWidth = width;
        return;
      }
      best = r;
      bestWidth = interfaceWidth(r);
    };
    for (const Candidate &c : candidates) {
      // Sorted by bound, then period: no later candidate can win.
      if (best && (c.bound < best->coverage() ||
                   (c.bound == best->coverage() && c.period > best->period)))
        break;
      // Each phase of the period; ranges that stop matching end a run and
      // the next one starts at the range that did not match.
      for (size_t phase = 0; phase < c.period; ++phase)
        for (size_t s = c.begin + phase; s + 2 * c.period <= c.end;) {
          Run r = verifyFrom(s, c.period, c.end);
          consider(r);
          s += std::max<size_t>(r.copies, 1) * c.period;
        }
    }
    return best;
  }

  /// The number of arguments and results of the function of `run`.
  size_t interfaceWidth(const Run &run) {
    return externalsOf(run.start, run.period).size() + escapingOf(run).size();
  }

  /// The values of a range (op position and result number) used after it
  /// in any repeat of `run`: the results of its function.
  SmallVector<std::pair<size_t, unsigned>> escapingOf(const Run &run) {
    SmallVector<std::pair<size_t, unsigned>> escaping;
    size_t p = run.period;
    for (size_t j = 0; j < p; ++j)
      for (unsigned r = 0; r < ops[run.start + j]->getNumResults(); ++r)
        for (size_t c = 0; c < run.copies; ++c) {
          size_t s = run.start + c * p;
          Value v = ops[s + j]->getResult(r);
          if (llvm::any_of(v.getUsers(),
                           [&](Operation *u) { return !inside(u, s, p); })) {
            escaping.emplace_back(j, r);
            break;
          }
        }
    return escaping;
  }

  /// The external values of the range at `start`, in order of first use
  /// (the order of the layer function's arguments after the context).
  SmallVector<Value> externalsOf(size_t start, size_t period) {
    SmallVector<Value> list;
    llvm::DenseSet<Value> seen;
    for (size_t j = 0; j < period; ++j)
      for (Value v : ops[start + j]->getOperands()) {
        Operation *def = v.getDefiningOp();
        bool internal = def && position.count(def) && position[def] >= start &&
                        position[def] < start + period;
        if (internal || isConstant(def) || v == context())
          continue;
        if (seen.insert(v).second)
          list.push_back(v);
      }
    return list;
  }

  /// Whether `user` lies inside the range [start, start + period).
  bool inside(Operation *user, size_t start, size_t period) {
    Operation *top = body().findAncestorOpInBlock(*user);
    auto it = top ? position.find(top) : position.end();
    return it != position.end() && it->second >= start &&
           it->second < start + period;
  }

  LogicalResult outline(const Run &run) {
    MLIRContext *ctx = fn.getContext();
    size_t p = run.period;
    SmallVector<std::pair<size_t, unsigned>> escaping = escapingOf(run);

    // The layer function, built from the first range.
    SmallVector<Value> externals = externalsOf(run.start, p);
    SmallVector<Type> argTypes{context().getType()}, resultTypes;
    for (Value v : externals)
      argTypes.push_back(v.getType());
    for (auto [j, r] : escaping)
      resultTypes.push_back(ops[run.start + j]->getResult(r).getType());
    OpBuilder b(ctx);
    b.setInsertionPoint(fn);
    Location loc = ops[run.start]->getLoc();
    auto layer =
        func::FuncOp::create(b, loc, (fn.getName() + "_layer").str(),
                             FunctionType::get(ctx, argTypes, resultTypes));
    layer.setPrivate();
    layer->setAttr(LoomDialect::kLayerAttrName, UnitAttr::get(ctx));
    // Kept out of line by LLVM: func-to-llvm carries `passthrough` to
    // llvm.func (a `no_inline` unit attribute it drops), and translation
    // makes it the function's `noinline`.
    layer->setAttr("passthrough",
                   ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline")}));
    for (auto [i, v] : llvm::enumerate(externals)) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != &body())
        continue;
      // What the lowering reads of a weight argument, and the input's name
      // when every repeat passes the same input.
      if (auto w =
              fn.getArgAttr(arg.getArgNumber(), LoomDialect::kWeightAttrName))
        layer.setArgAttr(i + 1, LoomDialect::kWeightAttrName, w);
      if (auto name =
              fn.getArgAttr(arg.getArgNumber(), LoomDialect::kNameAttrName))
        if (llvm::all_of(llvm::seq<size_t>(1, run.copies), [&](size_t c) {
              return externalsOf(run.start + c * p, p)[i] == v;
            }))
          layer.setArgAttr(i + 1, LoomDialect::kNameAttrName, name);
    }
    Block *entry = layer.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping map;
    map.map(context(), entry->getArgument(0));
    for (auto [i, v] : llvm::enumerate(externals))
      map.map(v, entry->getArgument(i + 1));
    for (size_t j = 0; j < p; ++j)
      for (Value v : ops[run.start + j]->getOperands())
        if (Operation *def = v.getDefiningOp();
            isConstant(def) && !map.contains(v))
          map.map(v, b.clone(*def)->getResult(0));
    for (size_t j = 0; j < p; ++j)
      b.clone(*ops[run.start + j], map);
    SmallVector<Value> results;
    for (auto [j, r] : escaping)
      results.push_back(map.lookup(ops[run.start + j]->getResult(r)));
    func::ReturnOp::create(b, loc, results);
    layer = dedupe(layer);

    // Each repeat becomes a call. The externals are read at the call, after
    // the previous repeat's results were replaced by its call's.
    for (size_t c = 0; c < run.copies; ++c) {
      size_t s = run.start + c * p;
      SmallVector<Value> args{context()};
      llvm::append_range(args, externalsOf(s, p));
      b.setInsertionPoint(ops[s]);
      auto call = func::CallOp::create(b, ops[s]->getLoc(), layer, args);
      for (auto [k, jr] : llvm::enumerate(escaping))
        ops[s + jr.first]->getResult(jr.second).replaceAllUsesWith(
            call.getResult(k));
      for (size_t j = p; j-- > 0;) {
        Operation *op = ops[s + j];
        if (!op->use_empty()) {
          return op->emitOpError()
                 << "loom-outline-repeated-layers: a value of the outlined "
                    "range is still used outside it (internal error)";
        }
        position.erase(op);
        op->erase();
      }
    }
    LLVM_DEBUG(llvm::dbgs()
               << "outlined " << run.copies << " x " << p << " ops of @"
               << fn.getName() << " into @" << layer.getName() << "\n");
    return success();
  }

  /// The text of a function with its name left out: two layer functions
  /// with the same text are the same layer.
  static std::string keyOf(func::FuncOp f) {
    std::string key;
    llvm::raw_string_ostream os(key);
    OpPrintingFlags flags;
    flags.printGenericOpForm().useLocalScope();
    os << f.getFunctionType();
    for (BlockArgument arg : f.getArguments())
      if (Attribute layout = weightLayout(arg))
        os << " " << arg.getArgNumber() << "=" << layout;
    AsmState state(f, flags);
    f.getBody().front().print(os, state);
    return key;
  }

  /// An existing layer function equal to `layer` (then `layer` is erased),
  /// else `layer` under a fresh name.
  func::FuncOp dedupe(func::FuncOp layer) {
    std::string key = keyOf(layer);
    for (func::FuncOp other : layers)
      if (keyOf(other) == key) {
        layer.erase();
        return other;
      }
    auto module = layer->getParentOfType<ModuleOp>();
    SymbolTable table(module);
    std::string name;
    do
      name = "loom_layer_" + std::to_string(counter++);
    while (table.lookup(name));
    layer.setName(name);
    layers.push_back(layer);
    return layer;
  }
};

struct OutlineRepeatedLayersPass
    : loom::impl::OutlineRepeatedLayersPassBase<OutlineRepeatedLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> entries, layers;
    unsigned counter = 0;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn->hasAttr(LoomDialect::kLayerAttrName))
        layers.push_back(fn);
      // Entry points as loom-prepare-entry-points made them: the context
      // first, one block.
      if (fn.isExternal() || !fn->hasAttr(LoomDialect::kEntryAttrName) ||
          fn.getNumArguments() == 0 ||
          !isa<LLVM::LLVMPointerType>(fn.getArgumentTypes().front()) ||
          !fn.getBody().hasOneBlock())
        continue;
      entries.push_back(fn);
    }
    for (func::FuncOp fn : entries)
      if (failed(EntryOutliner(fn, minOps, layers, counter).run()))
        return signalPassFailure();
  }
};

} // namespace
