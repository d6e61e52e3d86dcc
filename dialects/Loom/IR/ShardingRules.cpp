//===- ShardingRules.cpp - the sharding rule of every loom op -------------===//
//
// ShardingRuleOpInterface external models for the loom ops (see
// ShardingRule.h for what a rule says). Attached from
// LoomDialect::initialize so every tool that loads the dialect has them.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Support/Axis.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace loom {
namespace {

using Dims = llvm::SmallVector<int8_t, 2>;

/// Shape of a ranked tensor or a qtensor (its logical shape).
static std::optional<SmallVector<int64_t>> shapeOf(Type type) {
  if (auto s = getTensorShape(type))
    return SmallVector<int64_t>(*s);
  return std::nullopt;
}

static int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= ShapedType::isDynamic(d) ? 1 : d;
  return n;
}

/// A tensor whose dimension i is exactly loop loops[i] (-1: never split).
static TensorLoops identity(ArrayRef<int> loops) {
  TensorLoops t;
  for (int l : loops)
    t.dims.push_back(l < 0 ? Dims{} : Dims{static_cast<int8_t>(l)});
  return t;
}

/// Numpy broadcasting of `shape` against the loops of a result of rank
/// `resultLoops.size()`: right-aligned, size-1 dimensions never split.
static TensorLoops broadcastTo(ArrayRef<int64_t> shape,
                               ArrayRef<int> resultLoops,
                               ArrayRef<int64_t> resultShape) {
  TensorLoops t;
  size_t off = resultLoops.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t r = resultShape[off + i];
    if (shape[i] == 1 && r != 1)
      t.dims.push_back({});
    else
      t.dims.push_back({static_cast<int8_t>(resultLoops[off + i])});
  }
  return t;
}

/// Every op whose operands broadcast to its (first) result elementwise.
static FailureOr<ShardingRule> elementwiseRule(Operation *op) {
  if (op->getNumResults() == 0)
    return failure();
  auto rshape = shapeOf(op->getResult(0).getType());
  if (!rshape)
    return failure();
  ShardingRule rule;
  SmallVector<int> loops;
  for (int64_t d : *rshape)
    loops.push_back(rule.addLoop(d));
  for (Value v : op->getOperands()) {
    auto s = shapeOf(v.getType());
    if (!s || s->size() > rshape->size())
      return failure();
    rule.operands.push_back(broadcastTo(*s, loops, *rshape));
    // A quantized operand is only ever split in whole blocks.
    if (auto q = dyn_cast<QTensorType>(v.getType()); q && !s->empty()) {
      auto &last = rule.operands.back().dims.back();
      if (!last.empty())
        rule.loops[last.front()].granule = q.getQuant().getBlockSize();
    }
  }
  for (Value r : op->getResults()) {
    auto s = shapeOf(r.getType());
    if (!s || *s != *rshape)
      return failure();
    rule.results.push_back(identity(loops));
  }
  rule.flops = static_cast<double>(numElements(*rshape));
  return rule;
}

/// Sources (weights): any dimension may be split; the innermost dimension
/// of a quantized weight only in whole blocks.
static FailureOr<ShardingRule> sourceRule(Operation *op) {
  Type type = op->getResult(0).getType();
  auto shape = shapeOf(type);
  if (!shape)
    return failure();
  ShardingRule rule;
  SmallVector<int> loops;
  for (auto [i, d] : llvm::enumerate(*shape)) {
    int64_t granule = 1;
    if (auto q = dyn_cast<QTensorType>(type); q && i + 1 == shape->size())
      granule = q.getQuant().getBlockSize();
    loops.push_back(rule.addLoop(d, LoopKind::Parallel, granule));
  }
  rule.results.push_back(identity(loops));
  return rule;
}

