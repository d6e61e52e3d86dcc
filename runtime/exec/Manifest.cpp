//===- Manifest.cpp - the bundle's manifest.json
//------------------------------===//
//
// Built with -fno-exceptions: nlohmann::json is used with parse(text, nullptr,
// false) and type checks before every access (JSON_NOEXCEPTION).
//
//===----------------------------------------------------------------------===//

#include "loom/runtime/Manifest.h"

#include "loom/runtime/Fnv.h"
#include "loom/runtime/NpyName.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <set>

namespace loom::run {

using Json = nlohmann::json;

const char *npyDescr(DType t) {
  switch (t) {
  case DType::F32:
    return "<f4";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "<u2"; // numpy has no bf16: its bits
  case DType::F64:
    return "<f8";
  case DType::I8:
    return "|i1";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::U8:
    return "|u1";
  case DType::I1:
    return "|b1";
  }
  return "?";
}

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

const PipelineEntry *PipelineInfo::find(const std::string &name) const {
  for (const PipelineEntry &e : entries)
    if (e.entry.name == name)
      return &e;
  return nullptr;
}

int64_t Manifest::stageOf(int64_t rank) const {
  if (!pipeline.present)
    return 0;
  int64_t stride = 1;
  for (size_t a = size_t(pipeline.axisIndex) + 1; a < meshShape.size(); ++a)
    stride *= meshShape[a];
  return (rank / stride) % meshShape[size_t(pipeline.axisIndex)];
}

int64_t Manifest::peerAtStage(int64_t rank, int64_t stage) const {
  if (!pipeline.present)
    return rank;
  int64_t stride = 1;
  for (size_t a = size_t(pipeline.axisIndex) + 1; a < meshShape.size(); ++a)
    stride *= meshShape[a];
  return rank + (stage - stageOf(rank)) * stride;
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
  bool integer(const Json &obj, const std::string &path, const std::string &key,
               int64_t &out) {
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
    std::optional<DType> t = parseDType(s);
    if (!t)
      return fail(join(path, "dtype"),
                  "unknown dtype '" + s +
                      "' (expected f32 f16 bf16 f64 i8 i32 i64 u8 i1)");
    out = *t;
    return true;
  }
  /// "batch_dim" of a tensor of rank `rank`: an integer in [0, rank).
  bool batchDim(const Json &obj, const std::string &path, int64_t rank,
                int64_t &out) {
    if (!integer(obj, path, "batch_dim", out))
      return false;
    if (out < 0 || out >= rank)
      return fail(path + ".batch_dim", std::to_string(out) +
                                           " is not a dimension of a tensor of "
                                           "rank " +
                                           std::to_string(rank));
    return true;
  }
  /// `unique`: names must differ (inputs are given by name); a weight's
  /// name may repeat, one tensor loaded in two layouts (a tied LM head's
  /// vocabulary slice next to the embedding's whole table, docs/BUNDLE.md).
  bool tensors(const Json &obj, const std::string &path, const std::string &key,
               std::vector<TensorSpec> &out, int64_t minDim, bool unique) {
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
      if (unique && !seen.insert(t.name).second)
        return fail(ip + ".name", "duplicate name '" + t.name + "'");
      if ((*a)[i].contains("state")) {
        if (!str((*a)[i], ip, "state", t.state) ||
            !integer((*a)[i], ip, "ctx_dim", t.ctxDim))
          return false;
        if (t.state != "kv_cache")
          return fail(ip + ".state",
                      "unknown state '" + t.state + "' (expected kv_cache)");
        if (t.ctxDim < 0 || t.ctxDim >= int64_t(t.shape.size()) ||
            t.shape[size_t(t.ctxDim)] != -1)
          return fail(ip + ".ctx_dim",
                      "must name a dynamic (-1) dimension of the shape");
        for (size_t d = 0; d < t.shape.size(); ++d)
          if (int64_t(d) != t.ctxDim && t.shape[d] < 0)
            return fail(ip + ".shape", "a state's dimensions other than "
                                       "ctx_dim must be static");
      }
      for (const char *key : {"boundary", "entry_arg"})
        if ((*a)[i].contains(key)) {
          int64_t v = 0;
          if (!integer((*a)[i], ip, key, v))
            return false;
          if (v < 0)
            return fail(ip + "." + key, std::to_string(v) + " is negative");
          (std::string(key) == "boundary" ? t.boundary : t.entryArg) = v;
        }
      if (t.boundary >= 0 && t.entryArg >= 0)
        return fail(ip, "has both 'boundary' and 'entry_arg' (a stage input "
                        "is one or the other)");
      if ((*a)[i].contains("batch_dim") &&
          !batchDim((*a)[i], ip, int64_t(t.shape.size()), t.batchDim))
        return false;
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
    if (j.contains("pipeline") &&
        !r.str(j, "integrity", "pipeline", m.integrity.pipeline))
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
    // A GPU program: the device, the chips of its kernels, the memory plan.
    if (j.contains("device")) {
      if (!r.str(j, "target", "device", m.target.device))
        return false;
      if (m.target.device != "cuda")
        return r.fail("target.device", "unknown device '" + m.target.device +
                                           "' (this loom-run knows cuda)");
      const Json *c = r.array(j, "target", "chips");
      if (!c)
        return false;
      for (size_t i = 0; i < c->size(); ++i) {
        if (!(*c)[i].is_string())
          return r.fail(Reader::idx("target.chips", i), "expected a string");
        m.target.chips.push_back((*c)[i].get<std::string>());
      }
      if (j.contains("format") &&
          !r.str(j, "target", "format", m.target.format))
        return false;
      if (j.contains("cuda_abi_version")) {
        const Json &v = j["cuda_abi_version"];
        if (!v.is_number_integer() || v.get<int64_t>() < 1)
          return r.fail("target.cuda_abi_version",
                        "expected a positive integer");
        m.target.cudaAbiVersion = v.get<int64_t>();
      }
      if (j.contains("memory_plan") && j["memory_plan"].is_object())
        for (auto &[entry, plan] : j["memory_plan"].items()) {
          if (!plan.is_object())
            continue;
          if (plan.contains("peak_bytes") &&
              plan["peak_bytes"].is_number_integer())
            m.target.peakBytes[entry] = plan["peak_bytes"].get<int64_t>();
          if (plan.contains("workspace_bytes")) {
            const Json &v = plan["workspace_bytes"];
            if (!v.is_number_integer() || v.get<int64_t>() < 0)
              return r.fail("target.memory_plan." + entry + ".workspace_bytes",
                            "expected a non-negative integer");
            m.target.workspaceBytes[entry] = v.get<int64_t>();
          }
          if (plan.contains("state_bytes_per_position")) {
            const Json &v = plan["state_bytes_per_position"];
            if (!v.is_number_integer() || v.get<int64_t>() < 0)
              return r.fail("target.memory_plan." + entry +
                                ".state_bytes_per_position",
                            "expected a non-negative integer");
            m.target.stateBytesPerPosition[entry] = v.get<int64_t>();
          }
          // The bound of the entry's dynamic input dimensions.
          if (plan.contains("max_dim") && plan["max_dim"].is_number_integer())
            m.target.maxDim[entry] = plan["max_dim"].get<int64_t>();
        }
    }
  }
  return true;
}

/// The optional "pipeline" object (docs/BUNDLE.md): the axis, the stages,
/// and per pipelined entry its stage entries, which must fit one another:
/// stage k's boundary inputs are exactly stage k-1's results, same dtype,
/// rank and (where both are known) per-rank shape.
bool parsePipeline(const Json &root, Reader &r, Manifest &m) {
  if (!root.contains("pipeline"))
    return true;
  const Json &j = root["pipeline"];
  PipelineInfo &pl = m.pipeline;
  pl.present = true;
  {
    std::string dump = j.dump();
    m.pipelineHash = fnvString(fnv1a64(dump.data(), dump.size()));
  }
  if (!r.str(j, "pipeline", "axis", pl.axis) ||
      !r.integer(j, "pipeline", "axis_index", pl.axisIndex) ||
      !r.integer(j, "pipeline", "stages", pl.stages))
    return false;
  if (pl.axisIndex < 0 || pl.axisIndex >= int64_t(m.meshAxes.size()) ||
      m.meshAxes[size_t(pl.axisIndex)] != pl.axis)
    return r.fail("pipeline.axis_index",
                  std::to_string(pl.axisIndex) + " does not name the axis '" +
                      pl.axis + "' in the mesh " + m.meshString());
  if (pl.stages != m.meshShape[size_t(pl.axisIndex)])
    return r.fail("pipeline.stages",
                  std::to_string(pl.stages) + " stages, but the mesh axis '" +
                      pl.axis + "' has " +
                      std::to_string(m.meshShape[size_t(pl.axisIndex)]) +
                      " ranks (one stage per coordinate)");
  const Json *je = r.get(j, "pipeline", "entries");
  if (!je)
    return false;
  if (!je->is_object() || je->empty())
    return r.fail("pipeline.entries", "expected a non-empty object (entry "
                                      "name -> its stage entries)");
  std::set<std::string> used;
  for (auto it = je->begin(); it != je->end(); ++it) {
    std::string p = "pipeline.entries." + it.key();
    PipelineEntry pe;
    pe.entry.name = it.key();
    if (m.findEntry(pe.entry.name))
      return r.fail(p, "'" + pe.entry.name +
                           "' is also an ordinary entry; a pipelined entry "
                           "exists only as its stages");
    if (!it->is_array() || int64_t(it->size()) != pl.stages)
      return r.fail(p, "expected an array of " + std::to_string(pl.stages) +
                           " stage entry names");
    std::vector<const Entry *> stages;
    for (size_t k = 0; k < it->size(); ++k) {
      std::string sp = Reader::idx(p, k);
      if (!(*it)[k].is_string())
        return r.fail(sp, "expected a string");
      std::string name = (*it)[k].get<std::string>();
      const Entry *e = m.findEntry(name);
      if (!e)
        return r.fail(sp,
                      "names no entry ('" + name + "' is not in \"entries\")");
      if (!used.insert(name).second)
        return r.fail(sp, "'" + name +
                              "' is the stage of more than one "
                              "pipelined entry or position");
      pe.stages.push_back(name);
      stages.push_back(e);
    }
    // Boundaries: stage k receives exactly stage k-1's results.
    for (size_t k = 0; k < stages.size(); ++k) {
      const Entry &e = *stages[k];
      std::string sp = Reader::idx(p, k) + " ('" + e.name + "')";
      std::vector<int> seen(k ? stages[k - 1]->outputs.size() : 0, 0);
      for (const TensorSpec &in : e.inputs) {
        if (in.boundary < 0)
          continue;
        if (k == 0)
          return r.fail(sp, "input '" + in.name +
                                "' is a boundary, but stage 0 receives "
                                "nothing");
        const Entry &prev = *stages[k - 1];
        if (in.boundary >= int64_t(prev.outputs.size()))
          return r.fail(sp, "input '" + in.name + "' receives result " +
                                std::to_string(in.boundary) + " of '" +
                                prev.name + "', which has " +
                                std::to_string(prev.outputs.size()) +
                                " results");
        if (seen[size_t(in.boundary)]++)
          return r.fail(sp, "two inputs receive result " +
                                std::to_string(in.boundary) + " of '" +
                                prev.name + "'");
        const OutputSpec &o = prev.outputs[size_t(in.boundary)];
        bool fits = o.dtype == in.dtype && o.rank == int64_t(in.shape.size());
        for (size_t d = 0; fits && d < o.shape.size(); ++d)
          fits = o.shape[d] < 0 || in.shape[d] < 0 || o.shape[d] == in.shape[d];
        if (!fits)
          return r.fail(
              sp, "input '" + in.name + "' (boundary " +
                      std::to_string(in.boundary) + ") is " +
                      dtypeName(in.dtype) + " " + shapeText(in.shape) +
                      " per rank, but result " + std::to_string(in.boundary) +
                      " '" + o.name + "' of stage " + std::to_string(k - 1) +
                      " ('" + prev.name + "') is " + dtypeName(o.dtype) + " " +
                      (o.shape.empty() && o.rank
                           ? "of rank " + std::to_string(o.rank)
                           : shapeText(o.shape)) +
                      "; the stages do not fit (recompile with loomc)");
      }
      for (size_t j = 0; j < seen.size(); ++j)
        if (!seen[j])
          return r.fail(sp, "no input receives result " + std::to_string(j) +
                                " '" + stages[k - 1]->outputs[j].name +
                                "' of '" + stages[k - 1]->name +
                                "' (each result of a stage is a boundary of "
                                "the next)");
    }
    // The entry as callers see it: every stage's own inputs, by entry_arg.
    std::vector<std::pair<int64_t, TensorSpec>> ins;
    for (size_t k = 0; k < stages.size(); ++k)
      for (const TensorSpec &in : stages[k]->inputs) {
        if (in.boundary >= 0)
          continue;
        auto same = std::find_if(ins.begin(), ins.end(), [&](const auto &x) {
          return x.second.name == in.name;
        });
        if (same == ins.end()) {
          ins.push_back({in.entryArg < 0 ? INT64_MAX : in.entryArg, in});
          continue;
        }
        const TensorSpec &t = same->second;
        if (!in.state.empty() || t.dtype != in.dtype || t.shape != in.shape ||
            t.entryArg != in.entryArg || t.batchDim != in.batchDim)
          return r.fail(Reader::idx(p, k),
                        "input '" + in.name + "' of '" + stages[k]->name +
                            "' differs from the input of that name of an "
                            "earlier stage (" +
                            (in.state.empty()
                                 ? "dtype, shape, entry_arg or batch_dim"
                                 : "state is owned by one "
                                   "stage") +
                            ")");
      }
    std::stable_sort(ins.begin(), ins.end(), [](const auto &a, const auto &b) {
      return a.first < b.first;
    });
    for (auto &x : ins)
      pe.entry.inputs.push_back(x.second);
    pe.entry.outputs = stages.back()->outputs;
    pl.entries.push_back(std::move(pe));
  }
  return true;
}

/// False for the stage entry of a pipeline stage other than `rank`'s (a
/// rank maps only its own stage's weights; the manifest may omit others).
bool stageRunsOn(const Manifest &m, const std::string &entry, int64_t rank) {
  for (const PipelineEntry &pe : m.pipeline.entries)
    for (size_t k = 0; k < pe.stages.size(); ++k)
      if (pe.stages[k] == entry)
        return int64_t(k) == m.stageOf(rank);
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
                      " is not supported: this Loom runtime (loom-run, the "
                      "loom Python package) reads version " +
                      std::to_string(kBundleVersion) +
                      "; rebuild the bundle with a loomc of the same release "
                      "as this runtime");
  if (!r.integer(root, "", "abi_version", m.abiVersion))
    return false;
  // The runtime ABI is additive (abi.h): code generated against an older
  // version runs on a newer runtime, never the other way round.
  if (m.abiVersion < 1 || m.abiVersion > runtimeAbi)
    return r.fail("abi_version",
                  "the bundle's code was generated against runtime ABI "
                  "version " +
                      std::to_string(m.abiVersion) +
                      ", but this Loom runtime has ABI version " +
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
        return r.fail("tokenizer.format",
                      "'" + m.tokenizer.format + "' (expected gguf or hf)");
    }
  } else if (!r.str(root, "", "model", m.model)) {
    return false;
  }
  if (!r.str(root, "", "library", m.library))
    return false;
  if (m.library.empty())
    return r.fail("library", "empty");
  if (root.contains("inputs_read_only")) {
    if (!root["inputs_read_only"].is_boolean())
      return r.fail("inputs_read_only", "expected true or false");
    m.inputsReadOnly = root["inputs_read_only"].get<bool>();
  }

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
    if (!r.tensors(je, p, "inputs", e.inputs, -1, /*unique=*/true) ||
        !r.tensors(je, p, "weights", e.weights, 0, /*unique=*/false))
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
      GemmB gb = GemmB::None;
      if (jw.contains("gemm_b")) {
        std::string gp = Reader::idx(p + ".weights", k) + ".gemm_b";
        const TensorSpec &t = e.weights[k];
        const Json &j = jw["gemm_b"];
        std::string v = j.is_string() ? j.get<std::string>() : "";
        if (v != "kn" && v != "nk")
          return r.fail(gp, "expected \"kn\" or \"nk\" (the weight as the "
                            "f32 GEMM's right operand, [K, N] or [N, K])");
        if (t.shape.size() != 2 || t.dtype != DType::F32)
          return r.fail(gp, "only a 2-D f32 weight is a GEMM right operand");
        gb = v == "kn" ? GemmB::KN : GemmB::NK;
      }
      e.gemmB.push_back(gb);
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
        return r.fail(op + ".rank",
                      std::to_string(o.rank) + " is not a rank in [0, 64]");
      if ((*outs)[k].contains("shape")) {
        if (!r.ints((*outs)[k], op, "shape", o.shape, -1))
          return false;
        if (int64_t(o.shape.size()) != o.rank)
          return r.fail(op + ".shape", "has " + std::to_string(o.shape.size()) +
                                           " dimensions but rank is " +
                                           std::to_string(o.rank));
      }
      if ((*outs)[k].contains("batch_dim") &&
          !r.batchDim((*outs)[k], op, o.rank, o.batchDim))
        return false;
      if (o.name.empty())
        return r.fail(op + ".name", "is empty");
      if (!seen.insert(o.name).second)
        return r.fail(op + ".name", "duplicate output '" + o.name + "'");
      e.outputs.push_back(std::move(o));
    }
    // Each output is written to <stem>.npy (NpyName.h): distinct stems.
    std::vector<std::string> names;
    for (const OutputSpec &o : e.outputs)
      names.push_back(o.name);
    if (std::string clash = npyStemClash(names); !clash.empty())
      return r.fail(p + ".outputs", clash);
    m.entries.push_back(std::move(e));
  }

  if (!parsePipeline(root, r, m))
    return false;

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
                                   "coordinates [" +
                                       want + "] of rank " +
                                       std::to_string(ri.rank) +
                                       " in the mesh " + m.meshString());
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
        if (e.weights.empty() || !stageRunsOn(m, e.name, ri.rank))
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
          return r.fail(sp + ".shape", "has " + std::to_string(s.shape.size()) +
                                           " dimensions but weight '" +
                                           spec.name + "' has " +
                                           std::to_string(spec.shape.size()));
        if (s.strides.size() != s.shape.size())
          return r.fail(sp + ".strides",
                        "has " + std::to_string(s.strides.size()) +
                            " entries for a shape of " +
                            std::to_string(s.shape.size()) + " dimensions");
        // Every slice has the shape of its weight: the entry's argument
        // type. (A slice of another shape would be passed to code compiled
        // for the weight's.)
        if (s.shape != spec.shape)
          return r.fail(sp + ".shape",
                        shapeText(s.shape) + " is not the shape " +
                            shapeText(spec.shape) + " of weight '" + spec.name +
                            "' of entry '" + e.name +
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
          overflow |=
              __builtin_mul_overflow(s.shape[d] - 1, s.strides[d], &reach);
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
          return r.fail(
              sp, "shape and strides reach " + std::to_string(extentBytes) +
                      " bytes but nbytes is " + std::to_string(s.nbytes));
        if (elemBytes > s.nbytes)
          return r.fail(sp, "shape holds " + std::to_string(elemBytes) +
                                " bytes of " + dtypeName(spec.dtype) +
                                " but nbytes is " + std::to_string(s.nbytes));
        slices.push_back(std::move(s));
      }
    }
    m.ranks.push_back(std::move(ri));
  }
  // A stage's weights are listed on the ranks of that stage only; the pp
  // coordinate never splits a weight, so a rank of another stage (running
  // a stage entry alone) takes the slices of its peer in that stage.
  for (const PipelineEntry &pe : m.pipeline.entries)
    for (size_t k = 0; k < pe.stages.size(); ++k) {
      const Entry *e = m.findEntry(pe.stages[k]);
      if (e->weights.empty())
        continue;
      for (RankInfo &ri : m.ranks) {
        std::vector<WeightSlice> &mine = ri.weights[e->name];
        if (mine.empty())
          mine = m.ranks[size_t(m.peerAtStage(ri.rank, int64_t(k)))]
                     .weights[e->name];
      }
    }
  return true;
}

} // namespace loom::run
