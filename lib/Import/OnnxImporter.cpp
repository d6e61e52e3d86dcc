//===- OnnxImporter.cpp - ONNX ModelProto to loom ops ---------------------===//
//
// Reads a .onnx file with the ONNX project's protobuf library and emits one
// `func.func @main` of loom ops on global tensors.
//
// Every ONNX value is either *folded* (a host tensor known at import time:
// constants, shapes and everything computed only from them) or *emitted* (an
// SSA value). Integer host tensors hold symbolic dimensions (`c * d0 * d1`,
// where d_i is a dynamic dimension of a graph input), so the shape
// subgraphs exporters write (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape) fold away even when batch and sequence are dynamic, and the
// dynamic dims stay `?` in the loom types.
//
// Initializers become `loom.weight "name" from <"file", offset = N>`: the
// offset of their raw_data inside the .onnx itself (found by OnnxWire.cpp)
// or inside their external-data file. Small non-float tensors and scalars
// become loom.constant.
//
// The folds are here; what is emitted comes from the table of emitters by
// op type (Onnx/*.cpp, OnnxImporter.h), which also lists every attribute an
// op may carry. Failures are recorded with their place (ImportFailure.h):
// the node ("node 'n' (Op)"), the tensor or graph input, or the file.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Onnx/OnnxImporter.h"
#include "lib/Import/Import.h"
#include "lib/Import/OnnxConvert.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cctype>
#include <cmath>
#include <limits>

namespace loom::onnx_import {

/// Reads a TensorProto's elements into a host tensor (inline data only;
/// external data is read from its file).
/// "string (8)": an ONNX element type by name and code, for messages.
static std::string dtName(int dt) {
  std::string n = onnx::TensorProto_DataType_IsValid(dt)
                      ? onnx::TensorProto_DataType_Name(dt)
                      : std::string("unknown");
  for (char &ch : n)
    ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return n + " (" + std::to_string(dt) + ")";
}

bool Importer::load(const onnx::TensorProto &t, Host &h, StringRef what) {
  h.dt = t.data_type();
  h.shape.clear();
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > kMaxDim || __builtin_mul_overflow(n, d, &n) || n > kMaxDim)
      return fail("tensor '" + what +
                  "' has a negative or overflowing "
                  "dimension; the file is corrupt");
    h.shape.push_back(d);
  }
  int64_t eb = dtBytes(h.dt);
  if (!eb)
    return fail("tensor '" + what + "' has element type " + Twine(h.dt) +
                ", which the importer does not support (use f32/f16/bf16/"
                "f64/i64/i32/i8/u8/bool)");
  std::string raw;
  StringRef bytes;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string loc;
    int64_t off = 0;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        loc = kv.value();
      else if (kv.key() == "offset")
        off = std::atoll(kv.value().c_str());
    }
    SmallString<256> p(dir);
    llvm::sys::path::append(p, loc);
    auto buf = llvm::MemoryBuffer::getFile(p);
    if (!buf)
      return fail("tensor '" + what + "': cannot read external data file '" +
                  p + "'");
    if (uint64_t(off) + uint64_t(n * eb) > (*buf)->getBufferSize())
      return fail("tensor '" + what + "': external data [" + Twine(off) + ", " +
                  Twine(off + n * eb) + ") runs past the end of '" + p +
                  "'; the file is truncated");
    raw = (*buf)->getBuffer().substr(off, n * eb).str();
    bytes = raw;
  } else if (t.has_raw_data()) {
    bytes = t.raw_data();
  }
  auto fill = [&](auto getter, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      getter(i);
  };
  if (!bytes.empty() || n == 0) {
    if (int64_t(bytes.size()) != n * eb)
      return fail("tensor '" + what + "' has " + Twine(bytes.size()) +
                  " bytes of data but its shape needs " + Twine(n * eb));
    const char *p = bytes.data();
    fill(
        [&](int64_t i) {
          switch (h.dt) {
          case DT_F32: {
            float x;
            memcpy(&x, p + 4 * i, 4);
            h.fv.push_back(x);
            break;
          }
          case DT_F64: {
            double x;
            memcpy(&x, p + 8 * i, 8);
            h.fv.push_back(x);
            break;
          }
          case DT_F16: {
            uint16_t x;
            memcpy(&x, p + 2 * i, 2);
            APFloat f(APFloat::IEEEhalf(), APInt(16, x));
            h.fv.push_back(f.convertToFloat());
            break;
          }
          case DT_BF16: {
            uint16_t x;
            memcpy(&x, p + 2 * i, 2);
            uint32_t w = uint32_t(x) << 16;
            float f;
            memcpy(&f, &w, 4);
            h.fv.push_back(f);
            break;
          }
          case DT_I64: {
            int64_t x;
            memcpy(&x, p + 8 * i, 8);
            h.iv.push_back(Dim::of(x));
            break;
          }
          case DT_I32: {
            int32_t x;
            memcpy(&x, p + 4 * i, 4);
            h.iv.push_back(Dim::of(x));
            break;
          }
          case DT_I16: {
            int16_t x;
            memcpy(&x, p + 2 * i, 2);
            h.iv.push_back(Dim::of(x));
            break;
          }
          case DT_I8:
            h.iv.push_back(Dim::of(int8_t(p[i])));
            break;
          case DT_U8:
          case DT_BOOL:
            h.iv.push_back(Dim::of(uint8_t(p[i])));
            break;
          }
        },
        n);
    return true;
  }
  // Typed fields.
  int64_t have = 0;
  switch (h.dt) {
  case DT_F32:
    have = t.float_data_size();
    for (float x : t.float_data())
      h.fv.push_back(x);
    break;
  case DT_F64:
    have = t.double_data_size();
    for (double x : t.double_data())
      h.fv.push_back(x);
    break;
  case DT_I64:
    have = t.int64_data_size();
    for (int64_t x : t.int64_data())
      h.iv.push_back(Dim::of(x));
    break;
  case DT_I32:
  case DT_I16:
  case DT_I8:
  case DT_U8:
  case DT_BOOL:
    have = t.int32_data_size();
    for (int32_t x : t.int32_data())
      h.iv.push_back(Dim::of(x));
    break;
  case DT_F16:
  case DT_BF16:
    have = t.int32_data_size();
    for (int32_t x : t.int32_data()) {
      if (h.dt == DT_F16) {
        APFloat f(APFloat::IEEEhalf(), APInt(16, uint16_t(x)));
        h.fv.push_back(f.convertToFloat());
      } else {
        uint32_t w = uint32_t(uint16_t(x)) << 16;
        float f;
        memcpy(&f, &w, 4);
        h.fv.push_back(f);
      }
    }
    break;
  }
  if (have != n)
    return fail("tensor '" + what + "' has " + Twine(have) +
                " elements but its shape needs " + Twine(n));
  return true;
}