static FailureOr<ShardingRule> matmulRule(MatmulOp op) {
  auto a = shapeOf(op.getLhs().getType()), b = shapeOf(op.getRhs().getType()),
       c = shapeOf(op.getResult().getType());
  if (!a || !b || !c || a->size() < 2 || b->size() < 2 || c->size() < 2)
    return failure();
  ShardingRule rule;
  size_t batch = c->size() - 2;
  SmallVector<int> loops;
  for (size_t i = 0; i < batch; ++i)
    loops.push_back(rule.addLoop((*c)[i]));
  int m = rule.addLoop((*c)[batch]);
  int n = rule.addLoop((*c)[batch + 1]);
  int64_t kSize = op.getTransposeA() ? (*a)[a->size() - 2] : a->back();
  int k = rule.addLoop(kSize, LoopKind::Sum);
  auto side = [&](ArrayRef<int64_t> s, int inner0, int inner1) {
    SmallVector<int64_t> batchShape(s.begin(), s.end() - 2);
    SmallVector<int64_t> cBatch(c->begin(), c->begin() + batch);
    TensorLoops t = broadcastTo(batchShape, loops, cBatch);
    t.dims.push_back({static_cast<int8_t>(inner0)});
    t.dims.push_back({static_cast<int8_t>(inner1)});
    return t;
  };
  if (a->size() - 2 > batch || b->size() - 2 > batch)
    return failure();
  rule.operands.push_back(op.getTransposeA() ? side(*a, k, m) : side(*a, m, k));
  rule.operands.push_back(op.getTransposeB() ? side(*b, n, k) : side(*b, k, n));
  SmallVector<int> cl(loops);
  cl.push_back(m);
  cl.push_back(n);
  rule.results.push_back(identity(cl));
  rule.flops = 2.0 * static_cast<double>(numElements(*c)) *
               static_cast<double>(ShapedType::isDynamic(kSize) ? 1 : kSize);
  return rule;
}

/// input [..., K] x weight [N, K] (blocks along K) -> [..., N].
static FailureOr<ShardingRule> qmatmulRule(QMatmulOp op) {
  auto x = shapeOf(op.getInput().getType());
  auto w = dyn_cast<QTensorType>(op.getWeight().getType());
  auto c = shapeOf(op.getResult().getType());
  if (!x || !w || !c || w.getRank() != 2 || x->empty())
    return failure();
  ShardingRule rule;
  SmallVector<int> loops;
  for (size_t i = 0; i + 1 < c->size(); ++i)
    loops.push_back(rule.addLoop((*c)[i]));
  int n = rule.addLoop(w.getShape()[0]);
  int k =
      rule.addLoop(w.getShape()[1], LoopKind::Sum, w.getQuant().getBlockSize());
  SmallVector<int> xl(loops);
  xl.push_back(k);
  rule.operands.push_back(identity(xl));
  rule.operands.push_back(identity({n, k}));
  SmallVector<int> cl(loops);
  cl.push_back(n);
  rule.results.push_back(identity(cl));
  rule.flops = 2.0 * static_cast<double>(numElements(*c)) *
               static_cast<double>(w.getShape()[1]);
  return rule;
}

/// Ops that read one trailing range of dimensions whole (softmax, norms).
static FailureOr<ShardingRule> wholeFromRule(Operation *op, int64_t from,
                                             int64_t to) {
  auto s = shapeOf(op->getOperand(0).getType());
  if (!s)
    return failure();
  ShardingRule rule;
  SmallVector<int> loops;
  for (int64_t i = 0; i < static_cast<int64_t>(s->size()); ++i)
    loops.push_back(rule.addLoop(
        (*s)[i], i >= from && i < to ? LoopKind::Opaque : LoopKind::Parallel));
  rule.operands.push_back(identity(loops));
  // Per-feature parameters (scale, bias) cover the trailing dimensions.
  for (Value v : op->getOperands().drop_front()) {
    auto p = shapeOf(v.getType());
    if (!p || p->size() > s->size())
      return failure();
    rule.operands.push_back(broadcastTo(*p, loops, *s));
  }
  rule.results.push_back(identity(loops));
  rule.flops = 5.0 * static_cast<double>(numElements(*s));
  return rule;
}

