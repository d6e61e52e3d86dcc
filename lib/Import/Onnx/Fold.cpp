//===- Fold.cpp - ONNX ops folded at import time -------------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The folders of the ONNX importer: a table by op type, as the emitters'
// (OnnxImporter.h), of the ops that are computed at import time when their
// inputs are known (shape arithmetic: Shape, Gather, Concat, Range, ...;
// constants; small elementwise maths on them). A folder either appends the
// node's value (setHost, which checks its shape and size), leaves the node
// to its emitter (returns true without a value), or refuses it (fail: one
// message naming the node, the value and why). Every folder checks the
// attributes and input values it uses before it indexes with them: the
// file is untrusted (issue 13 found zero-step loops and malformed Slices
// here), so a bad value is an error, never an out-of-range read.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Onnx/OnnxImporter.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>

namespace loom::onnx_import {

namespace {

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// Element index of `in` for output index `o` of a broadcast to `out`.
int64_t bcastIndex(int64_t o, ArrayRef<int64_t> out, ArrayRef<int64_t> in) {
  SmallVector<int64_t> os = stridesOf(out), is = stridesOf(in);
  int64_t idx = 0;
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t c = (o / os[i]) % out[i];
    if (i >= off && in[i - off] != 1)
      idx += c * is[i - off];
  }
  return idx;
}

/// One node being folded: its inputs, the results it appends and the
/// importer's helpers under the names the folders use. Each folder is a
/// member; false is a failure (recorded), true either a value appended
/// (`folded`) or the node left to its emitter.
struct FoldContext {
  Importer &im;
  const onnx::NodeProto &node;
  std::vector<Val *> &in;
  std::vector<Val> &out;
  bool &folded;
  const std::string &op;

  bool fail(const Twine &msg) { return im.fail(msg); }
  bool hasIn(size_t i) const {
    return i < in.size() && in[i] && in[i]->present;
  }
  /// Input `i`'s value; only for inputs the table's `hostInputs` made known.
  Host &H(int i) { return *in[i]->host; }
  bool constInts(Val *v, SmallVector<int64_t> &o, StringRef what) {
    return im.constInts(v, o, what);
  }
  bool hostInts(Val *v, SmallVector<Dim> &o, StringRef what) {
    return im.hostInts(v, o, what);
  }
  bool load(const onnx::TensorProto &t, Host &h, StringRef what) {
    return im.load(t, h, what);
  }
  bool broadcast(ArrayRef<Dim> a, ArrayRef<Dim> c, SmallVector<Dim> &o) {
    return im.broadcast(a, c, o);
  }
  /// Normalises the signed axis `a` of a rank-`r` value, or fails.
  bool axisIn(int64_t &a, int64_t r, const Twine &what) {
    return im.axisIn(a, r, what);
  }
  /// Appends the folded value after checking it: the next folder indexes
  /// its inputs by their shapes.
  bool setHost(Host h) {
    if (!h.consistent()) {
      std::string shape;
      for (int64_t d : h.shape)
        shape += (shape.empty() ? "" : "x") + std::to_string(d);
      return fail("folding gives a malformed or too large value (shape [" +
                  shape +
                  "]); the node's inputs or attributes are "
                  "inconsistent; the file is corrupt");
    }
    Val r;
    r.dt = h.dt;
    for (int64_t d : h.shape)
      r.shape.push_back(Dim::of(d));
    r.host = std::move(h);
    out.push_back(std::move(r));
    folded = true;
    return true;
  }