/// Loads an initializer's host data on demand (small ones only).
bool Importer::initHost(StringRef name, Val &val) {
  if (val.host || val.weightName.empty())
    return true;
  const onnx::TensorProto *t = inits.lookup(name);
  Host h;
  if (!load(*t, h, name))
    return false;
  val.host = std::move(h);
  return true;
}

Value Importer::materialize(Val &val, StringRef name) {
  if (val.v)
    return val.v;
  RankedTensorType type = typeOf(val.dt, val.shape);
  if (!type.getElementType()) {
    fail("value '" + name + "' has an unsupported element type");
    return {};
  }
  // Float initializers with more than one element are weights.
  if (!val.weightName.empty() && isFloatDT(val.dt) &&
      type.getNumElements() > 1) {
    const onnx::TensorProto *t = inits.lookup(val.weightName);
    std::string file;
    int64_t offset = 0;
    if (t->data_location() == onnx::TensorProto::EXTERNAL) {
      std::string locName;
      for (const auto &kv : t->external_data()) {
        if (kv.key() == "location")
          locName = kv.value();
        else if (kv.key() == "offset")
          offset = std::atoll(kv.value().c_str());
      }
      SmallString<256> p(dir);
      llvm::sys::path::append(p, locName);
      uint64_t size = 0;
      if (llvm::sys::fs::file_size(p, size)) {
        fail("weight '" + val.weightName +
             "': cannot read its external data "
             "file '" +
             p + "'");
        return {};
      }
      uint64_t need = uint64_t(type.getNumElements()) * dtBytes(val.dt);
      if (offset < 0 || uint64_t(offset) + need > size) {
        fail("weight '" + val.weightName + "': external data [" +
             Twine(offset) + ", " + Twine(offset + need) +
             ") runs past the end of '" + p + "' (" + Twine(size) +
             " bytes); the file is truncated or the offset is wrong");
        return {};
      }
      file = p.str().str();
    } else {
      auto it = rawIndex.initializers.find(val.weightName);
      if (it == rawIndex.initializers.end()) {
        // Typed (non-raw) fields: small enough to be a constant, or not
        // referenceable in place.
        if (type.getNumElements() * dtBytes(val.dt) > kInlineLimit) {
          fail("weight '" + val.weightName +
               "' is stored in typed fields, "
               "not raw_data; re-save the model with raw_data or external "
               "data (onnx.save(..., save_as_external_data=True))");
          return {};
        }
      } else {
        uint64_t need = uint64_t(type.getNumElements()) * dtBytes(val.dt);
        if (it->second.size != need) {
          fail("weight '" + val.weightName + "' has " + Twine(it->second.size) +
               " bytes of raw_data but its shape "
               "needs " +
               Twine(need) + "; the file is corrupt");
          return {};
        }
        file = path;
        offset = it->second.offset;
      }
    }
    if (!file.empty()) {
      auto src = ExternAttr::get(ctx, b.getStringAttr(file), offset);
      val.v =
          WeightOp::create(b, loc, type, b.getStringAttr(val.weightName), src);
      return val.v;
    }
  }
  if (!val.weightName.empty() && !initHost(val.weightName, val))
    return {};
  if (!val.host) {
    fail("value '" + name + "' has no producer");
    return {};
  }
  Host &h = *val.host;
  if (!h.allConst()) {
    fail("value '" + name +
         "' depends on a dynamic dimension at run time "
         "(a shape computation the importer cannot fold); export with static "
         "shapes for this part of the graph");
    return {};
  }
  if (h.numel() * dtBytes(h.dt) > kInlineLimit) {
    fail("constant '" + name + "' (" + Twine(h.numel() * dtBytes(h.dt)) +
         " bytes) is too large to inline; store it as an initializer");
    return {};
  }
  SmallVector<int64_t> s(h.shape.begin(), h.shape.end());
  auto ct = RankedTensorType::get(s, elemType(h.dt));
  DenseElementsAttr attr;
  Type et = ct.getElementType();
  if (isa<FloatType>(et)) {
    SmallVector<APFloat> xs;
    for (double d : h.fv) {
      APFloat f(d);
      bool lost;
      f.convert(cast<FloatType>(et).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      xs.push_back(f);
    }
    attr = DenseElementsAttr::get(ct, xs);
  } else {
    unsigned w = et.getIntOrFloatBitWidth();
    SmallVector<APInt> xs;
    for (const Dim &d : h.iv) {
      // A folded value must fit its element type (signed or unsigned, as
      // the ONNX type says either); one that does not is refused, not
      // truncated (APInt asserts on it, a release build truncated it).
      if (w > 1 && w < 64 && !llvm::isIntN(w, d.c) &&
          !llvm::isUIntN(w, uint64_t(d.c))) {
        fail("the folded value " + Twine(d.c) + " of '" + name +
             "' does not fit its " + Twine(w) +
             "-bit element type; the "
             "file is corrupt or the graph overflows at import time");
        return {};
      }
      xs.push_back(w == 1 ? APInt(1, d.c != 0)
                          : APInt(64, uint64_t(d.c)).trunc(w));
    }
    attr = DenseElementsAttr::get(ct, xs);
  }
  val.v = ConstantOp::create(b, loc, attr);
  return val.v;
}

bool Importer::readShape(const onnx::TypeProto &type, StringRef name,
                         Val &val) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return fail("graph input '" + name +
                "' has no tensor shape; export "
                "with shapes (dynamic dims may be named)");
  val.dt = type.tensor_type().elem_type();
  if (!elemType(val.dt))
    return fail("graph input '" + name + "' has unsupported element type " +
                dtName(val.dt));
  for (const auto &d : type.tensor_type().shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0 || d.dim_value() > kMaxDim)
        return fail("graph input '" + name + "' has dimension " +
                    Twine(d.dim_value()) + ", which is negative or too large");
      val.shape.push_back(Dim::of(d.dim_value()));
    } else {
      int id;
      if (d.has_dim_param() && !d.dim_param().empty()) {
        auto it = symIds.try_emplace(d.dim_param(), nextSym);
        if (it.second)
          ++nextSym;
        id = it.first->second;
      } else {
        id = nextSym++;
      }
      val.shape.push_back(Dim{1, {id}});
    }
  }
  return true;
}