static FailureOr<ShardingRule> reduceRule(ReduceOp op) {
  auto s = shapeOf(op.getInput().getType());
  if (!s)
    return failure();
  llvm::SmallDenseSet<int64_t> reduced;
  for (int64_t a : op.getAxes())
    reduced.insert(normAxis(a, s->size()));
  // Only sums split into partial sums; a mean, max, min or product of
  // partial results is not the result.
  LoopKind kind =
      op.getKind() == ReduceKind::sum ? LoopKind::Sum : LoopKind::Opaque;
  ShardingRule rule;
  SmallVector<int> in, out;
  for (int64_t i = 0; i < static_cast<int64_t>(s->size()); ++i) {
    bool r = reduced.contains(i);
    int l = rule.addLoop((*s)[i], r ? kind : LoopKind::Parallel);
    in.push_back(l);
    if (!r)
      out.push_back(l);
    else if (op.getKeepDims())
      out.push_back(-1);
  }
  rule.operands.push_back(identity(in));
  rule.results.push_back(identity(out));
  rule.flops = static_cast<double>(numElements(*s));
  return rule;
}

/// query [B, Hq, S, D], key [B, Hkv, T, D], value [B, Hkv, T, Dv]. Query
/// heads are (kv head, group) with the kv head major, so splitting kv heads
/// splits query heads consistently (grouped-query attention).
static FailureOr<ShardingRule> attentionRule(AttentionOp op) {
  auto q = shapeOf(op.getQuery().getType()), k = shapeOf(op.getKey().getType()),
       v = shapeOf(op.getValue().getType());
  if (!q || !k || !v || q->size() != 4 || k->size() != 4 || v->size() != 4)
    return failure();
  int64_t hq = (*q)[1], hkv = (*k)[1];
  if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) || hkv == 0 ||
      hq % hkv != 0)
    return failure();
  ShardingRule rule;
  int b = rule.addLoop((*q)[0]);
  int h = rule.addLoop(hkv);
  int g = hq / hkv > 1 ? rule.addLoop(hq / hkv) : -1;
  // Query positions split only when each shard can compute its rows alone:
  // no causal mask computed from local indices, no cache to align with.
  bool seqSplit = !op.getCausal() && !op.getPastKey() && !op.getCacheKey();
  int s =
      rule.addLoop((*q)[2], seqSplit ? LoopKind::Parallel : LoopKind::Opaque);
  int t = rule.addLoop((*k)[2], LoopKind::Opaque);
  int d = rule.addLoop((*q)[3], LoopKind::Opaque);
  int dv = rule.addLoop((*v)[3], LoopKind::Opaque);
  auto heads = [&]() {
    return g < 0 ? Dims{static_cast<int8_t>(h)}
                 : Dims{static_cast<int8_t>(h), static_cast<int8_t>(g)};
  };
  TensorLoops tq = identity({b, -1, s, d});
  tq.dims[1] = heads();
  rule.operands.push_back(tq);
  rule.operands.push_back(identity({b, h, t, d}));
  rule.operands.push_back(identity({b, h, t, dv}));
  if (Value mask = op.getMask()) {
    auto m = shapeOf(mask.getType());
    if (!m || m->size() > 4)
      return failure();
    // Broadcastable to [B, Hq, S, P+T]; the key axis is read whole.
    TensorLoops tm;
    size_t off = 4 - m->size();
    SmallVector<int64_t> full = {(*q)[0], hq, (*q)[2], -2};
    for (size_t i = 0; i < m->size(); ++i) {
      size_t dim = off + i;
      if (dim == 3 || ((*m)[i] == 1 && full[dim] != 1))
        tm.dims.push_back({});
      else if (dim == 1)
        tm.dims.push_back(heads());
      else
        tm.dims.push_back({static_cast<int8_t>(dim == 0 ? b : s)});
    }
    rule.operands.push_back(tm);
  }
  if (op.getPastKey()) {
    rule.operands.push_back(identity({b, h, -1, d}));
    rule.operands.push_back(identity({b, h, -1, dv}));
  }
  if (op.getCacheKey()) {
    // The caches split exactly like the KV heads (and the batch); the
    // context axis and the positions stay whole on every device.
    rule.operands.push_back(identity({b, h, -1, d}));
    rule.operands.push_back(identity({b, h, -1, dv}));
    rule.operands.push_back(identity({-1}));
  }
  TensorLoops out = identity({b, -1, s, dv});
  out.dims[1] = heads();
  rule.results.push_back(out);
  if (op.getPresent().size() == 2) {
    rule.results.push_back(identity({b, h, -1, d}));
    rule.results.push_back(identity({b, h, -1, dv}));
  }
  auto known = [](int64_t x) { return ShapedType::isDynamic(x) ? 1 : x; };
  rule.flops = 4.0 * known((*q)[0]) * hq * known((*q)[2]) * known((*k)[2]) *
               known((*q)[3]);
  return rule;
}