  bool shape();
  bool size();
  bool constant();
  bool cast();
  bool squeeze();
  bool reshape();
  bool concat();
  bool gather();
  bool slice();
  bool constantOfShape();
  bool range();
  bool trilu();
  bool expand();
  bool transpose();
  bool unary();
  bool binary();
  bool where();
  bool identity() { return setHost(H(0)); }
};

bool FoldContext::shape() {
  Host h;
  h.dt = DT_I64;
  int64_t r = in[0]->shape.size();
  int64_t s = attrInt(node, "start", 0), e = attrInt(node, "end", r);
  if (s < 0)
    s += r;
  if (e < 0)
    e += r;
  s = std::clamp<int64_t>(s, 0, r);
  e = std::clamp<int64_t>(e, s, r);
  for (int64_t i = s; i < e; ++i)
    h.iv.push_back(in[0]->shape[i]);
  h.shape = {e - s};
  return setHost(std::move(h));
}

bool FoldContext::size() {
  Dim n = Dim::of(1);
  for (const Dim &d : in[0]->shape) {
    std::optional<Dim> m = mulDim(n, d);
    if (!m)
      return fail("Size of the input overflows int64; the file is corrupt");
    n = *m;
  }
  Host h;
  h.iv = {n};
  return setHost(std::move(h));
}

bool FoldContext::constant() {
  Host h;
  if (const auto *a = attr(node, "value")) {
    if (!load(a->t(), h, node.output(0)))
      return false;
  } else if (const auto *a = attr(node, "value_float")) {
    h.dt = DT_F32;
    h.fv = {a->f()};
  } else if (const auto *a = attr(node, "value_floats")) {
    h.dt = DT_F32;
    h.fv.assign(a->floats().begin(), a->floats().end());
    h.shape = {int64_t(h.fv.size())};
  } else if (const auto *a = attr(node, "value_int")) {
    h.iv = {Dim::of(a->i())};
  } else if (const auto *a = attr(node, "value_ints")) {
    for (int64_t x : a->ints())
      h.iv.push_back(Dim::of(x));
    h.shape = {int64_t(h.iv.size())};
  } else {
    return fail("Constant without a supported value attribute");
  }
  if (h.numel() * dtBytes(h.dt) > kInlineLimit &&
      im.rawIndex.constants.count(node.output(0)))
    return true; // left to emit(): becomes a weight in place.
  return setHost(std::move(h));
}

bool FoldContext::cast() {
  Host h = H(0);
  int64_t to64 = attrInt(node, "to", DT_F32);
  if (to64 < 0 || to64 > 64 || !dtBytes(int(to64)))
    return fail("Cast to element type " + Twine(to64) + " is not supported");
  int to = int(to64);
  if (isFloatDT(to) && !h.isF()) {
    if (!h.allConst())
      return true;
    for (const Dim &d : h.iv)
      h.fv.push_back(double(d.c));
    h.iv.clear();
  } else if (!isFloatDT(to) && h.isF()) {
    for (double d : h.fv) {
      if (to != DT_BOOL && !(std::fabs(d) < 9.2e18))
        return fail("Cast of " + std::to_string(d) +
                    " to an integer overflows");
      h.iv.push_back(Dim::of(to == DT_BOOL ? d != 0 : int64_t(d)));
    }
    h.fv.clear();
  } else if (to == DT_BOOL) {
    for (Dim &d : h.iv)
      if (d.isConst())
        d.c = d.c != 0;
  }
  // Integer casts wrap to the target width, as ONNX Runtime does.
  if (!isFloatDT(to) && to != DT_BOOL && dtBytes(to) < 8) {
    unsigned bits = dtBytes(to) * 8;
    for (Dim &d : h.iv)
      if (d.isConst()) {
        uint64_t m = uint64_t(d.c) & ((uint64_t(1) << bits) - 1);
        d.c = to == DT_U8 ? int64_t(m) : llvm::SignExtend64(m, bits);
      }
  }
  h.dt = to;
  return setHost(std::move(h));
}

bool FoldContext::squeeze() {
  Host h = H(0);
  SmallVector<int64_t> axes;
  if (hasIn(1)) {
    if (!constInts(in[1], axes, "axes"))
      return false;
  } else if (auto a = attrInts(node, "axes")) {
    axes = *a;
  }
  bool unsqueeze = op == "Unsqueeze";
  // Unsqueeze's axes index the result, Squeeze's the input; each at most
  // once (the ONNX spec), Squeeze's on dimensions of size 1.
  int64_t r = h.shape.size() + (unsqueeze ? axes.size() : 0);
  for (int64_t &a : axes)
    if (!axisIn(a, r, op + " axis"))
      return false;
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return fail(op + " repeats axis " +
                Twine(*std::adjacent_find(axes.begin(), axes.end())) +
                "; the file is corrupt");
  if (unsqueeze) {
    for (int64_t a : axes)
      h.shape.insert(h.shape.begin() + std::min<int64_t>(a, h.shape.size()), 1);
    return setHost(std::move(h));
  }
  for (int64_t a : axes)
    if (h.shape[a] != 1)
      return fail("Squeeze of axis " + Twine(a) + " of size " +
                  Twine(h.shape[a]) +
                  " (only size-1 axes can be removed); "
                  "the file is corrupt");
  SmallVector<int64_t> ns;
  for (int64_t i = 0; i < r; ++i)
    if (axes.empty() ? h.shape[i] != 1 : !llvm::is_contained(axes, i))
      ns.push_back(h.shape[i]);
  h.shape = ns;
  return setHost(std::move(h));
}

bool FoldContext::reshape() {
  Host h = H(0);
  SmallVector<int64_t> s;
  if (!constInts(in[1], s, "shape"))
    return false;
  // 0 copies the input's dimension unless `allowzero` (then it is 0).
  bool allowZero = attrInt(node, "allowzero", 0);
  int64_t known = 1, neg = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0 && !allowZero && i < h.shape.size())
      s[i] = h.shape[i];
    if (s[i] == -1 && neg < 0)
      neg = i;
    else if (s[i] < 0 || __builtin_mul_overflow(known, s[i], &known))
      return fail("Reshape to an invalid shape (a negative dimension, two "
                  "-1s or an overflowing size); the file is corrupt");
  }
  // The element count is kept: the -1 takes what the others leave, whole.
  int64_t n = h.numel();
  if (neg >= 0 ? (known ? n % known != 0 : n != 0) : known != n) {
    std::string shape;
    for (int64_t d : s)
      shape += (shape.empty() ? "" : "x") + std::to_string(d);
    return fail("Reshape of " + Twine(n) + " elements to shape [" + shape +
                "] changes the element count; the file is corrupt");
  }
  if (neg >= 0)
    s[neg] = known ? n / known : 0;
  h.shape = s;
  return setHost(std::move(h));
}

