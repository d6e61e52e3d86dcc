//===- DynamicDims.cpp - run-time dims as symbols for the planner ---------===//
//
// See DynamicDims.h. Everything here is conservative: a size it cannot
// express (a product of run-time sizes through ops it does not know, a
// division that is not exact) becomes a fresh symbol, and a reshape whose
// two sides do not cut at common points keeps running replicated. The
// relations it uses hold in every valid program (a rule's loop has one
// size; a reshape's result has the sizes it is given), so a rule it builds
// never claims two dims equal that may differ at run time.
//
//===----------------------------------------------------------------------===//

#include "passes/Sharding/DynamicDims.h"

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;

namespace loom {
namespace {

/// Sizes past this are not tracked (no overflow in the products).
constexpr int64_t kMaxCoef = int64_t(1) << 40;

/// ONNX's "to the end" slice limit, as the importer writes it.
constexpr int64_t kToEnd = 2147483647;

std::optional<DimMono> mul(const DimMono &a, const DimMono &b) {
  if (a.coef > kMaxCoef / std::max<int64_t>(b.coef, 1))
    return std::nullopt;
  DimMono m;
  m.coef = a.coef * b.coef;
  m.syms = a.syms;
  for (auto [s, e] : b.syms) {
    auto it = llvm::find_if(m.syms, [&](auto &p) { return p.first == s; });
    if (it != m.syms.end())
      it->second += e;
    else
      m.syms.push_back({s, e});
  }
  llvm::sort(m.syms);
  return m;
}

/// b / a when a divides b exactly (coefficient and every exponent).
std::optional<DimMono> quotient(const DimMono &b, const DimMono &a) {
  if (a.coef <= 0 || b.coef % a.coef)
    return std::nullopt;
  DimMono q;
  q.coef = b.coef / a.coef;
  q.syms = b.syms;
  for (auto [s, e] : a.syms) {
    auto it = llvm::find_if(q.syms, [&](auto &p) { return p.first == s; });
    if (it == q.syms.end() || it->second < e)
      return std::nullopt;
    it->second -= e;
    if (it->second == 0)
      q.syms.erase(it);
  }
  return q;
}

std::optional<int64_t> constIndex(Value v) {
  if (auto cst = v.getDefiningOp<arith::ConstantOp>())
    if (auto i = dyn_cast<IntegerAttr>(cst.getValue()))
      return i.getInt();
  return std::nullopt;
}

} // namespace

int DynamicDims::find(int s) {
  while (parent[s] != s)
    s = parent[s] = parent[parent[s]];
  return s;
}

DimMono DynamicDims::canonical(DimMono m) {
  DimMono out;
  out.coef = m.coef;
  for (auto [s, e] : m.syms) {
    int r = find(s);
    auto it = llvm::find_if(out.syms, [&](auto &p) { return p.first == r; });
    if (it != out.syms.end())
      it->second += e;
    else
      out.syms.push_back({r, e});
  }
  llvm::sort(out.syms);
  return out;
}

DimMono DynamicDims::dimOf(Value v, unsigned d) {
  auto shape = getTensorShape(v.getType());
  if (!shape || d >= shape->size())
    return DimMono{1, {{fresh(), 1}}};
  if (!ShapedType::isDynamic((*shape)[d]))
    return DimMono{(*shape)[d], {}};
  auto [it, inserted] = dims.try_emplace({v, d});
  if (inserted)
    it->second = DimMono{1, {{fresh(), 1}}};
  return canonical(it->second);
}

std::optional<DimMono> DynamicDims::ofIndex(Value idx) {
  if (auto c = constIndex(idx)) {
    if (*c <= 0 || *c > kMaxCoef)
      return std::nullopt;
    return DimMono{*c, {}};
  }
  Operation *def = idx.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto dim = dyn_cast<tensor::DimOp>(def)) {
    auto d = constIndex(dim.getIndex());
    if (!d || *d < 0)
      return std::nullopt;
    return dimOf(dim.getSource(), static_cast<unsigned>(*d));
  }
  if (auto m = dyn_cast<arith::MulIOp>(def)) {
    auto a = ofIndex(m.getLhs()), b = ofIndex(m.getRhs());
    if (!a || !b)
      return std::nullopt;
    return mul(*a, *b);
  }
  if (isa<arith::DivUIOp, arith::DivSIOp>(def)) {
    auto a = ofIndex(def->getOperand(0)), b = ofIndex(def->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    return quotient(*a, *b);
  }
  if (auto c = dyn_cast<arith::IndexCastOp>(def))
    return ofIndex(c.getIn());
  return std::nullopt;
}

void DynamicDims::visit(Operation *op, const ShardingRule *rule) {
  if (!rule)
    return;
  // Per loop, the first dynamic operand dim made of it alone; the others
  // (operands and results) are the same size.
  for (size_t l = 0; l < rule->loops.size(); ++l) {
    if (!ShapedType::isDynamic(rule->loops[l].size))
      continue;
    std::optional<DimMono> size;
    auto single = [&](const TensorLoops &t, unsigned d) {
      return t.dims[d].size() == 1 && t.dims[d].front() == int8_t(l);
    };
    for (auto [i, t] : llvm::enumerate(rule->operands))
      for (unsigned d = 0; d < t.dims.size(); ++d) {
        if (!single(t, d) || i >= op->getNumOperands())
          continue;
        auto shape = getTensorShape(op->getOperand(i).getType());
        if (!shape || d >= shape->size() || !ShapedType::isDynamic((*shape)[d]))
          continue;
        DimMono m = dimOf(op->getOperand(i), d);
        if (!size) {
          size = m;
          continue;
        }
        // Two run-time sizes one loop equates: one symbol.
        if (m.coef == 1 && size->coef == 1 && m.syms.size() == 1 &&
            size->syms.size() == 1 && m.syms[0].second == 1 &&
            size->syms[0].second == 1 && m.syms[0].first != size->syms[0].first)
          parent[find(m.syms[0].first)] = find(size->syms[0].first);
      }
    if (!size)
      continue;
    for (auto [i, t] : llvm::enumerate(rule->results))
      for (unsigned d = 0; d < t.dims.size(); ++d)
        if (single(t, d) && i < op->getNumResults())
          dims.try_emplace({op->getResult(i), d}, *size);
  }
}

std::optional<ShardingRule> DynamicDims::reshapeRule(Operation *op) {
  auto rs = cast<ReshapeOp>(op);
  auto in = getTensorShape(rs.getInput().getType());
  auto out = getTensorShape(rs.getResult().getType());
  if (!in || !out)
    return std::nullopt;
  SmallVector<DimMono> a, b;
  for (unsigned i = 0; i < in->size(); ++i)
    a.push_back(dimOf(rs.getInput(), i));
  // The result's dynamic dims are the sizes given, in order.
  unsigned k = 0;
  for (unsigned j = 0; j < out->size(); ++j) {
    if (!ShapedType::isDynamic((*out)[j])) {
      b.push_back(DimMono{(*out)[j], {}});
      continue;
    }
    std::optional<DimMono> m;
    if (k < rs.getSizes().size())
      m = ofIndex(rs.getSizes()[k++]);
    if (rs.getSizes().empty() &&
        llvm::count_if(*out, ShapedType::isDynamic) == 1) {
      // The one run-time dim is what the others leave of the input.
      std::optional<DimMono> all = DimMono{}, rest = DimMono{};
      for (const DimMono &x : a)
        all = all ? mul(*all, x) : std::nullopt;
      for (int64_t o : *out)
        if (!ShapedType::isDynamic(o))
          rest = rest ? mul(*rest, DimMono{o, {}}) : std::nullopt;
      if (all && rest)
        m = quotient(*all, *rest);
    }
    if (m)
      dims[{rs.getResult(), j}] = *m;
    b.push_back(dimOf(rs.getResult(), j));
  }
  // Cut both sides where either side's running product ends, provided
  // each cut divides the next; every piece between two cuts is a loop.
  ShardingRule rule;
  SmallVector<DimMono> sizes;
  TensorLoops ti, to;
  ti.dims.resize(a.size());
  to.dims.resize(b.size());
  DimMono cur, endA, endB; // the last cut; the running products so far
  size_t i = 0, j = 0;
  auto one = [](const DimMono &m) { return m.isStatic() && m.coef == 1; };
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && one(a[i])) {
      ++i;
      continue;
    }
    if (j < b.size() && one(b[j])) {
      ++j;
      continue;
    }
    if (i >= a.size() || j >= b.size())
      return std::nullopt;
    auto na = mul(endA, a[i]), nb = mul(endB, b[j]);
    if (!na || !nb)
      return std::nullopt;
    bool cutA = false, cutB = false;
    if (*na == *nb)
      cutA = cutB = true;
    else if (quotient(*nb, *na))
      cutA = true;
    else if (quotient(*na, *nb))
      cutB = true;
    else
      return std::nullopt;
    const DimMono &cut = cutA ? *na : *nb;
    auto q = quotient(cut, cur);
    if (!q)
      return std::nullopt;
    int8_t l = rule.addLoop(q->isStatic() ? q->coef : ShapedType::kDynamic);
    sizes.push_back(*q);
    ti.dims[i].push_back(l);
    to.dims[j].push_back(l);
    cur = cut;
    if (cutA)
      endA = *na, ++i;
    if (cutB)
      endB = *nb, ++j;
  }
  rule.operands.push_back(ti);
  for (size_t s = 0; s < rs.getSizes().size(); ++s)
    rule.operands.push_back(TensorLoops{});
  rule.results.push_back(to);
  loopSizes[op] = std::move(sizes);
  return rule;
}