/// input [B, H, S, D] rotated by cos/sin [S, R] or [B, S, R]; pairs of
/// features are mixed, so the head dimension stays whole.
static FailureOr<ShardingRule> rotaryRule(RotaryOp op) {
  auto x = shapeOf(op.getInput().getType()), c = shapeOf(op.getCos().getType());
  if (!x || !c || x->size() != 4 || (c->size() != 2 && c->size() != 3))
    return failure();
  ShardingRule rule;
  int b = rule.addLoop((*x)[0]), h = rule.addLoop((*x)[1]),
      s = rule.addLoop((*x)[2]), d = rule.addLoop((*x)[3], LoopKind::Opaque);
  rule.operands.push_back(identity({b, h, s, d}));
  TensorLoops tc = c->size() == 2 ? identity({s, -1}) : identity({b, s, -1});
  if (c->size() == 3 && (*c)[0] == 1 && (*x)[0] != 1)
    tc.dims[0] = {};
  rule.operands.push_back(tc);
  rule.operands.push_back(tc);
  rule.results.push_back(identity({b, h, s, d}));
  rule.flops = 3.0 * static_cast<double>(numElements(*x));
  return rule;
}

/// table [V, D] (rows read by id, never split), ids [...] -> [..., D].
static FailureOr<ShardingRule> embeddingRule(EmbeddingOp op) {
  auto t = shapeOf(op.getTable().getType()),
       ids = shapeOf(op.getIds().getType());
  if (!t || !ids || t->size() != 2)
    return failure();
  ShardingRule rule;
  SmallVector<int> il;
  for (int64_t d : *ids)
    il.push_back(rule.addLoop(d));
  int64_t granule = 1;
  if (auto q = dyn_cast<QTensorType>(op.getTable().getType()))
    granule = q.getQuant().getBlockSize();
  int v = rule.addLoop((*t)[0], LoopKind::Opaque);
  int d = rule.addLoop((*t)[1], LoopKind::Parallel, granule);
  rule.operands.push_back(identity({v, d}));
  rule.operands.push_back(identity(il));
  SmallVector<int> out(il);
  out.push_back(d);
  rule.results.push_back(identity(out));
  return rule;
}

static FailureOr<ShardingRule> transposeRule(TransposeOp op) {
  auto r = shapeOf(op.getResult().getType());
  if (!r)
    return failure();
  ShardingRule rule;
  SmallVector<int> loops;
  for (int64_t d : *r)
    loops.push_back(rule.addLoop(d));
  ArrayRef<int64_t> perm = op.getPermutation();
  SmallVector<int> in(perm.size(), -1);
  for (auto [j, p] : llvm::enumerate(perm))
    in[p] = loops[j];
  rule.operands.push_back(identity(in));
  rule.results.push_back(identity(loops));
  return rule;
}