bool FoldContext::concat() {
  if (!hasIn(0))
    return true;
  int64_t r = H(0).shape.size();
  int64_t axis = attrInt(node, "axis", 0);
  if (!axisIn(axis, r, "Concat axis"))
    return false;
  for (size_t i = 0; i < in.size(); ++i)
    if (hasIn(i) &&
        (H(i).shape.size() != size_t(r) || H(i).isF() != H(0).isF()))
      return fail("Concat of inputs with different ranks or element types; "
                  "the file is corrupt");
  for (size_t i = 0; i < in.size(); ++i)
    for (int64_t k = 0; hasIn(i) && k < r; ++k)
      if (k != axis && H(i).shape[k] != H(0).shape[k])
        return fail("Concat input " + Twine(i) + " has size " +
                    Twine(H(i).shape[k]) + " in dimension " + Twine(k) +
                    " where input 0 has " + Twine(H(0).shape[k]) +
                    "; the file is corrupt");
  Host h;
  h.dt = H(0).dt;
  h.shape = H(0).shape;
  h.shape[axis] = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (hasIn(i))
      h.shape[axis] += H(i).shape[axis];
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= h.shape[i];
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < in.size(); ++i) {
      if (!hasIn(i))
        continue;
      Host &x = H(i);
      int64_t chunk = x.numel() / std::max<int64_t>(outer, 1);
      for (int64_t k = 0; k < chunk; ++k) {
        if (h.isF())
          h.fv.push_back(x.f(o * chunk + k));
        else
          h.iv.push_back(x.iv[o * chunk + k]);
      }
    }
  return setHost(std::move(h));
}