bool Importer::broadcast(ArrayRef<Dim> a, ArrayRef<Dim> c,
                         SmallVector<Dim> &out) {
  size_t r = std::max(a.size(), c.size());
  out.assign(r, Dim::of(1));
  for (size_t i = 0; i < r; ++i) {
    Dim x = i < r - a.size() ? Dim::of(1) : a[i - (r - a.size())];
    Dim y = i < r - c.size() ? Dim::of(1) : c[i - (r - c.size())];
    if (x == y || (y.isConst() && y.c == 1))
      out[i] = x;
    else if (x.isConst() && x.c == 1)
      out[i] = y;
    else if (!x.isConst() && y.isConst())
      out[i] = y; // a dynamic dim never broadcasts at run time
    else if (x.isConst() && !y.isConst())
      out[i] = x;
    else if (!x.isConst() && !y.isConst())
      out[i] = x; // two dynamic dims: equal at run time by the model's rules
    else
      return fail("shapes do not broadcast (dimension " + Twine(i) + ": " +
                  Twine(x.c) + " vs " + Twine(y.c) + ")");
  }
  return true;
}

bool Importer::hostInts(Val *v, SmallVector<Dim> &out, StringRef what) {
  if (!v || !v->present)
    return fail("missing input '" + what + "'");
  if (!v->weightName.empty() && !initHost(v->weightName, *v))
    return false;
  if (!v->host || v->host->isF())
    return fail("input '" + what +
                "' must be an integer tensor known at "
                "import time (it is computed at run time); export with "
                "static values for it");
  out.assign(v->host->iv.begin(), v->host->iv.end());
  return true;
}