/// Reshape: dimensions are grouped where the running products agree; a
/// group with one dimension on one side gives that side's dimension as
/// loops of the other side's dimensions (a split or a merge); a group with
/// several on both sides is never split.
static FailureOr<ShardingRule> reshapeRule(ReshapeOp op) {
  auto in = shapeOf(op.getInput().getType()),
       out = shapeOf(op.getResult().getType());
  // Run-time sizes say a dynamic dim is not what the types suggest (and
  // would be global sizes on a shard): such a reshape runs replicated.
  if (!in || !out || !op.getSizes().empty())
    return failure();
  ShardingRule rule;
  TensorLoops ti, to;
  size_t i = 0, j = 0;
  while (i < in->size() || j < out->size()) {
    // Size-1 dimensions on either side stand alone.
    if (i < in->size() && (*in)[i] == 1 &&
        (j >= out->size() || (*out)[j] != 1)) {
      ti.dims.push_back({});
      ++i;
      continue;
    }
    if (j < out->size() && (*out)[j] == 1 &&
        (i >= in->size() || (*in)[i] != 1)) {
      to.dims.push_back({});
      ++j;
      continue;
    }
    if (i >= in->size() || j >= out->size())
      return failure();
    int64_t a = (*in)[i], b = (*out)[j];
    if (a == b) { // same dimension (dynamic with dynamic too)
      int l = rule.addLoop(a);
      ti.dims.push_back({static_cast<int8_t>(l)});
      to.dims.push_back({static_cast<int8_t>(l)});
      ++i, ++j;
      continue;
    }
    if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
      return failure();
    // Grow the smaller side until the products meet.
    size_t i0 = i, j0 = j;
    int64_t pa = a, pb = b;
    ++i, ++j;
    while (pa != pb) {
      if (pa < pb) {
        if (i >= in->size() || ShapedType::isDynamic((*in)[i]))
          return failure();
        pa *= (*in)[i++];
      } else {
        if (j >= out->size() || ShapedType::isDynamic((*out)[j]))
          return failure();
        pb *= (*out)[j++];
      }
    }
    if (i - i0 == 1 || j - j0 == 1) {
      // One side is a single dimension made of the other side's dims.
      bool inSingle = i - i0 == 1;
      size_t from = inSingle ? j0 : i0, to_ = inSingle ? j : i;
      const SmallVector<int64_t> &many = inSingle ? *out : *in;
      Dims composite;
      TensorLoops &multi = inSingle ? to : ti;
      for (size_t x = from; x < to_; ++x) {
        int l = rule.addLoop(many[x]);
        composite.push_back(static_cast<int8_t>(l));
        multi.dims.push_back({static_cast<int8_t>(l)});
      }
      (inSingle ? ti : to).dims.push_back(composite);
    } else {
      for (size_t x = i0; x < i; ++x)
        ti.dims.push_back({});
      for (size_t x = j0; x < j; ++x)
        to.dims.push_back({});
    }
  }
  rule.operands.push_back(ti);
  rule.results.push_back(to);
  return rule;
}

/// Dimensions other than `axis` are shared; `axis` is never split.
static FailureOr<ShardingRule> concatRule(ConcatOp op) {
  auto r = shapeOf(op.getResult().getType());
  if (!r)
    return failure();
  int64_t axis = normAxis(static_cast<int64_t>(op.getAxis()), r->size());
  ShardingRule rule;
  SmallVector<int> loops;
  for (int64_t i = 0; i < static_cast<int64_t>(r->size()); ++i)
    loops.push_back(i == axis ? -1 : rule.addLoop((*r)[i]));
  for (size_t k = 0; k < op.getInputs().size(); ++k)
    rule.operands.push_back(identity(loops));
  rule.results.push_back(identity(loops));
  return rule;
}