void DynamicDims::analyse(Block &body) {
  SmallVector<DimMono> found;
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    FailureOr<ShardingRule> rule = failure();
    if (auto iface = dyn_cast<ShardingRuleOpInterface>(op))
      rule = iface.getShardingRule();
    if (failed(rule))
      if (auto fb = fallbackRule(&op))
        rule = *fb;
    visit(&op, succeeded(rule) ? &*rule : nullptr);
    if (isa<AttentionOp, ConvOp, ConvTransposeOp, PoolOp>(op) &&
        op.getNumOperands() > 0)
      found.push_back(dimOf(op.getOperand(0), 0));
  }
  if (found.empty()) {
    // No op says which dim is the batch: dim 0, when every argument and
    // every result with a run-time dim 0 has the same symbol there (an
    // [S, B, E] -> [B, E] program has none: S is not the batch there).
    std::optional<int> sym;
    bool agree = true;
    auto take = [&](Value v) {
      auto shape = getTensorShape(v.getType());
      if (!shape || shape->empty() || !ShapedType::isDynamic((*shape)[0]))
        return;
      DimMono c = canonical(dimOf(v, 0));
      if (c.coef != 1 || c.syms.size() != 1 || c.syms[0].second != 1) {
        agree = false;
        return;
      }
      if (sym && *sym != c.syms[0].first)
        agree = false;
      sym = c.syms[0].first;
    };
    for (BlockArgument arg : body.getArguments())
      take(arg);
    bool anyResult = false;
    if (!body.empty() && body.back().hasTrait<OpTrait::IsTerminator>())
      for (Value v : body.back().getOperands()) {
        auto shape = getTensorShape(v.getType());
        anyResult |=
            shape && !shape->empty() && ShapedType::isDynamic((*shape)[0]);
        take(v);
      }
    if (sym && agree && anyResult)
      found.push_back(DimMono{1, {{*sym, 1}}});
  }
  for (const DimMono &m : found) {
    DimMono c = canonical(m);
    if (c.syms.size() == 1 && c.syms[0].second == 1)
      batch.push_back(c.syms[0].first);
  }
}