bool Importer::constInts(Val *v, SmallVector<int64_t> &out, StringRef what) {
  SmallVector<Dim> ds;
  if (!hostInts(v, ds, what))
    return false;
  out.clear();
  for (const Dim &d : ds) {
    if (!d.isConst())
      return fail("input '" + what +
                  "' depends on a dynamic dimension; it "
                  "must be a constant");
    out.push_back(d.c);
  }
  return true;
}

Value Importer::dimValue(const Dim &d) {
  Value v;
  if (d.c != 1 || d.syms.empty())
    v = arith::ConstantIndexOp::create(b, loc, d.c);
  for (int sym : d.syms) {
    auto it = symSources.find(sym);
    if (it == symSources.end()) {
      fail("a dimension computed at run time has no value to read it from "
           "(it came from a shape the importer could not follow); export "
           "with static shapes for this part of the graph");
      return {};
    }
    Value size =
        tensor::DimOp::create(b, loc, it->second.first, it->second.second);
    v = v ? arith::MulIOp::create(b, loc, v, size).getResult() : size;
  }
  return v;
}

bool Importer::dynamicSizes(ArrayRef<Dim> shape, SmallVector<Value> &out) {
  out.clear();
  for (const Dim &d : shape) {
    if (d.isConst())
      continue;
    Value v = dimValue(d);
    if (!v)
      return false;
    out.push_back(v);
  }
  return true;
}

Value Importer::reshapeTo(Val &x, ArrayRef<Dim> shape) {
  Value in = x.v;
  RankedTensorType t = typeOf(x.dt, shape);
  if (in.getType() == t &&
      (t.getNumDynamicDims() <= 1 || ArrayRef<Dim>(x.shape) == shape))
    return in;
  // One dynamic size follows from the element count; with two or more the
  // run-time sizes go with the op ([S*B, E] -> [S, B, E]).
  SmallVector<Value> sizes;
  if (t.getNumDynamicDims() > 1 && !dynamicSizes(shape, sizes))
    return {};
  return ReshapeOp::create(b, loc, t, in, sizes);
}

//===----------------------------------------------------------------------===//
// Folding
//===----------------------------------------------------------------------===//

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

