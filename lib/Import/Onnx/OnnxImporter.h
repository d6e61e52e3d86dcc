//===- OnnxImporter.h - the ONNX importer's values and emitters -*- C++ -*-===//
//
// Internal to lib/Import: the importer's value model (folded host tensors
// with symbolic dimensions, emitted SSA values) and the table of emitters by
// op type. Each family of ONNX ops has its own file here (Elementwise,
// Matmul, Normalization, Shape, Conv) that registers an `OnnxOp` per op type:
// its emitter, the attributes it reads, the attributes that do not change
// the math, and the inputs it cannot do without. An attribute on neither
// list is refused by name, so a new ONNX attribute never goes unnoticed.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_IMPORT_ONNX_ONNXIMPORTER_H
#define LOOM_LIB_IMPORT_ONNX_ONNXIMPORTER_H

#include "lib/Import/ImportFailure.h"
#include "lib/Import/OnnxWire.h"

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Support/Axis.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include "onnx/onnx_pb.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loom::onnx_import {

using namespace mlir;

inline constexpr int64_t kMaxDim = int64_t(1) << 40;
inline constexpr int64_t kInlineLimit = 64 * 1024;

//===----------------------------------------------------------------------===//
// Symbolic dimensions and host tensors
//===----------------------------------------------------------------------===//

/// `c * prod(syms)`: a dimension or an integer element of a shape tensor.
struct Dim {
  int64_t c = 0;
  SmallVector<int, 2> syms; // sorted
  static Dim of(int64_t v) { return Dim{v, {}}; }
  bool isConst() const { return syms.empty(); }
  bool operator==(const Dim &o) const { return c == o.c && syms == o.syms; }
  bool operator!=(const Dim &o) const { return !(*this == o); }
};

inline std::optional<Dim> mulDim(const Dim &a, const Dim &b) {
  Dim r;
  if (__builtin_mul_overflow(a.c, b.c, &r.c))
    return std::nullopt;
  r.syms = a.syms;
  r.syms.append(b.syms.begin(), b.syms.end());
  llvm::sort(r.syms);
  return r;
}

/// Exact division, when `b`'s symbols are a sub-multiset of `a`'s.
inline std::optional<Dim> divDim(const Dim &a, const Dim &b) {
  if (b.c == 0 || a.c % b.c != 0)
    return std::nullopt;
  Dim r{a.c / b.c, a.syms};
  for (int s : b.syms) {
    auto *it = llvm::find(r.syms, s);
    if (it == r.syms.end())
      return std::nullopt;
    r.syms.erase(it);
  }
  return r;
}

enum DType : int {
  DT_F32 = 1,
  DT_U8 = 2,
  DT_I8 = 3,
  DT_I16 = 5,
  DT_I32 = 6,
  DT_I64 = 7,
  DT_BOOL = 9,
  DT_F16 = 10,
  DT_F64 = 11,
  DT_BF16 = 16
};
inline bool isFloatDT(int dt) {
  return dt == DT_F32 || dt == DT_F16 || dt == DT_F64 || dt == DT_BF16;
}
inline int64_t dtBytes(int dt) {
  switch (dt) {
  case DT_F32:
  case DT_I32:
    return 4;
  case DT_F16:
  case DT_BF16:
  case DT_I16:
    return 2;
  case DT_F64:
  case DT_I64:
    return 8;
  case DT_U8:
  case DT_I8:
  case DT_BOOL:
    return 1;
  default:
    return 0;
  }
}

/// A tensor known at import time. Integer/bool elements are symbolic dims.
struct Host {
  int dt = DT_I64;
  SmallVector<int64_t> shape;
  std::vector<Dim> iv;
  std::vector<double> fv;
  /// The element count; -1 for a negative or overflowing shape (a folded
  /// value with such a shape is refused by setHost).
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      if (d < 0 || __builtin_mul_overflow(n, d, &n))
        return -1;
    return n;
  }
  /// Whether the shape is sane and the data holds exactly its elements.
  bool consistent() const {
    int64_t n = numel();
    if (n < 0 || n > kMaxDim)
      return false;
    return isF() ? int64_t(fv.size()) == n && iv.empty()
                 : int64_t(iv.size()) == n && fv.empty();
  }
  bool isF() const { return isFloatDT(dt); }
  double f(int64_t i) const { return isF() ? fv[i] : double(iv[i].c); }
  bool allConst() const {
    return llvm::all_of(iv, [](const Dim &d) { return d.isConst(); });
  }
};