bool FoldContext::gather() {
  Host &x = H(0), &idx = H(1);
  int64_t r = x.shape.size();
  int64_t axis = attrInt(node, "axis", 0);
  if (!axisIn(axis, r, "Gather axis"))
    return false;
  if (idx.isF())
    return fail("Gather indices must be integers; the file is corrupt");
  if (!idx.allConst())
    return true;
  Host h;
  h.dt = x.dt;
  for (int64_t i = 0; i < axis; ++i)
    h.shape.push_back(x.shape[i]);
  for (int64_t d : idx.shape)
    h.shape.push_back(d);
  for (int64_t i = axis + 1; i < r; ++i)
    h.shape.push_back(x.shape[i]);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= x.shape[i];
  for (int64_t i = axis + 1; i < r; ++i)
    inner *= x.shape[i];
  for (int64_t o = 0; o < outer; ++o)
    for (const Dim &id : idx.iv) {
      int64_t k = id.c < 0 ? id.c + x.shape[axis] : id.c;
      if (k < 0 || k >= x.shape[axis])
        return fail("Gather index " + Twine(id.c) + " is out of range");
      for (int64_t j = 0; j < inner; ++j) {
        int64_t e = (o * x.shape[axis] + k) * inner + j;
        if (h.isF())
          h.fv.push_back(x.fv[e]);
        else
          h.iv.push_back(x.iv[e]);
      }
    }
  return setHost(std::move(h));
}

bool FoldContext::slice() {
  Host &x = H(0);
  if (x.shape.size() != 1)
    return true;
  SmallVector<int64_t> st, en, ax, sp;
  if (!constInts(in[1], st, "starts") || !constInts(in[2], en, "ends"))
    return false;
  if (hasIn(3) && !constInts(in[3], ax, "axes"))
    return false;
  if (hasIn(4) && !constInts(in[4], sp, "steps"))
    return false;
  if (st.size() != 1 || en.size() != 1 || ax.size() > 1 || sp.size() > 1 ||
      (ax.size() == 1 && ax[0] != 0 && ax[0] != -1))
    return fail("Slice of a 1-D value needs one start, one end and axis 0 "
                "(got " +
                Twine(st.size()) + " starts, " + Twine(en.size()) +
                " ends); the file is corrupt");
  int64_t n = x.shape[0];
  int64_t s = st[0], e = en[0], step = sp.empty() ? 1 : sp[0];
  if (step == 0)
    return fail("Slice with step 0 (the ONNX spec forbids it); the file is "
                "corrupt");
  // Clamped as the ONNX reference does; no index below leaves [0, n) and
  // the count is computed, not stepped to (a huge step cannot overflow).
  if (s < 0)
    s = std::max<int64_t>(s, -n) + n;
  if (e < 0)
    e = std::max<int64_t>(e, -n - 1) + n;
  Host h;
  h.dt = x.dt;
  auto take = [&](int64_t i) {
    h.isF() ? h.fv.push_back(x.fv[i]) : h.iv.push_back(x.iv[i]);
  };
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, n);
    e = std::clamp<int64_t>(e, 0, n);
    int64_t count = e > s ? (e - s - 1) / step + 1 : 0;
    for (int64_t k = 0; k < count; ++k)
      take(s + k * step);
  } else {
    s = std::clamp<int64_t>(s, -1, n - 1);
    e = std::clamp<int64_t>(e, -1, n - 1);
    int64_t count =
        s > e ? (s - e - 1) / (step == INT64_MIN ? INT64_MAX : -step) + 1 : 0;
    for (int64_t k = 0; k < count; ++k)
      take(s + k * step);
  }
  h.shape = {int64_t(h.isF() ? h.fv.size() : h.iv.size())};
  return setHost(std::move(h));
}

bool FoldContext::constantOfShape() {
  SmallVector<int64_t> s;
  SmallVector<Dim> ds;
  if (!hostInts(in[0], ds, "shape"))
    return false;
  for (const Dim &d : ds) {
    if (!d.isConst())
      return true; // emitted as a broadcast
    if (d.c < 0)
      return fail("ConstantOfShape with a negative dimension " + Twine(d.c) +
                  "; the file is corrupt");
    s.push_back(d.c);
  }
  Host h;
  h.dt = DT_F32;
  double v = 0;
  if (const auto *a = attr(node, "value")) {
    Host vv;
    if (!load(a->t(), vv, "value"))
      return false;
    if (vv.numel() != 1)
      return fail("ConstantOfShape 'value' must hold one element; the file "
                  "is corrupt");
    h.dt = vv.dt;
    v = vv.f(0);
  }
  h.shape = s;
  int64_t n = h.numel();
  if (n < 0 || n > kInlineLimit || n * dtBytes(h.dt) > kInlineLimit)
    return true;
  if (h.isF())
    h.fv.assign(n, v);
  else
    h.iv.assign(n, Dim::of(int64_t(v)));
  return setHost(std::move(h));
}