/// input [N, C, D...] (*) weight [M, C/g, K...] (+ bias [M]) -> [N, M, O...].
/// The batch splits freely. With one group, the output channels split with
/// the weight's rows and the bias (column-parallel), and the input channels
/// are a sum (row-parallel: partial results) unless a bias would be added
/// on every shard. Grouped convolutions keep their channels whole (a split
/// would have to follow the groups). Spatial dimensions read windows across
/// shard edges (halos) and are never split.
static FailureOr<ShardingRule> convRule(ConvOp op) {
  auto x = shapeOf(op.getInput().getType()),
       w = shapeOf(op.getWeight().getType()),
       c = shapeOf(op.getResult().getType());
  if (!x || !w || !c || x->size() < 3 || w->size() != x->size() ||
      c->size() != x->size())
    return failure();
  bool grouped = op.getGroups() != 1;
  ShardingRule rule;
  int n = rule.addLoop((*c)[0]);
  int m =
      rule.addLoop((*c)[1], grouped ? LoopKind::Opaque : LoopKind::Parallel);
  int ci = rule.addLoop((*w)[1], grouped || op.getBias() ? LoopKind::Opaque
                                                         : LoopKind::Sum);
  SmallVector<int> in = {n, ci}, wl = {m, ci}, out = {n, m};
  double window = 1;
  for (size_t d = 2; d < x->size(); ++d) {
    in.push_back(-1);
    wl.push_back(-1);
    out.push_back(rule.addLoop((*c)[d], LoopKind::Opaque));
    window *= static_cast<double>((*w)[d]);
  }
  // With groups the input's channel dimension is C = g * C/g: never split.
  rule.operands.push_back(identity(in));
  if (grouped)
    rule.operands.back().dims[1] = {};
  rule.operands.push_back(identity(wl));
  if (op.getBias())
    rule.operands.push_back(identity({m}));
  rule.results.push_back(identity(out));
  rule.flops = 2.0 * static_cast<double>(numElements(*c)) *
               static_cast<double>((*w)[1]) * window;
  return rule;
}

/// conv_transpose: only the batch splits (the weight's channels are
/// [C, M/g]: a channel split would need its own partition rewrite).
static FailureOr<ShardingRule> convTransposeRule(ConvTransposeOp op) {
  auto x = shapeOf(op.getInput().getType()),
       w = shapeOf(op.getWeight().getType()),
       c = shapeOf(op.getResult().getType());
  if (!x || !w || !c || x->size() < 3 || w->size() != x->size())
    return failure();
  ShardingRule rule;
  int n = rule.addLoop((*c)[0]);
  SmallVector<int> in = {n}, wl, out = {n};
  for (size_t d = 1; d < x->size(); ++d) {
    in.push_back(-1);
    out.push_back(-1);
  }
  for (size_t d = 0; d < w->size(); ++d)
    wl.push_back(-1);
  rule.operands.push_back(identity(in));
  rule.operands.push_back(identity(wl));
  if (op.getBias())
    rule.operands.push_back(identity({-1}));
  rule.results.push_back(identity(out));
  double window = 1;
  for (size_t d = 2; d < w->size(); ++d)
    window *= static_cast<double>((*w)[d]);
  // Every input element meets every kernel tap of its group's channels.
  rule.flops = 2.0 * static_cast<double>(numElements(*x)) *
               static_cast<double>((*w)[1]) * window;
  return rule;
}

/// pool: batch and channels split; spatial dimensions never (windows).
static FailureOr<ShardingRule> poolRule(PoolOp op) {
  auto x = shapeOf(op.getInput().getType()),
       c = shapeOf(op.getResult().getType());
  if (!x || !c || x->size() < 3 || c->size() != x->size())
    return failure();
  ShardingRule rule;
  int n = rule.addLoop((*c)[0]), ch = rule.addLoop((*c)[1]);
  SmallVector<int> in = {n, ch}, out = {n, ch};
  double window = 1;
  for (size_t d = 2; d < x->size(); ++d) {
    in.push_back(-1);
    out.push_back(rule.addLoop((*c)[d], LoopKind::Opaque));
    window *= static_cast<double>(op.getKernel()[d - 2]);
  }
  rule.operands.push_back(identity(in));
  rule.results.push_back(identity(out));
  rule.flops = static_cast<double>(numElements(*c)) * window;
  return rule;
}