/// A value of the graph: folded (host), emitted (v), or both.
struct Val {
  int dt = DT_F32;
  SmallVector<Dim> shape;
  Value v;
  std::optional<Host> host;
  /// An initializer not materialised yet.
  std::string weightName;
  bool present = true;
};

//===----------------------------------------------------------------------===//
// The importer
//===----------------------------------------------------------------------===//

struct OnnxOp;

/// The importer: the graph's values and the builder. The emitters of
/// Onnx/*.cpp use its helpers (materialize, broadcast, hostInts, ...).
class Importer {
public:
  Importer(MLIRContext *ctx, StringRef path, ImportFailure &failure)
      : ctx(ctx), b(ctx), path(path.str()), failure(failure) {}

  OwningOpRef<ModuleOp> run();
  /// Upgrades a model below opset 13 in place (OnnxConvert.h).
  bool upgradeOpset(int64_t opset);

  MLIRContext *ctx;
  OpBuilder b;
  std::string path, dir;
  ImportFailure &failure;
  std::unique_ptr<llvm::MemoryBuffer> file;
  onnx::ModelProto model;
  OnnxRawIndex rawIndex;
  std::map<std::string, Val> vals;
  llvm::StringMap<const onnx::TensorProto *> inits;
  llvm::StringMap<int> symIds;
  int nextSym = 0;
  /// The location of the ops of the current node.
  Location loc = UnknownLoc::get(ctx);
  /// Where the current node is, for messages: "node 'n' (Op)".
  std::string where;

  /// Records the first failure, at the current node (or the file).
  bool fail(const Twine &msg) {
    failure.set(ctx, path, where, msg);
    return false;
  }
  /// Normalises the signed axis `a` of a rank-`r` value (loom::normAxis),
  /// or fails naming it: the one range check of an axis from a file
  /// (attributes, `axes` inputs, folded constants).
  bool axisIn(int64_t &a, int64_t r, const Twine &what) {
    if (!isValidAxis(a, r))
      return fail(what + " " + Twine(a) + " is out of range for rank " +
                  Twine(r) + "; the file is corrupt");
    a = normAxis(a, r);
    return true;
  }

  // Types.
  Type elemType(int dt) {
    switch (dt) {
    case DT_F32:
      return b.getF32Type();
    case DT_F16:
      return b.getF16Type();
    case DT_BF16:
      return b.getBF16Type();
    case DT_F64:
      return b.getF64Type();
    case DT_I64:
      return b.getI64Type();
    case DT_I32:
      return b.getI32Type();
    case DT_I16:
      return b.getIntegerType(16);
    case DT_I8:
    case DT_U8:
      return b.getIntegerType(8);
    case DT_BOOL:
      return b.getI1Type();
    default:
      return {};
    }
  }
  RankedTensorType typeOf(int dt, ArrayRef<Dim> shape) {
    SmallVector<int64_t> s;
    for (const Dim &d : shape)
      s.push_back(d.isConst() ? d.c : ShapedType::kDynamic);
    return RankedTensorType::get(s, elemType(dt));
  }
  /// A fresh dynamic dimension.
  Dim freshDim() { return Dim{1, {nextSym++}}; }
  /// Where each symbol can be read at run time: the first value seen with
  /// the symbol alone as a dimension (a graph input, or the result of an
  /// emitter that made a fresh dim), and that dimension.
  std::map<int, std::pair<Value, int64_t>> symSources;
  /// Records `v`'s dims that are one symbol as those symbols' sources.
  void noteSources(Value v, ArrayRef<Dim> shape) {
    for (auto [i, d] : llvm::enumerate(shape))
      if (v && d.c == 1 && d.syms.size() == 1)
        symSources.try_emplace(d.syms[0], v, int64_t(i));
  }
  /// `d` as a run-time index (tensor.dim of its symbols' sources times the
  /// constant); null, with a failure recorded, when a symbol has no source.
  Value dimValue(const Dim &d);
  /// The run-time sizes of `shape`'s dynamic dims, in order; false (a
  /// failure recorded) when one cannot be computed.
  bool dynamicSizes(ArrayRef<Dim> shape, SmallVector<Value> &out);