bool FoldContext::range() {
  Host &s = H(0), &l = H(1), &d = H(2);
  if (!s.isF() && (!s.allConst() || !l.allConst() || !d.allConst()))
    return true;
  if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1)
    return fail("Range start, limit and delta must be scalars; the file is "
                "corrupt");
  if (s.isF() != l.isF() || s.isF() != d.isF())
    return fail("Range start, limit and delta must have one element type; "
                "the file is corrupt");
  if (!s.isF()) {
    // Integers exactly: (limit - start) and the count in 128 bits; every
    // element lies between start and limit, so it fits int64.
    int64_t a = s.iv[0].c, lim = l.iv[0].c, dd = d.iv[0].c;
    if (dd == 0)
      return fail("Range with a zero step");
    __int128 diff = __int128(lim) - a;
    __int128 steps = diff / dd + ((diff % dd != 0) && ((diff > 0) == (dd > 0)));
    if (steps >= kInlineLimit)
      return fail("Range is too long (start " + std::to_string(a) + ", limit " +
                  std::to_string(lim) + ", delta " + std::to_string(dd) + ")");
    Host h;
    h.dt = s.dt;
    h.shape = {std::max<int64_t>(int64_t(steps), 0)};
    for (int64_t i = 0; i < h.shape[0]; ++i)
      h.iv.push_back(Dim::of(int64_t(a + __int128(i) * dd)));
    return setHost(std::move(h));
  }
  double a = s.f(0), lim = l.f(0), dd = d.f(0);
  if (dd == 0)
    return fail("Range with a zero step");
  double steps = std::ceil((lim - a) / dd);
  if (!std::isfinite(a) || !std::isfinite(lim) || !std::isfinite(dd) ||
      !(steps < double(kInlineLimit)))
    return fail("Range is too long or not finite (start " + std::to_string(a) +
                ", limit " + std::to_string(lim) + ", delta " +
                std::to_string(dd) + ")");
  int64_t n = std::max<int64_t>(int64_t(steps), 0);
  Host h;
  h.dt = s.dt;
  h.shape = {n};
  for (int64_t i = 0; i < n; ++i)
    h.fv.push_back(a + i * dd);
  return setHost(std::move(h));
}

bool FoldContext::trilu() {
  Host h = H(0);
  int64_t k = 0;
  if (hasIn(1)) {
    SmallVector<int64_t> kk;
    if (!constInts(in[1], kk, "k"))
      return false;
    if (kk.size() != 1)
      return fail("Trilu 'k' must be a scalar");
    k = std::clamp<int64_t>(kk[0], -kMaxDim, kMaxDim);
  }
  bool upper = attrInt(node, "upper", 1);
  if (h.shape.size() < 2)
    return fail("Trilu needs an input of rank >= 2; the file is corrupt");
  int64_t r = h.shape.size(), R = h.shape[r - 2], C = h.shape[r - 1];
  if (R == 0 || C == 0)
    return setHost(std::move(h));
  for (int64_t e = 0; e < h.numel(); ++e) {
    int64_t i = (e / C) % R, j = e % C;
    bool keep = upper ? j - i >= k : j - i <= k;
    if (!keep) {
      if (h.isF())
        h.fv[e] = 0;
      else
        h.iv[e] = Dim::of(0);
    }
  }
  return setHost(std::move(h));
}

