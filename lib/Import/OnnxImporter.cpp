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