bool Importer::tryFold(const onnx::NodeProto &node, std::vector<Val *> &in,
                       std::vector<Val> &out, bool &folded) {
  folded = false;
  const std::string &op = node.op_type();
  auto isHost = [&](Val *v) {
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
  };
  auto setHost = [&](Host h) {
    // Every folder's result is checked here, so the next folder can index
    // its inputs by their shapes.
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
  };

  if (op == "Shape") {
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
  if (op == "Size") {
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
  if (op == "Constant") {
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
        rawIndex.constants.count(node.output(0)))
      return true; // left to emit(): becomes a weight in place.
    return setHost(std::move(h));
  }
  for (Val *v : in)
    if (!isHost(v))
      return true;
  auto H = [&](int i) -> Host & { return *in[i]->host; };
  auto hasIn = [&](size_t i) {
    return i < in.size() && in[i] && in[i]->present;
  };
  // Each input of a fold is known (absent optional ones aside); a value a
  // file made inconsistent never reaches a folder.
  for (size_t i = 0; i < in.size(); ++i)
    if (hasIn(i) && !H(i).consistent())
      return fail("input " + Twine(i) + " is malformed; the file is corrupt");
  auto axisIn = [&](int64_t &a, int64_t r, StringRef what) {
    if (a < -r || a >= r)
      return fail(what + " " + Twine(a) + " is out of range for rank " +
                  Twine(r) + "; the file is corrupt");
    if (a < 0)
      a += r;
    return true;
  };

  if (op == "Identity")
    return setHost(H(0));
  if (op == "Cast") {
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
  if (op == "Unsqueeze" || op == "Squeeze") {
    Host h = H(0);
    SmallVector<int64_t> axes;
    if (hasIn(1)) {
      if (!constInts(in[1], axes, "axes"))
        return false;
    } else if (auto a = attrInts(node, "axes")) {
      axes = *a;
    }
    if (op == "Unsqueeze") {
      int64_t r = h.shape.size() + axes.size();
      for (int64_t &a : axes)
        if (!axisIn(a, r, "Unsqueeze axis"))
          return false;
      llvm::sort(axes);
      for (int64_t a : axes)
        h.shape.insert(h.shape.begin() + std::min<int64_t>(a, h.shape.size()),
                       1);
    } else {
      int64_t r = h.shape.size();
      for (int64_t &a : axes)
        if (!axisIn(a, r, "Squeeze axis"))
          return false;
      SmallVector<int64_t> ns;
      for (int64_t i = 0; i < r; ++i) {
        bool drop =
            axes.empty() ? h.shape[i] == 1 : llvm::any_of(axes, [&](int64_t a) {
              return (a < 0 ? a + r : a) == i;
            });
        if (!drop)
          ns.push_back(h.shape[i]);
      }
      h.shape = ns;
    }
    return setHost(std::move(h));
  }
  if (op == "Reshape") {
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
    if (neg >= 0)
      s[neg] = known ? h.numel() / known : 0;
    h.shape = s;
    return setHost(std::move(h));
  }
  if (op == "Concat") {
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
  if (op == "Gather") {
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
  if (op == "Slice") {
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
  if (op == "ConstantOfShape") {
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
  if (op == "Range") {
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
      __int128 steps =
          diff / dd + ((diff % dd != 0) && ((diff > 0) == (dd > 0)));
      if (steps >= kInlineLimit)
        return fail("Range is too long (start " + std::to_string(a) +
                    ", limit " + std::to_string(lim) + ", delta " +
                    std::to_string(dd) + ")");
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
      return fail("Range is too long or not finite (start " +
                  std::to_string(a) + ", limit " + std::to_string(lim) +
                  ", delta " + std::to_string(dd) + ")");
    int64_t n = std::max<int64_t>(int64_t(steps), 0);
    Host h;
    h.dt = s.dt;
    h.shape = {n};
    for (int64_t i = 0; i < n; ++i)
      h.fv.push_back(a + i * dd);
    return setHost(std::move(h));
  }
  if (op == "Trilu") {
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
  if (op == "Expand") {
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
  if (op == "Transpose") {
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
      for (int64_t i = 0; i < int64_t(sorted.size()); ++i)
        if (sorted.size() != size_t(r) || sorted[i] != i)
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
  // Elementwise on host values.
  static const StringRef unary[] = {"Neg",  "Sqrt",    "Reciprocal", "Exp",
                                    "Log",  "Abs",     "Not",        "Erf",
                                    "Tanh", "Sigmoid", "Relu"};
  static const StringRef binary[] = {
      "Add",     "Sub", "Mul", "Div", "Pow", "Equal",       "Less",
      "Greater", "And", "Or",  "Max", "Min", "LessOrEqual", "GreaterOrEqual",
      "Mod"};
  if (llvm::is_contained(unary, op)) {
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
  if (llvm::is_contained(binary, op)) {
    // Max and Min are variadic: one input (or more than two) is left to emit.
    if (in.size() != 2 || !hasIn(0) || !hasIn(1))
      return true;
    Host &x = H(0), &y = H(1);
    if (x.isF() != y.isF())
      return fail("inputs of different element types (" + Twine(x.dt) +
                  " and " + Twine(y.dt) + "); the file is corrupt");
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
  if (op == "Where") {
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
  return true;
}

const OnnxOpTable &onnxOps() {
  static const OnnxOpTable table = [] {
    OnnxOpTable t;
    registerElementwiseOps(t);
    registerActivationOps(t);
    registerMatmulOps(t);
    registerNormalizationOps(t);
    registerShapeOps(t);
    registerConvOps(t);
    registerLrnOps(t);
    return t;
  }();
  return table;
}

/// Every attribute of the node is read by the importer or on the op's list
/// of attributes that do not change the math; any other is refused by name
/// (a new ONNX attribute must not be ignored silently).
bool Importer::checkAttributes(const onnx::NodeProto &node, const OnnxOp &op) {
  for (const auto &a : node.attribute()) {
    if (llvm::is_contained(op.attributes, a.name()) ||
        llvm::is_contained(op.noMath, a.name()))
      continue;
    std::string known;
    for (StringRef k : op.attributes)
      known += (known.empty() ? "" : ", ") + k.str();
    return fail("attribute '" + a.name() + "' of " + node.op_type() +
                " is not supported (supported: " +
                (known.empty() ? std::string("none") : known) +
                "); see docs/IMPORT-ONNX.md");
  }
  return true;
}

bool Importer::importNode(const onnx::NodeProto &node) {
  std::string name = node.name().empty()
                         ? (node.output_size() ? node.output(0) : "?")
                         : node.name();
  where = "node '" + name + "' (" + node.op_type() + ")";
  // The ops of this node carry its name, in the file.
  loc = importLoc(ctx, path, name);
  if (!node.domain().empty() && node.domain() != "ai.onnx" &&
      node.domain() != "com.microsoft")
    return fail("op domain '" + node.domain() + "' is not supported");
  if (node.output_size() == 0 || node.output(0).empty())
    return fail("the node has no output");
  auto opIt = onnxOps().find(node.op_type());
  if (opIt == onnxOps().end())
    return fail("unsupported op '" + node.op_type() +
                "'; supported ops are listed in docs/IMPORT-ONNX.md");
  const OnnxOp &op = opIt->second;
  int need = op.minInputs;
  for (int i = 0; i < need; ++i)
    if (i >= node.input_size() || node.input(i).empty())
      return fail("needs at least " + Twine(need) + " input(s) but input " +
                  Twine(i) + " is missing; the file is corrupt");
  std::vector<Val *> in;
  for (const std::string &name : node.input()) {
    if (name.empty()) {
      in.push_back(nullptr);
      continue;
    }
    auto it = vals.find(name);
    if (it == vals.end())
      return fail("input '" + name +
                  "' is not produced by any node, "
                  "initializer or graph input");
    in.push_back(&it->second);
  }
  // Axis attributes index the first input's dimensions (Flatten's may equal
  // the rank; Unsqueeze's index the result).
  if (!in.empty() && in[0] && node.op_type() != "Unsqueeze") {
    int64_t r = in[0]->shape.size();
    int64_t hi = node.op_type() == "Flatten" ? r : r - 1;
    for (const auto &a : node.attribute()) {
      if (a.name() != "axis" && a.name() != "axes")
        continue;
      SmallVector<int64_t> axes(a.ints().begin(), a.ints().end());
      if (a.name() == "axis")
        axes.assign(1, a.i());
      for (int64_t ax : axes)
        if (ax < -r || ax > hi)
          return fail("axis " + Twine(ax) +
                      " is out of range for an input "
                      "of rank " +
                      Twine(r) + "; the file is corrupt");
    }
  }
  if (!checkAttributes(node, op))
    return false;
  std::vector<Val> out;
  bool folded = false;
  if (!tryFold(node, in, out, folded))
    return false;
  if (!folded) {
    out.clear();
    EmitContext context{*this, node, in, out};
    if (!op.emit(context))
      return false;
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    if (size_t(i) >= out.size())
      return fail("output " + Twine(i) + " ('" + node.output(i) +
                  "') is not supported");
    vals[node.output(i)] = std::move(out[i]);
  }
  where.clear();
  return true;
}

/// Models below opset 13 go through libonnx's C++ version converter (to
/// opset 17, the newest that Debian's libonnx 1.12 knows). The weights stay
/// where they are in the file: an initializer or Constant the converter
/// rewrote (its raw_data no longer the file's bytes) loses its in-place
/// reference and is inlined when small, refused when not.
bool Importer::upgradeOpset(int64_t opset) {
  constexpr int kTarget = 17;
  std::string error;
  if (!upgradeOnnxOpset(model, kTarget, error))
    return fail("default-domain opset " + Twine(opset) +
                " could not be upgraded to " + Twine(kTarget) +
                " with ONNX's version converter: " + error +
                "; export the model at opset 13 or newer");
  StringRef bytes = file->getBuffer();
  auto same = [&](const OnnxRawLocation &at, const std::string &raw) {
    return at.size == raw.size() && at.offset + at.size <= bytes.size() &&
           bytes.substr(at.offset, at.size) == raw;
  };
  for (const auto &t : model.graph().initializer()) {
    auto it = rawIndex.initializers.find(t.name());
    if (it != rawIndex.initializers.end() && !same(it->second, t.raw_data()))
      rawIndex.initializers.erase(it);
  }
  for (const auto &n : model.graph().node()) {
    if (n.op_type() != "Constant" || n.output_size() != 1)
      continue;
    auto it = rawIndex.constants.find(n.output(0));
    if (it == rawIndex.constants.end())
      continue;
    const onnx::AttributeProto *v = nullptr;
    for (const auto &a : n.attribute())
      if (a.name() == "value")
        v = &a;
    if (!v || !same(it->second, v->t().raw_data()))
      rawIndex.constants.erase(it);
  }
  llvm::errs() << path << ": note: opset " << opset << " upgraded to "
               << kTarget << " with ONNX's version converter\n";
  return true;
}

OwningOpRef<ModuleOp> Importer::run() {
  auto bufOr = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!bufOr) {
    fail("cannot read: " + bufOr.getError().message());
    return nullptr;
  }
  file = std::move(*bufOr);
  SmallString<256> abs(path);
  llvm::sys::fs::make_absolute(abs);
  llvm::sys::path::remove_dots(abs, true);
  path = abs.str().str();
  dir = llvm::sys::path::parent_path(path).str();
  StringRef bytes = file->getBuffer();
  if (bytes.size() > size_t(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), int(bytes.size()))) {
    fail("not a valid ONNX ModelProto (truncated or corrupt protobuf, or "
         "over 2 GiB: keep weights in external data); re-export the model");
    return nullptr;
  }
  std::string wireError;
  if (!scanOnnxRawData(bytes, rawIndex, wireError)) {
    fail(wireError);
    return nullptr;
  }
  if (!model.has_graph()) {
    fail("the model has no graph");
    return nullptr;
  }
  int64_t opset = -1;
  for (const auto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opset = o.version();
  if (opset < 1 || opset > 21) {
    fail("default-domain opset " + Twine(opset) +
         " is not supported (1-21 are; below 13 through ONNX's version "
         "converter); convert the model with "
         "onnx.version_converter.convert_version(model, 17)");
    return nullptr;
  }
  if (opset < 13 && !upgradeOpset(opset))
    return nullptr;
  const onnx::GraphProto &g = model.graph();

  // Initializers.
  for (const auto &t : g.initializer()) {
    Val v;
    v.dt = t.data_type();
    if (!dtBytes(v.dt)) {
      fail("initializer '" + t.name() + "' has unsupported element type " +
           dtName(v.dt));
      return nullptr;
    }
    for (int64_t d : t.dims()) {
      if (d < 0 || d > kMaxDim) {
        fail("initializer '" + t.name() + "' has dimension " + Twine(d) +
             ", which is negative or overflows");
        return nullptr;
      }
      v.shape.push_back(Dim::of(d));
    }
    v.weightName = t.name();
    inits[t.name()] = &t;
    vals[t.name()] = std::move(v);
  }

  // The function and its arguments.
  // Owned until returned: every early return below erases it.
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(ctx));
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const auto &i : g.input()) {
    if (inits.count(i.name()))
      continue; // an initializer also listed as an input (IR version < 4)
    Val v;
    if (!readShape(i.type(), i.name(), v))
      return nullptr;
    argTypes.push_back(typeOf(v.dt, v.shape));
    argNames.push_back(i.name());
    vals[i.name()] = std::move(v);
  }
  auto fn = func::FuncOp::create(b, UnknownLoc::get(ctx), "main",
                                 b.getFunctionType(argTypes, {}));
  Block *body = fn.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    vals[name].v = body->getArgument(i);
    noteSources(body->getArgument(i), vals[name].shape);
    fn.setArgAttr(i, "loom.name", b.getStringAttr(name));
  }
  b.setInsertionPointToEnd(body);

  // Nodes in dependency order (Kahn); a cycle is reported with a node.
  int n = g.node_size();
  llvm::StringMap<int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string &o : g.node(i).output())
      if (!o.empty())
        producer[o] = i;
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i)
    for (const std::string &x : g.node(i).input()) {
      auto it = producer.find(x);
      if (!x.empty() && it != producer.end() && !vals.count(x)) {
        ++indeg[i];
        users[it->second].push_back(i);
      }
    }
  std::vector<int> ready, order;
  for (int i = 0; i < n; ++i)
    if (!indeg[i])
      ready.push_back(i);
  while (!ready.empty()) {
    int i = ready.front();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int u : users[i])
      if (!--indeg[u])
        ready.push_back(u);
  }
  if (int(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (indeg[i]) {
        fail("the graph has a cycle through node '" + g.node(i).name() + "' (" +
             g.node(i).op_type() + "); ONNX graphs must be acyclic");
        break;
      }
    return nullptr;
  }
  for (int i : order) {
    if (!importNode(g.node(i)))
      return nullptr;
  }

  // Results.
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &o : g.output()) {
    auto it = vals.find(o.name());
    if (it == vals.end()) {
      fail("graph output '" + o.name() + "' is not produced");
      return nullptr;
    }
    Value v = materialize(it->second, o.name());
    if (!v)
      return nullptr;
    results.push_back(v);
    resultTypes.push_back(v.getType());
  }
  func::ReturnOp::create(b, UnknownLoc::get(ctx), results);
  fn.setType(b.getFunctionType(argTypes, resultTypes));
  for (auto [i, o] : llvm::enumerate(g.output()))
    fn.setResultAttr(i, "loom.name", b.getStringAttr(o.name()));
  if (failed(verify(*module))) {
    fail("the imported IR does not verify (see the diagnostics above); "
         "please report this model");
    return nullptr;
  }
  return module;
}

} // namespace loom::onnx_import

namespace loom {
using namespace mlir;

OwningOpRef<ModuleOp> importOnnx(MLIRContext *context, StringRef path,
                                 ImportFailure &failure) {
  context->getOrLoadDialect<LoomDialect>();
  context->getOrLoadDialect<func::FuncDialect>();
  // Run-time dims (tensor.dim, index arithmetic) for the sizes of ops on
  // shapes computed from dynamic dims.
  context->getOrLoadDialect<arith::ArithDialect>();
  context->getOrLoadDialect<tensor::TensorDialect>();
  onnx_import::Importer importer(context, path, failure);
  OwningOpRef<ModuleOp> module = importer.run();
  if (!module && !failure)
    failure.set(context, path, "", "the import failed");
  return module;
}

OwningOpRef<ModuleOp> importOnnx(MLIRContext *context, StringRef path,
                                 std::string &error) {
  ImportFailure failure;
  OwningOpRef<ModuleOp> module = importOnnx(context, path, failure);
  if (!module)
    error = failure.text;
  return module;
}

} // namespace loom