bool FoldContext::expand() {
  Host &x = H(0);
  SmallVector<int64_t> s;
  if (!H(1).allConst())
    return true; // a run-time shape: emitted
  if (!constInts(in[1], s, "shape"))
    return false;
  if (llvm::any_of(s, [](int64_t d) { return d < 0; }))
    return fail("Expand to a negative dimension; the file is corrupt");
  SmallVector<Dim> xs, ss, os;
  for (int64_t d : x.shape)
    xs.push_back(Dim::of(d));
  for (int64_t d : s)
    ss.push_back(Dim::of(d));
  if (!broadcast(xs, ss, os))
    return false;
  Host h;
  h.dt = x.dt;
  for (const Dim &d : os)
    h.shape.push_back(d.c);
  if (h.numel() < 0 || h.numel() > kInlineLimit ||
      h.numel() * dtBytes(h.dt) > kInlineLimit)
    return true;
  for (int64_t e = 0; e < h.numel(); ++e) {
    int64_t k = bcastIndex(e, h.shape, x.shape);
    h.isF() ? h.fv.push_back(x.fv[k]) : h.iv.push_back(x.iv[k]);
  }
  return setHost(std::move(h));
}

bool FoldContext::transpose() {
  Host &x = H(0);
  int64_t r = x.shape.size();
  SmallVector<int64_t> perm;
  if (auto p = attrInts(node, "perm"))
    perm = *p;
  else
    for (int64_t i = r - 1; i >= 0; --i)
      perm.push_back(i);
  {
    SmallVector<int64_t> sorted(perm);
    llvm::sort(sorted);
    // The size first: an empty or short perm would index past it.
    bool ok = sorted.size() == size_t(r);
    for (int64_t i = 0; ok && i < r; ++i)
      ok = sorted[i] == i;
    if (!ok)
      return fail("Transpose 'perm' is not a permutation of the input's " +
                  Twine(r) + " axes; the file is corrupt");
  }
  Host h;
  h.dt = x.dt;
  for (int64_t p : perm)
    h.shape.push_back(x.shape[p]);
  SmallVector<int64_t> xs = stridesOf(x.shape), os = stridesOf(h.shape);
  for (int64_t e = 0; e < h.numel(); ++e) {
    int64_t k = 0;
    for (int64_t i = 0; i < r; ++i)
      k += ((e / os[i]) % h.shape[i]) * xs[perm[i]];
    h.isF() ? h.fv.push_back(x.fv[k]) : h.iv.push_back(x.iv[k]);
  }
  return setHost(std::move(h));
}

bool FoldContext::unary() {
  Host h = H(0);
  if (h.isF()) {
    for (double &x : h.fv) {
      if (op == "Neg")
        x = -x;
      else if (op == "Sqrt")
        x = std::sqrt(x);
      else if (op == "Reciprocal")
        x = 1 / x;
      else if (op == "Exp")
        x = std::exp(x);
      else if (op == "Log")
        x = std::log(x);
      else if (op == "Abs")
        x = std::fabs(x);
      else if (op == "Erf")
        x = std::erf(x);
      else if (op == "Tanh")
        x = std::tanh(x);
      else if (op == "Sigmoid")
        x = 1 / (1 + std::exp(-x));
      else if (op == "Relu")
        x = std::max(x, 0.0);
      else
        return true;
    }
  } else {
    if (!h.allConst())
      return true;
    for (Dim &d : h.iv) {
      if (op == "Neg")
        d.c = -d.c;
      else if (op == "Not")
        d.c = !d.c;
      else if (op == "Abs")
        d.c = std::abs(d.c);
      else if (op == "Relu")
        d.c = std::max<int64_t>(d.c, 0);
      else
        return true;
    }
  }
  return setHost(std::move(h));
}