  bool load(const onnx::TensorProto &t, Host &h, StringRef what);
  bool initHost(StringRef name, Val &val);
  Value materialize(Val &val, StringRef name);
  bool readShape(const onnx::TypeProto &type, StringRef name, Val &val);
  bool importNode(const onnx::NodeProto &node);
  bool checkAttributes(const onnx::NodeProto &node, const OnnxOp &op);
  /// Folds the node when its op type has a folder (Onnx/Fold.cpp) and its
  /// inputs are known: `folded` and `out` set; false on a failure.
  bool tryFold(const onnx::NodeProto &node, std::vector<Val *> &in,
               std::vector<Val> &out, bool &folded);
  /// Whether `v` is known at import time (absent, folded, or a small
  /// integer or scalar initializer, read now).
  bool isHostValue(Val *v);
  bool broadcast(ArrayRef<Dim> a, ArrayRef<Dim> c, SmallVector<Dim> &out);
  Value reshapeTo(Val &x, ArrayRef<Dim> shape);
  bool hostInts(Val *v, SmallVector<Dim> &out, StringRef what);
  bool constInts(Val *v, SmallVector<int64_t> &out, StringRef what);
};

inline const onnx::AttributeProto *attr(const onnx::NodeProto &n,
                                        StringRef name) {
  for (const auto &a : n.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}
inline int64_t attrInt(const onnx::NodeProto &n, StringRef name, int64_t dflt) {
  const auto *a = attr(n, name);
  return a ? a->i() : dflt;
}
inline float attrFloat(const onnx::NodeProto &n, StringRef name, float dflt) {
  const auto *a = attr(n, name);
  return a ? a->f() : dflt;
}
inline std::optional<SmallVector<int64_t>> attrInts(const onnx::NodeProto &n,
                                                    StringRef name) {
  const auto *a = attr(n, name);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

//===----------------------------------------------------------------------===//
// Emitters by op type
//===----------------------------------------------------------------------===//

/// What an emitter gets: one node whose inputs are not all known at import
/// time, its input values (null: an absent optional input) and the results
/// it appends, one per output.
struct EmitContext {
  Importer &im;
  const onnx::NodeProto &node;
  std::vector<Val *> &in;
  std::vector<Val> &out;

  OpBuilder &b() { return im.b; }
  Location loc() { return im.loc; }
  const std::string &op() const { return node.op_type(); }
  bool hasIn(size_t i) const {
    return i < in.size() && in[i] && in[i]->present;
  }
  int64_t rank(int i) const { return int64_t(in[i]->shape.size()); }
  int dt(int i) const { return in[i]->dt; }
  const SmallVector<Dim> &shape(int i) const { return in[i]->shape; }
  /// Input `i` as an SSA value (materialised); null after a failure.
  Value input(int i) {
    if (!hasIn(i)) {
      im.fail("input " + Twine(i) + " is missing");
      return {};
    }
    return im.materialize(*in[i], node.input(i));
  }
  /// Appends a result; false when `v` is null (a failure was recorded).
  bool result(int dt, SmallVector<Dim> shape, Value v) {
    im.noteSources(v, shape);
    Val r;
    r.dt = dt;
    r.shape = std::move(shape);
    r.v = v;
    out.push_back(std::move(r));
    return v != nullptr;
  }
  RankedTensorType typeOf(int dt, ArrayRef<Dim> shape) {
    return im.typeOf(dt, shape);
  }
  bool fail(const Twine &msg) { return im.fail(msg); }
  bool axisIn(int64_t &a, int64_t r, const Twine &what) {
    return im.axisIn(a, r, what);
  }
};

using Emitter = bool (*)(EmitContext &);

/// One ONNX op type (default domain, opsets 13-21).
struct OnnxOp {
  Emitter emit = nullptr;
  /// Attributes the importer reads (folder or emitter).
  SmallVector<StringRef, 4> attributes;
  /// Attributes that do not change the result for the types Loom imports
  /// (e.g. Cast's `saturate`, which only applies to float8).
  SmallVector<StringRef, 2> noMath;
  /// The number of leading inputs the op cannot do without.
  int minInputs = 1;
};

using OnnxOpTable = llvm::StringMap<OnnxOp>;

/// Each family's file adds its op types.
void registerElementwiseOps(OnnxOpTable &table);
void registerActivationOps(OnnxOpTable &table);
void registerMatmulOps(OnnxOpTable &table);
void registerNormalizationOps(OnnxOpTable &table);
void registerShapeOps(OnnxOpTable &table);
void registerConvOps(OnnxOpTable &table);
void registerLrnOps(OnnxOpTable &table);

/// All of them (built once).
const OnnxOpTable &onnxOps();

using loom::normAxis;

} // namespace loom::onnx_import

#endif // LOOM_LIB_IMPORT_ONNX_ONNXIMPORTER_H
