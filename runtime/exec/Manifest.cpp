//===- Manifest.cpp - the bundle's manifest.json ------------------------------===//
//
// Built with -fno-exceptions: nlohmann::json is used with parse(text, nullptr,
// false) and type checks before every access (JSON_NOEXCEPTION).
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Manifest.h"

#include "loom/runtime/Fnv.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

namespace loom::run {

using Json = nlohmann::json;

namespace {
const struct {
  const char *name;
  DType type;
  int64_t size;
  const char *descr;
} kDTypes[] = {
    {"f32", DType::F32, 4, "<f4"},  {"f16", DType::F16, 2, "<f2"},
    {"bf16", DType::BF16, 2, "<u2"}, {"f64", DType::F64, 8, "<f8"},
    {"i8", DType::I8, 1, "|i1"},    {"i32", DType::I32, 4, "<i4"},
    {"i64", DType::I64, 8, "<i8"},  {"u8", DType::U8, 1, "|u1"},
    {"i1", DType::I1, 1, "|b1"},
};
} // namespace

bool parseDType(const std::string &name, DType &out) {
  for (const auto &d : kDTypes)
    if (name == d.name) {
      out = d.type;
      return true;
    }
  return false;
}
const char *dtypeName(DType t) { return kDTypes[int(t)].name; }
int64_t dtypeSize(DType t) { return kDTypes[int(t)].size; }
const char *npyDescr(DType t) { return kDTypes[int(t)].descr; }
bool npyAccepts(DType t, const std::string &descr) {
  if (t == DType::BF16)
    return descr == "<u2" || descr == "|V2";
  return descr == npyDescr(t);
}

const Entry *Manifest::findEntry(const std::string &name) const {
  for (const Entry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

std::string Manifest::meshString() const {
  std::string s;
  for (size_t i = 0; i < meshShape.size(); ++i) {
    if (i)
      s += " x ";
    s += (i < meshAxes.size() ? meshAxes[i] : "?") + "=" +
         std::to_string(meshShape[i]);
  }
  return s.empty() ? "[]" : s;
}

namespace {

std::string shapeText(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Field access with a path for messages; every getter returns false and
/// sets the error on a missing key or a wrong type.
struct Reader {
  std::string *error;

  bool fail(const std::string &path, const std::string &what) {
    *error = "manifest.json: " + path + ": " + what;
    return false;
  }
  const Json *get(const Json &obj, const std::string &path,
                  const std::string &key) {
    if (!obj.is_object()) {
      fail(path, "expected an object");
      return nullptr;
    }
    if (!obj.contains(key)) {
      fail(join(path, key), "missing");
      return nullptr;
    }
    return &obj[key];
  }
  static std::string join(const std::string &path, const std::string &key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string idx(const std::string &path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }
  bool str(const Json &obj, const std::string &path, const std::string &key,
           std::string &out) {
    const Json *v = get(obj, path, key);
    if (!v)
      return false;
    if (!v->is_string())
      return fail(join(path, key), "expected a string");
    out = v->get<std::string>();
    return true;
  }
  bool integer(const Json &v, const std::string &path, int64_t &out) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > uint64_t(INT64_MAX))
        return fail(path, "integer out of range");
      out = int64_t(u);
      return true;
    }
    if (!v.is_number_integer())
      return fail(path, "expected an integer");
    out = v.get<int64_t>();
    return true;
  }
  bool integer(const Json &obj, const std::string &path,
               const std::string &key, int64_t &out) {
    const Json *v = get(obj, path, key);
    return v && integer(*v, join(path, key), out);
  }
  bool ints(const Json &obj, const std::string &path, const std::string &key,
            std::vector<int64_t> &out, int64_t min) {
    const Json *v = get(obj, path, key);
    if (!v)
      return false;
    std::string p = join(path, key);
    if (!v->is_array())
      return fail(p, "expected an array of integers");
    out.clear();
    for (size_t i = 0; i < v->size(); ++i) {
      int64_t x = 0;
      if (!integer((*v)[i], idx(p, i), x))
        return false;
      if (x < min)
        return fail(idx(p, i), std::to_string(x) + " is below the minimum " +
                                   std::to_string(min));
      out.push_back(x);
    }
    return true;
  }
  const Json *array(const Json &obj, const std::string &path,
                    const std::string &key) {
    const Json *v = get(obj, path, key);
    if (v && !v->is_array()) {
      fail(join(path, key), "expected an array");
      return nullptr;
    }
    return v;
  }
  bool dtype(const Json &obj, const std::string &path, DType &out) {
    std::string s;
    if (!str(obj, path, "dtype", s))
      return false;
    if (!parseDType(s, out))
      return fail(join(path, "dtype"),
                  "unknown dtype '" + s +
                      "' (expected f32 f16 bf16 f64 i8 i32 i64 u8 i1)");
    return true;
  }
  bool tensors(const Json &obj, const std::string &path,
               const std::string &key, std::vector<TensorSpec> &out,
               int64_t minDim) {
    const Json *a = array(obj, path, key);
    if (!a)
      return false;
    std::string p = join(path, key);
    std::set<std::string> seen;
    for (size_t i = 0; i < a->size(); ++i) {
      TensorSpec t;
      std::string ip = idx(p, i);
      if (!str((*a)[i], ip, "name", t.name) || !dtype((*a)[i], ip, t.dtype) ||
          !ints((*a)[i], ip, "shape", t.shape, minDim))
        return false;
      if (!seen.insert(t.name).second)
        return fail(ip + ".name", "duplicate name '" + t.name + "'");
      if ((*a)[i].contains("state")) {
        if (!str((*a)[i], ip, "state", t.state) ||
            !integer((*a)[i], ip, "ctx_dim", t.ctxDim))
          return false;
        if (t.state != "kv_cache")
          return fail(ip + ".state", "unknown state '" + t.state +
                                         "' (expected kv_cache)");
        if (t.ctxDim < 0 || t.ctxDim >= int64_t(t.shape.size()) ||
            t.shape[size_t(t.ctxDim)] != -1)
          return fail(ip + ".ctx_dim",
                      "must name a dynamic (-1) dimension of the shape");
        for (size_t d = 0; d < t.shape.size(); ++d)
          if (int64_t(d) != t.ctxDim && t.shape[d] < 0)
            return fail(ip + ".shape", "a state's dimensions other than "
                                       "ctx_dim must be static");
      }
      out.push_back(std::move(t));
    }
    return true;
  }
};

/// The optional "integrity" and "target" objects (written by every loomc
/// since they exist; loom-run requires "integrity" before dlopen).
bool parseIntegrityAndTarget(const Json &root, Reader &r, Manifest &m) {
  if (root.contains("integrity")) {
    const Json &j = root["integrity"];
    m.integrity.present = true;
    if (!r.str(j, "integrity", "library", m.integrity.library) ||
        !r.str(j, "integrity", "entries", m.integrity.entries))
      return false;
  }
  if (root.contains("target")) {
    const Json &j = root["target"];
    m.target.present = true;
    if (!r.str(j, "target", "cpu", m.target.cpu))
      return false;
    const Json *f = r.array(j, "target", "features");
    if (!f)
      return false;
    for (size_t i = 0; i < f->size(); ++i) {
      if (!(*f)[i].is_string())
        return r.fail(Reader::idx("target.features", i), "expected a string");
      m.target.features.push_back((*f)[i].get<std::string>());
    }
  }
  return true;
}

} // namespace

std::string resolveBundlePath(const std::string &bundleDir,
                              const std::string &path) {
  std::filesystem::path p(path);
  if (p.is_absolute())
    return path;
  return (std::filesystem::path(bundleDir) / p).string();
}

bool parseManifest(const std::string &text, int64_t runtimeAbi, Manifest &m,
                   std::string *error) {
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    *error = "manifest.json: not valid JSON";
    return false;
  }
  if (!root.is_object()) {
    *error = "manifest.json: expected a JSON object at the top level";
    return false;
  }
  Reader r{error};

  // Identity and versions first: a newer bundle must be refused with a
  // message about the version, not about some field it renamed.
  if (!r.str(root, "", "format", m.format))
    return false;
  if (m.format != "loom-bundle")
    return r.fail("format", "'" + m.format +
                                "' is not a Loom bundle (expected "
                                "'loom-bundle')");
  if (!r.integer(root, "", "version", m.version))
    return false;
  if (m.version != kBundleVersion)
    return r.fail("version",
                  "bundle format version " + std::to_string(m.version) +
                      " is not supported: this loom-run reads version " +
                      std::to_string(kBundleVersion) +
                      "; rebuild the bundle with a loomc of the same release "
                      "as this loom-run");
  if (!r.integer(root, "", "abi_version", m.abiVersion))
    return false;
  // The runtime ABI is additive (abi.h): code generated against an older
  // version runs on a newer runtime, never the other way round.
  if (m.abiVersion < 1 || m.abiVersion > runtimeAbi)
    return r.fail("abi_version",
                  "the bundle's code was generated against runtime ABI "
                  "version " + std::to_string(m.abiVersion) +
                      ", but this loom-run's runtime has ABI version " +
                      std::to_string(runtimeAbi) + " (runs versions 1 to " +
                      std::to_string(runtimeAbi) +
                      "); recompile the model with a matching loomc");

  if (root.contains("model") && root["model"].is_object()) {
    // An LLM: its description, with its name.
    const Json &jm = root["model"];
    ModelInfo &l = m.llm;
    l.llm = true;
    if (!r.str(jm, "model", "name", m.model) ||
        !r.str(jm, "model", "architecture", l.architecture) ||
        !r.integer(jm, "model", "num_layers", l.numLayers) ||
        !r.integer(jm, "model", "num_heads", l.numHeads) ||
        !r.integer(jm, "model", "num_kv_heads", l.numKvHeads) ||
        !r.integer(jm, "model", "head_dim", l.headDim) ||
        !r.integer(jm, "model", "hidden_size", l.hiddenSize) ||
        !r.integer(jm, "model", "vocab_size", l.vocabSize) ||
        !r.integer(jm, "model", "context_length", l.contextLength))
      return false;
    if (root.contains("tokenizer")) {
      const Json &jt = root["tokenizer"];
      if (!r.str(jt, "tokenizer", "format", m.tokenizer.format) ||
          !r.str(jt, "tokenizer", "file", m.tokenizer.file))
        return false;
      if (m.tokenizer.format != "gguf" && m.tokenizer.format != "hf")
        return r.fail("tokenizer.format", "'" + m.tokenizer.format +
                                              "' (expected gguf or hf)");
    }
  } else if (!r.str(root, "", "model", m.model)) {
    return false;
  }
  if (!r.str(root, "", "library", m.library))
    return false;
  if (m.library.empty())
    return r.fail("library", "empty");

  const Json *mesh = r.get(root, "", "mesh");
  if (!mesh)
    return false;
  const Json *axes = r.array(*mesh, "mesh", "axes");
  if (!axes)
    return false;
  for (size_t i = 0; i < axes->size(); ++i) {
    if (!(*axes)[i].is_string())
      return r.fail(Reader::idx("mesh.axes", i), "expected a string");
    m.meshAxes.push_back((*axes)[i].get<std::string>());
  }
  if (!r.ints(*mesh, "mesh", "shape", m.meshShape, 1))
    return false;
  if (m.meshShape.size() != m.meshAxes.size())
    return r.fail("mesh", "'axes' has " + std::to_string(m.meshAxes.size()) +
                              " names but 'shape' has " +
                              std::to_string(m.meshShape.size()) +
                              " dimensions");
  if (m.meshShape.size() > 8)
    return r.fail("mesh.shape", "at most 8 mesh axes are supported");
  int64_t prod = 1;
  for (int64_t d : m.meshShape) {
    if (prod > (int64_t(1) << 40) / d)
      return r.fail("mesh.shape", "too many ranks");
    prod *= d;
  }
  if (!r.integer(root, "", "num_ranks", m.numRanks))
    return false;
  if (m.numRanks != prod)
    return r.fail("num_ranks", std::to_string(m.numRanks) +
                                   " is not the product of mesh.shape (" +
                                   m.meshString() + " = " +
                                   std::to_string(prod) + ")");

  if (!parseIntegrityAndTarget(root, r, m))
    return false;

  // Entries.
  const Json *entries = r.array(root, "", "entries");
  if (!entries)
    return false;
  {
    std::string dump = entries->dump();
    m.entriesHash = fnvString(fnv1a64(dump.data(), dump.size()));
  }
  if (entries->empty())
    return r.fail("entries", "the bundle has no entry point");
  std::set<std::string> entryNames;
  for (size_t i = 0; i < entries->size(); ++i) {
    const Json &je = (*entries)[i];
    std::string p = Reader::idx("entries", i);
    Entry e;
    if (!r.str(je, p, "name", e.name) || !r.str(je, p, "symbol", e.symbol))
      return false;
    if (!entryNames.insert(e.name).second)
      return r.fail(p + ".name", "duplicate entry '" + e.name + "'");
    if (!r.tensors(je, p, "inputs", e.inputs, -1) ||
        !r.tensors(je, p, "weights", e.weights, 0))
      return false;
    for (size_t k = 0; k < e.weights.size(); ++k) {
      const Json &jw = je["weights"][k];
      Interleave il;
      if (jw.contains("interleave")) {
        std::string ip = Reader::idx(p + ".weights", k) + ".interleave";
        const TensorSpec &t = e.weights[k];
        const Json &j = jw["interleave"];
        if (!r.integer(j, ip, "rows", il.rows) ||
            !r.integer(j, ip, "block_bytes", il.blockBytes) ||
            !r.integer(j, ip, "fields", il.fields) ||
            !r.integer(j, ip, "field_bytes", il.fieldBytes) ||
            !r.integer(j, ip, "unit_bytes", il.unitBytes))
          return false;
        int64_t values = il.blockBytes - il.fields * il.fieldBytes;
        if (il.rows < 1 || il.blockBytes < 1 || il.fields < 0 ||
            il.fieldBytes < 0 || il.unitBytes < 1 || values < 0 ||
            values % il.unitBytes != 0 || t.shape.size() != 2 ||
            t.dtype != DType::I8 || t.shape[1] % il.blockBytes != 0)
          return r.fail(ip, "not a layout of a 2-D i8 weight: rows >= 1, "
                            "blocks dividing the row, each the header "
                            "fields then whole units");
      }
      e.interleave.push_back(il);
    }
    const Json *outs = r.array(je, p, "outputs");
    if (!outs)
      return false;
    std::set<std::string> seen;
    for (size_t k = 0; k < outs->size(); ++k) {
      OutputSpec o;
      std::string op = Reader::idx(p + ".outputs", k);
      if (!r.str((*outs)[k], op, "name", o.name) ||
          !r.dtype((*outs)[k], op, o.dtype) ||
          !r.integer((*outs)[k], op, "rank", o.rank))
        return false;
      if (o.rank < 0 || o.rank > 64)
        return r.fail(op + ".rank", std::to_string(o.rank) +
                                        " is not a rank in [0, 64]");
      if (o.name.empty() || o.name.find('/') != std::string::npos ||
          o.name == "." || o.name == "..")
        return r.fail(op + ".name", "'" + o.name +
                                        "' cannot be used as a file name");
      if (!seen.insert(o.name).second)
        return r.fail(op + ".name", "duplicate output '" + o.name + "'");
      e.outputs.push_back(std::move(o));
    }
    m.entries.push_back(std::move(e));
  }

  // Ranks.
  const Json *ranks = r.array(root, "", "ranks");
  if (!ranks)
    return false;
  if (int64_t(ranks->size()) != m.numRanks)
    return r.fail("ranks", "has " + std::to_string(ranks->size()) +
                               " entries but num_ranks is " +
                               std::to_string(m.numRanks));
  for (size_t i = 0; i < ranks->size(); ++i) {
    const Json &jr = (*ranks)[i];
    std::string p = Reader::idx("ranks", i);
    RankInfo ri;
    if (!r.integer(jr, p, "rank", ri.rank) ||
        !r.ints(jr, p, "coords", ri.coords, 0))
      return false;
    if (ri.rank != int64_t(i))
      return r.fail(p + ".rank", "is " + std::to_string(ri.rank) +
                                     ", expected " + std::to_string(i) +
                                     " (ranks are listed in order)");
    std::vector<int64_t> expect(m.meshShape.size());
    for (int64_t a = int64_t(m.meshShape.size()) - 1, rest = ri.rank; a >= 0;
         --a) {
      expect[a] = rest % m.meshShape[a];
      rest /= m.meshShape[a];
    }
    if (ri.coords != expect) {
      std::string want;
      for (size_t a = 0; a < expect.size(); ++a)
        want += (a ? "," : "") + std::to_string(expect[a]);
      return r.fail(p + ".coords", "do not match the row-major "
                                   "coordinates [" + want + "] of rank " +
                                   std::to_string(ri.rank) + " in the mesh " +
                                   m.meshString());
    }
    if (jr.is_object() && jr.contains("ir") && !r.str(jr, p, "ir", ri.ir))
      return false;
    const Json *w = r.get(jr, p, "weights");
    if (!w)
      return false;
    if (!w->is_object())
      return r.fail(p + ".weights", "expected an object (entry name -> "
                                    "slices)");
    for (const Entry &e : m.entries) {
      std::string wp = p + ".weights." + e.name;
      std::vector<WeightSlice> &slices = ri.weights[e.name];
      if (!w->contains(e.name)) {
        if (e.weights.empty())
          continue;
        return r.fail(wp, "missing (entry '" + e.name + "' has " +
                              std::to_string(e.weights.size()) + " weights)");
      }
      const Json &ja = (*w)[e.name];
      if (!ja.is_array())
        return r.fail(wp, "expected an array of weight slices");
      if (ja.size() != e.weights.size())
        return r.fail(wp, "has " + std::to_string(ja.size()) +
                              " slices but entry '" + e.name + "' has " +
                              std::to_string(e.weights.size()) + " weights");
      for (size_t k = 0; k < ja.size(); ++k) {
        std::string sp = Reader::idx(wp, k);
        WeightSlice s;
        const TensorSpec &spec = e.weights[k];
        if (!r.str(ja[k], sp, "name", s.name) ||
            !r.str(ja[k], sp, "file", s.file) ||
            !r.integer(ja[k], sp, "offset", s.offset) ||
            !r.integer(ja[k], sp, "nbytes", s.nbytes) ||
            !r.ints(ja[k], sp, "shape", s.shape, 0) ||
            !r.ints(ja[k], sp, "strides", s.strides, 0))
          return false;
        if (s.name != spec.name)
          return r.fail(sp + ".name", "is '" + s.name + "' but weight " +
                                          std::to_string(k) + " of entry '" +
                                          e.name + "' is '" + spec.name + "'");
        if (s.file.empty())
          return r.fail(sp + ".file", "empty");
        if (s.offset < 0 || s.nbytes < 0)
          return r.fail(sp, "negative offset or nbytes");
        if (s.shape.size() != spec.shape.size())
          return r.fail(sp + ".shape",
                        "has " + std::to_string(s.shape.size()) +
                            " dimensions but weight '" + spec.name +
                            "' has " + std::to_string(spec.shape.size()));
        if (s.strides.size() != s.shape.size())
          return r.fail(sp + ".strides", "has " +
                                             std::to_string(s.strides.size()) +
                                             " entries for a shape of " +
                                             std::to_string(s.shape.size()) +
                                             " dimensions");
        // Every slice has the shape of its weight: the entry's argument
        // type. (A slice of another shape would be passed to code compiled
        // for the weight's.)
        if (s.shape != spec.shape)
          return r.fail(sp + ".shape",
                        shapeText(s.shape) + " is not the shape " +
                            shapeText(spec.shape) + " of weight '" +
                            spec.name + "' of entry '" + e.name +
                            "'; the manifest does not match its library "
                            "(recompile with loomc)");
        // The strided extent of the slice must lie inside its bytes; every
        // product and sum is checked for overflow.
        int64_t elems = 1, extent = 1;
        bool empty = false, overflow = false;
        for (size_t d = 0; d < s.shape.size(); ++d) {
          overflow |= __builtin_mul_overflow(elems, s.shape[d], &elems);
          if (s.shape[d] == 0) {
            empty = true;
            continue;
          }
          int64_t reach = 0;
          overflow |= __builtin_mul_overflow(s.shape[d] - 1, s.strides[d],
                                             &reach);
          overflow |= __builtin_add_overflow(extent, reach, &extent);
        }
        int64_t es = dtypeSize(spec.dtype), extentBytes = 0, elemBytes = 0;
        overflow |= __builtin_mul_overflow(extent, es, &extentBytes);
        overflow |= __builtin_mul_overflow(elems, es, &elemBytes);
        if (overflow)
          return r.fail(sp, "shape " + shapeText(s.shape) + " and strides " +
                                shapeText(s.strides) +
                                " overflow 64-bit byte offsets");
        int64_t end = 0;
        if (__builtin_add_overflow(s.offset, s.nbytes, &end))
          return r.fail(sp, "offset " + std::to_string(s.offset) +
                                " + nbytes " + std::to_string(s.nbytes) +
                                " overflows");
        if (!empty && extentBytes > s.nbytes)
          return r.fail(sp, "shape and strides reach " +
                                std::to_string(extentBytes) +
                                " bytes but nbytes is " +
                                std::to_string(s.nbytes));
        if (elemBytes > s.nbytes)
          return r.fail(sp, "shape holds " + std::to_string(elemBytes) +
                                " bytes of " + dtypeName(spec.dtype) +
                                " but nbytes is " + std::to_string(s.nbytes));
        slices.push_back(std::move(s));
      }
    }
    m.ranks.push_back(std::move(ri));
  }
  return true;
}

} // namespace loom::run