bool FoldContext::binary() {
  // Max and Min are variadic: one input (or more than two) is left to emit.
  if (in.size() != 2 || !hasIn(0) || !hasIn(1))
    return true;
  Host &x = H(0), &y = H(1);
  if (x.isF() != y.isF())
    return fail("inputs of different element types (" + Twine(x.dt) + " and " +
                Twine(y.dt) + "); the file is corrupt");
  SmallVector<int64_t> os;
  {
    SmallVector<Dim> a, c, o;
    for (int64_t d : x.shape)
      a.push_back(Dim::of(d));
    for (int64_t d : y.shape)
      c.push_back(Dim::of(d));
    if (!broadcast(a, c, o))
      return false;
    for (const Dim &d : o)
      os.push_back(d.c);
  }
  {
    Host probe;
    probe.shape = os;
    if (probe.numel() < 0 || probe.numel() > kInlineLimit)
      return true;
  }
  bool cmp = op == "Equal" || op == "Less" || op == "Greater" ||
             op == "LessOrEqual" || op == "GreaterOrEqual";
  Host h;
  h.dt = cmp ? DT_BOOL : x.dt;
  h.shape = os;
  for (int64_t e = 0; e < h.numel(); ++e) {
    int64_t i = bcastIndex(e, os, x.shape), j = bcastIndex(e, os, y.shape);
    if (x.isF()) {
      double a = x.fv[i], c = y.f(j), r;
      if (op == "Add")
        r = a + c;
      else if (op == "Sub")
        r = a - c;
      else if (op == "Mul")
        r = a * c;
      else if (op == "Div")
        r = a / c;
      else if (op == "Pow")
        r = std::pow(a, c);
      else if (op == "Max")
        r = std::max(a, c);
      else if (op == "Min")
        r = std::min(a, c);
      else if (op == "Equal")
        r = a == c;
      else if (op == "Less")
        r = a < c;
      else if (op == "Greater")
        r = a > c;
      else if (op == "LessOrEqual")
        r = a <= c;
      else if (op == "GreaterOrEqual")
        r = a >= c;
      else
        return true;
      if (cmp)
        h.iv.push_back(Dim::of(r != 0));
      else
        h.fv.push_back(r);
      continue;
    }
    const Dim &a = x.iv[i], &c = y.iv[j];
    std::optional<Dim> r;
    if (op == "Mul")
      r = mulDim(a, c);
    else if (op == "Div") {
      if (a.isConst() && c.isConst()) {
        if (c.c == 0)
          return fail("integer division by zero");
        if (c.c == -1 && a.c == INT64_MIN)
          return fail("integer division overflows");
        // ONNX integer Div truncates toward zero.
        r = Dim::of(a.c / c.c);
      } else
        r = divDim(a, c);
    } else if (op == "Equal" && a == c)
      r = Dim::of(1);
    else if (a.isConst() && c.isConst()) {
      int64_t p = a.c, q = c.c, v;
      // Wrapping arithmetic, as the int64 kernels would: no UB on a file's
      // values.
      if (op == "Add")
        v = int64_t(uint64_t(p) + uint64_t(q));
      else if (op == "Sub")
        v = int64_t(uint64_t(p) - uint64_t(q));
      else if (op == "Equal")
        v = p == q;
      else if (op == "Less")
        v = p < q;
      else if (op == "Greater")
        v = p > q;
      else if (op == "LessOrEqual")
        v = p <= q;
      else if (op == "GreaterOrEqual")
        v = p >= q;
      else if (op == "And")
        v = p && q;
      else if (op == "Or")
        v = p || q;
      else if (op == "Max")
        v = std::max(p, q);
      else if (op == "Min")
        v = std::min(p, q);
      else if (op == "Mod") {
        if (!q)
          return fail("modulo by zero");
        // fmod=1: the sign of the dividend (C's %); the default fmod=0:
        // the sign of the divisor (Python's %).
        v = q == -1 ? 0 : p % q;
        if (!attrInt(node, "fmod", 0) && v != 0 && ((v < 0) != (q < 0)))
          v += q;
      } else if (op == "Pow") {
        // By squaring (a file's exponent may be 2^62), wrapping.
        uint64_t base = uint64_t(p), acc = 1;
        for (int64_t e = std::max<int64_t>(q, 0); e; e >>= 1, base *= base)
          if (e & 1)
            acc *= base;
        v = int64_t(acc);
      } else
        return true;
      r = Dim::of(v);
    } else if (op == "Max" && c.isConst() && c.c <= 1)
      r = a; // max(dyn, 1)
    else if (op == "Max" && a.isConst() && a.c <= 1)
      r = c;
    if (!r)
      return true;
    h.iv.push_back(*r);
  }
  return setHost(std::move(h));
}