template <typename OpTy>
struct RuleModel
    : public ShardingRuleOpInterface::ExternalModel<RuleModel<OpTy>, OpTy> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    auto o = cast<OpTy>(op);
    if constexpr (std::is_same_v<OpTy, MatmulOp>)
      return matmulRule(o);
    else if constexpr (std::is_same_v<OpTy, QMatmulOp>)
      return qmatmulRule(o);
    else if constexpr (std::is_same_v<OpTy, ReduceOp>)
      return reduceRule(o);
    else if constexpr (std::is_same_v<OpTy, AttentionOp>)
      return attentionRule(o);
    else if constexpr (std::is_same_v<OpTy, RotaryOp>)
      return rotaryRule(o);
    else if constexpr (std::is_same_v<OpTy, EmbeddingOp>)
      return embeddingRule(o);
    else if constexpr (std::is_same_v<OpTy, TransposeOp>)
      return transposeRule(o);
    else if constexpr (std::is_same_v<OpTy, ReshapeOp>)
      return reshapeRule(o);
    else if constexpr (std::is_same_v<OpTy, ConcatOp>)
      return concatRule(o);
    else if constexpr (std::is_same_v<OpTy, ConvOp>)
      return convRule(o);
    else if constexpr (std::is_same_v<OpTy, ConvTransposeOp>)
      return convTransposeRule(o);
    else if constexpr (std::is_same_v<OpTy, PoolOp>)
      return poolRule(o);
    else if constexpr (std::is_same_v<OpTy, WeightOp>)
      return sourceRule(op);
    else if constexpr (std::is_same_v<OpTy, SoftmaxOp>) {
      auto s = shapeOf(o.getInput().getType());
      if (!s)
        return failure();
      int64_t a = normAxis(static_cast<int64_t>(o.getAxis()), s->size());
      return wholeFromRule(op, a, a + 1);
    } else if constexpr (std::is_same_v<OpTy, RmsNormOp>) {
      auto s = shapeOf(o.getInput().getType());
      if (!s || s->empty())
        return failure();
      return wholeFromRule(op, s->size() - 1, s->size());
    } else if constexpr (std::is_same_v<OpTy, LayerNormOp>) {
      auto s = shapeOf(o.getInput().getType());
      if (!s)
        return failure();
      return wholeFromRule(
          op, normAxis(static_cast<int64_t>(o.getAxis()), s->size()),
          s->size());
    } else
      return elementwiseRule(op);
  }
};

template <typename... Ops> static void attach(MLIRContext *ctx) {
  (Ops::template attachInterface<RuleModel<Ops>>(*ctx), ...);
}

} // namespace

// loom.slice has no rule yet: it runs replicated (the partitioner would
// have to rewrite its bounds per shard), and the planner reshards around it.
void attachShardingRules(MLIRContext *ctx) {
  attach<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, AndOp, OrOp, NegOp,
         AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, SinOp, CosOp,
         TanhOp, SigmoidOp, SiluOp, ReluOp, ErfOp, NotOp, GeluOp, CompareOp,
         SelectOp, CastOp, BroadcastOp, DequantizeOp, MatmulOp, QMatmulOp,
         ReduceOp, AttentionOp, RotaryOp, EmbeddingOp, TransposeOp, ReshapeOp,
         ConcatOp, WeightOp, SoftmaxOp, RmsNormOp, LayerNormOp, ConvOp,
         ConvTransposeOp, PoolOp>(ctx);
}

} // namespace loom