bool DynamicDims::isBatch(const DimMono &m) {
  DimMono c = canonical(m);
  return c.syms.size() == 1 && c.syms[0].second == 1 &&
         llvm::any_of(batch, [&](int b) { return find(b) == c.syms[0].first; });
}

SmallVector<bool> DynamicDims::batchLoops(Operation *op,
                                          const ShardingRule &rule) {
  SmallVector<bool> out(rule.loops.size(), false);
  auto it = loopSizes.find(op);
  for (size_t l = 0; l < rule.loops.size(); ++l) {
    if (!ShapedType::isDynamic(rule.loops[l].size))
      continue;
    if (it != loopSizes.end() && l < it->second.size()) {
      out[l] = isBatch(it->second[l]);
      continue;
    }
    // A dim made of this loop alone has its size.
    auto check = [&](ArrayRef<TensorLoops> ts, ValueRange vs) {
      for (auto [i, t] : llvm::enumerate(ts))
        for (unsigned d = 0; d < t.dims.size() && i < vs.size(); ++d)
          if (t.dims[d].size() == 1 && t.dims[d].front() == int8_t(l))
            return std::optional<bool>(isBatch(dimOf(vs[i], d)));
      return std::optional<bool>();
    };
    std::optional<bool> r = check(rule.results, op->getResults());
    if (!r)
      r = check(rule.operands, op->getOperands());
    out[l] = r.value_or(false);
  }
  return out;
}

std::optional<ShardingRule> DynamicDims::fallbackRule(Operation *op) {
  if (isa<ReshapeOp>(op))
    return reshapeRule(op);
  if (auto sl = dyn_cast<SliceOp>(op)) {
    // The dims a slice takes whole (a run-time one to the end) split as
    // they are; the dims it cuts stay whole.
    auto shape = getTensorShape(sl.getInput().getType());
    auto outShape = getTensorShape(sl.getResult().getType());
    if (!shape || !outShape || outShape->size() != shape->size() ||
        !llvm::any_of(*shape, ShapedType::isDynamic))
      return std::nullopt;
    ShardingRule rule;
    TensorLoops ti, to;
    for (unsigned d = 0; d < shape->size(); ++d) {
      int64_t size = (*shape)[d];
      bool dyn = ShapedType::isDynamic(size);
      bool whole =
          sl.getStarts()[d] == 0 && sl.getSteps()[d] == 1 &&
          (dyn ? sl.getLimits()[d] >= kToEnd : sl.getLimits()[d] == size);
      if (whole) {
        int8_t l = rule.addLoop(size);
        ti.dims.push_back({l});
        to.dims.push_back({l});
        if (dyn)
          dims.try_emplace({sl.getResult(), d}, dimOf(sl.getInput(), d));
        continue;
      }
      ti.dims.push_back({rule.addLoop(size, LoopKind::Opaque)});
      to.dims.push_back({rule.addLoop((*outShape)[d], LoopKind::Opaque)});
    }
    rule.operands.push_back(ti);
    rule.results.push_back(to);
    return rule;
  }
  return std::nullopt;
}

} // namespace loom