bool FoldContext::where() {
  Host &cnd = H(0), &x = H(1), &y = H(2);
  SmallVector<Dim> a, c, d, o1, o;
  for (int64_t k : cnd.shape)
    a.push_back(Dim::of(k));
  for (int64_t k : x.shape)
    c.push_back(Dim::of(k));
  for (int64_t k : y.shape)
    d.push_back(Dim::of(k));
  if (!broadcast(a, c, o1) || !broadcast(o1, d, o))
    return false;
  if (cnd.isF() || x.isF() != y.isF())
    return fail("Where needs a bool condition and two inputs of one element "
                "type; the file is corrupt");
  Host h;
  h.dt = x.dt;
  for (const Dim &k : o)
    h.shape.push_back(k.c);
  if (h.numel() < 0 || h.numel() > kInlineLimit)
    return true;
  if (!cnd.allConst())
    return true;
  for (int64_t e = 0; e < h.numel(); ++e) {
    bool t = cnd.iv[bcastIndex(e, h.shape, cnd.shape)].c != 0;
    Host &src = t ? x : y;
    int64_t k = bcastIndex(e, h.shape, src.shape);
    h.isF() ? h.fv.push_back(src.fv[k]) : h.iv.push_back(src.iv[k]);
  }
  return setHost(std::move(h));
}

/// One op type's folder. `hostInputs`: it runs only when every present
/// input is known at import time (and well formed); Shape, Size and
/// Constant read no input values.
struct OnnxFold {
  bool (FoldContext::*fold)() = nullptr;
  bool hostInputs = true;
};

const llvm::StringMap<OnnxFold> &onnxFolds() {
  static const llvm::StringMap<OnnxFold> table = [] {
    llvm::StringMap<OnnxFold> t;
    t["Shape"] = {&FoldContext::shape, false};
    t["Size"] = {&FoldContext::size, false};
    t["Constant"] = {&FoldContext::constant, false};
    t["Identity"] = {&FoldContext::identity};
    t["Cast"] = {&FoldContext::cast};
    t["Squeeze"] = {&FoldContext::squeeze};
    t["Unsqueeze"] = {&FoldContext::squeeze};
    t["Reshape"] = {&FoldContext::reshape};
    t["Concat"] = {&FoldContext::concat};
    t["Gather"] = {&FoldContext::gather};
    t["Slice"] = {&FoldContext::slice};
    t["ConstantOfShape"] = {&FoldContext::constantOfShape};
    t["Range"] = {&FoldContext::range};
    t["Trilu"] = {&FoldContext::trilu};
    t["Expand"] = {&FoldContext::expand};
    t["Transpose"] = {&FoldContext::transpose};
    t["Where"] = {&FoldContext::where};
    for (StringRef op : {"Neg", "Sqrt", "Reciprocal", "Exp", "Log", "Abs",
                         "Not", "Erf", "Tanh", "Sigmoid", "Relu"})
      t[op] = {&FoldContext::unary};
    for (StringRef op :
         {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "And",
          "Or", "Max", "Min", "LessOrEqual", "GreaterOrEqual", "Mod"})
      t[op] = {&FoldContext::binary};
    return t;
  }();
  return table;
}

} // namespace

bool Importer::tryFold(const onnx::NodeProto &node, std::vector<Val *> &in,
                       std::vector<Val> &out, bool &folded) {
  folded = false;
  auto it = onnxFolds().find(node.op_type());
  if (it == onnxFolds().end())
    return true;
  FoldContext c{*this, node, in, out, folded, node.op_type()};
  if (it->second.hostInputs) {
    for (Val *v : in)
      if (!isHostValue(v))
        return true;
    // A value a file made inconsistent never reaches a folder.
    for (size_t i = 0; i < in.size(); ++i)
      if (c.hasIn(i) && !c.H(i).consistent())
        return fail("input " + Twine(i) + " is malformed; the file is corrupt");
  }
  return (c.*(it->second.fold))();
}

bool Importer::isHostValue(Val *v) {
  if (!v || !v->present)
    return true;
  if (!v->weightName.empty()) {
    const onnx::TensorProto *t = inits.lookup(v->weightName);
    int64_t n = 1;
    for (int64_t d : t->dims())
      n *= d;
    // Integer initializers and scalars fold; float weights stay weights.
    if (isFloatDT(t->data_type()) && n > 1)
      return false;
    if (n * dtBytes(t->data_type()) > kInlineLimit)
      return false;
    return initHost(v->weightName, *v) && v->host.has_value();
  }
  return v->host.has_value();
}

} // namespace loom::onnx_import
