//===- Bundle.cpp - writing out/ for loom-run -----------------------------===//

#include "lib/Bundle/Bundle.h"

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Support/DType.h"
#include "loom/Support/OutputFile.h"
#include "loom/runtime/Fnv.h"
#include "loom/runtime/NpyName.h"
#include "loom/runtime/abi.h"
#include "loom/runtime/cuda.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

using namespace mlir;
using json = nlohmann::json;

namespace loom {

int64_t MeshInfo::numRanks() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

/// The manifest's element type of `t` (loom/Support/DType.h); none for the
/// types the runtime does not pass.
static std::optional<DType> dtypeOf(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF64())
    return DType::F64;
  if (t.isInteger(1))
    return DType::I1;
  if (t.isInteger(8))
    return DType::I8;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(64))
    return DType::I64;
  return std::nullopt;
}

static std::vector<int64_t> shapeOf(ShapedType t) {
  std::vector<int64_t> s;
  for (int64_t d : t.getShape())
    s.push_back(ShapedType::isDynamic(d) ? -1 : d);
  return s;
}

/// `file` made absolute (relative ones are under `baseDir`), without dots.
static std::string absolutePath(StringRef file, StringRef baseDir) {
  SmallString<256> path(file);
  if (!llvm::sys::path::is_absolute(path)) {
    SmallString<256> base(baseDir);
    llvm::sys::path::append(base, path);
    path = base;
  }
  llvm::sys::fs::make_absolute(path);
  llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
  return path.str().str();
}

bool collectEntries(ModuleOp module, const std::string &baseDir,
                    std::vector<EntryInfo> &entries, std::string &error) {
  // Recorded by loom-record-entry-points before the lowering erased the
  // loom types (the lower phase's second pass).
  auto recorded =
      module->getAttrOfType<ArrayAttr>(LoomDialect::kEntryPointsAttrName);
  if (!recorded) {
    error = "the module has no 'loom.entry_points' (the lower phase "
            "records them; compile it with loomc or loom-lower-pipeline)";
    return false;
  }
  // A pipelined module (docs/BUNDLE.md "pipeline"): its axis and stages.
  auto pipeline = module->getAttrOfType<DictionaryAttr>("loom.pipeline");
  std::string pipelineAxis;
  int64_t pipelineStages = 0;
  if (pipeline) {
    auto axis = dyn_cast_or_null<StringAttr>(pipeline.get("axis"));
    auto stages = dyn_cast_or_null<IntegerAttr>(pipeline.get("stages"));
    if (!axis || !stages || stages.getInt() < 1) {
      error = "the module's 'loom.pipeline' must be {axis = \"pp\", stages = "
              "P : i64}";
      return false;
    }
    pipelineAxis = axis.str();
    pipelineStages = stages.getInt();
  }
  for (auto fn : recorded.getAsRange<DictionaryAttr>()) {
    auto fnType = cast<FunctionType>(fn.getAs<TypeAttr>("type").getValue());
    auto argAttrs = fn.getAs<ArrayAttr>("arg_attrs");
    auto resAttrs = fn.getAs<ArrayAttr>("res_attrs");
    auto argAttr = [&](unsigned i, StringRef name) {
      return cast<DictionaryAttr>(argAttrs[i]).get(name);
    };
    auto resAttr = [&](unsigned i, StringRef name) {
      return cast<DictionaryAttr>(resAttrs[i]).get(name);
    };
    EntryInfo entry;
    entry.name = fn.getAs<StringAttr>("name").str();
    auto fail = [&](const Twine &msg) {
      error = ("entry point '" + entry.name + "': " + msg).str();
      return false;
    };
    for (unsigned i = 1; i < fnType.getNumInputs(); ++i) {
      Type t = fnType.getInput(i);
      // GGUF blocks travel as their bytes: i8 rows of blocks.
      if (auto q = dyn_cast<QTensorType>(t); q && q.getStorageType())
        t = q.getStorageType();
      auto st = dyn_cast<RankedTensorType>(t);
      if (!st)
        return fail("argument " + Twine(i - 1) + " of type " +
                    llvm::formatv("{0}", t).str() +
                    " cannot be passed by the launcher (tensors only)");
      std::optional<DType> dt = dtypeOf(st.getElementType());
      if (!dt)
        return fail("argument " + Twine(i - 1) + " has element type " +
                    llvm::formatv("{0}", st.getElementType()).str() +
                    " that the runtime does not support");
      std::string dtype = dtypeName(*dt);
      auto weight = dyn_cast_or_null<WeightAttr>(
          argAttr(i, LoomDialect::kWeightAttrName));
      if (!weight) {
        std::string name = "input" + std::to_string(entry.inputs.size());
        if (auto n = dyn_cast_or_null<StringAttr>(argAttr(i, "loom.name")))
          name = n.str();
        TensorInfo in{name, dtype, shapeOf(st), "", -1};
        for (auto [key, field] :
             {std::pair<StringRef, int64_t *>{"loom.boundary", &in.boundary},
              {"loom.entry_arg", &in.entryArg},
              {"loom.batch_dim", &in.batchDim}})
          if (auto v = dyn_cast_or_null<IntegerAttr>(argAttr(i, key)))
            *field = v.getInt();
        if (auto s = dyn_cast_or_null<StringAttr>(
                argAttr(i, LoomDialect::kStateAttrName))) {
          // Verified by the dialect: "kv_cache", [B, Hkv, ?, Dh].
          in.state = s.str();
          in.ctxDim = 2;
        }
        entry.inputs.push_back(std::move(in));
        continue;
      }
      WeightInfo w;
      w.name = weight.getName().str();
      w.dtype = dtype;
      w.shape = shapeOf(st);
      ExternAttr source = weight.getSource();
      if (!source)
        return fail("weight '" + w.name +
                    "' has no storage; give it `from <\"file\", offset = "
                    "N>` or import it from a model file");
      w.file = absolutePath(source.getFile().getValue(), baseDir);
      w.offset = source.getOffset();
      w.nbytes = st.getNumElements() * dtypeSize(*dt);
      if (SplitAttr split = weight.getSplit()) {
        if (split.getRank() != static_cast<size_t>(st.getRank()))
          return fail("weight '" + w.name + "': malformed split");
        int64_t n = 1;
        for (auto [d, size] : llvm::enumerate(split.getShape())) {
          std::vector<std::string> names;
          for (StringRef x : split.getDimAxes(d))
            names.push_back(x.str());
          w.splitAxes.push_back(std::move(names));
          w.globalShape.push_back(size);
          n *= size;
        }
        w.nbytes = n * dtypeSize(*dt);
      }
      if (InterleaveAttr il = weight.getInterleave()) {
        // Checked by loom-run's manifest reader, which owns the layout.
        w.interleave = {{"rows", il.getRows()},
                        {"block_bytes", il.getBlockBytes()},
                        {"fields", il.getFields()},
                        {"field_bytes", il.getFieldBytes()},
                        {"unit_bytes", il.getUnitBytes()}};
      }
      if (StringAttr gb = weight.getGemmB())
        w.gemmB = gb.str(); // checked by loom-run's manifest reader
      uint64_t size = 0;
      if (llvm::sys::fs::file_size(w.file, size))
        return fail("weight '" + w.name + "': cannot read its file '" + w.file +
                    "'");
      if (static_cast<uint64_t>(w.offset + w.nbytes) > size)
        return fail("weight '" + w.name + "': file '" + w.file + "' has " +
                    Twine(size) + " bytes but the weight needs bytes [" +
                    Twine(w.offset) + ", " + Twine(w.offset + w.nbytes) +
                    "); the file is truncated or the offset is wrong");
      entry.weights.push_back(std::move(w));
    }
    for (auto [i, t] : llvm::enumerate(fnType.getResults())) {
      auto st = dyn_cast<RankedTensorType>(t);
      std::optional<DType> dt =
          st ? dtypeOf(st.getElementType()) : std::nullopt;
      if (!dt)
        return fail("result " + Twine(i) + " of type " +
                    llvm::formatv("{0}", t).str() +
                    " cannot be returned to the launcher");
      std::string dtype = dtypeName(*dt);
      std::string name = "output" + std::to_string(i);
      if (auto n = dyn_cast_or_null<StringAttr>(resAttr(i, "loom.name")))
        name = n.str();
      TensorInfo out{name, dtype, shapeOf(st), "", -1};
      if (auto v = dyn_cast_or_null<IntegerAttr>(resAttr(i, "loom.batch_dim")))
        out.batchDim = v.getInt();
      entry.outputs.push_back(std::move(out));
    }
    // loom-run writes each output to <stem>.npy (NpyName.h).
    std::vector<std::string> outNames;
    for (const TensorInfo &o : entry.outputs)
      outNames.push_back(o.name);
    if (std::string clash = npyStemClash(outNames); !clash.empty())
      return fail(clash);
    if (pipeline) {
      // Contract B: the stage functions of `@f` are `@f__stage<k>`.
      StringRef name = entry.name;
      size_t at = name.rfind("__stage");
      unsigned k = 0;
      if (at != StringRef::npos && at > 0 &&
          !name.drop_front(at + 7).getAsInteger(10, k)) {
        entry.pipelineEntry = name.take_front(at).str();
        entry.stage = k;
        entry.pipelineAxis = pipelineAxis;
        entry.pipelineStages = pipelineStages;
      }
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) {
    error = "the module has no public function to run (entry points are "
            "the public func.func ops with a body)";
    return false;
  }
  return true;
}

bool collectMesh(ModuleOp module, const std::string &meshFlag, MeshInfo &mesh,
                 std::string &error) {
  // Recorded by loom-record-entry-points (the lowering erases the ops).
  SmallVector<MeshAttr> meshes;
  if (auto recorded =
          module->getAttrOfType<ArrayAttr>(LoomDialect::kMeshesAttrName))
    meshes = llvm::to_vector(recorded.getAsRange<MeshAttr>());
  else
    for (MeshOp op : module.getOps<MeshOp>())
      meshes.push_back(op.getMesh());
  if (meshes.size() > 1) {
    error = "the module declares " + std::to_string(meshes.size()) +
            " meshes; a bundle runs on one";
    return false;
  }
  if (!meshes.empty()) {
    MeshAttr m = meshes.front();
    for (auto [n, s] : llvm::zip(m.getAxisNames(), m.getAxisSizes())) {
      mesh.axes.push_back(n.str());
      mesh.shape.push_back(s);
    }
    return true;
  }
  if (meshFlag.empty()) {
    mesh.axes = {"world"};
    mesh.shape = {1};
    return true;
  }
  SmallVector<StringRef> parts;
  StringRef(meshFlag).split(parts, ',');
  for (StringRef part : parts) {
    auto [name, size] = part.split('=');
    int64_t n = 0;
    if (name.trim().empty() || size.trim().getAsInteger(10, n) || n < 1) {
      error = "--mesh '" + meshFlag +
              "': expected axis=size pairs separated by commas, e.g. "
              "dp=2,tp=4";
      return false;
    }
    mesh.axes.push_back(name.trim().str());
    mesh.shape.push_back(n);
  }
  return true;
}

static json toJson(const TensorInfo &t, bool rankOnly, bool stage = false) {
  json j{{"name", t.name}, {"dtype", t.dtype}};
  if (rankOnly)
    j["rank"] = t.shape.size();
  // A stage's results carry their per-rank shape: the next stage's
  // boundary inputs are checked against it.
  if (!rankOnly || stage)
    j["shape"] = t.shape;
  if (!t.state.empty()) {
    j["state"] = t.state;
    j["ctx_dim"] = t.ctxDim;
  }
  if (t.boundary >= 0)
    j["boundary"] = t.boundary;
  if (t.entryArg >= 0)
    j["entry_arg"] = t.entryArg;
  if (t.batchDim >= 0)
    j["batch_dim"] = t.batchDim;
  return j;
}

/// manifest["pipeline"] of a pipelined module: the axis, its index in the
/// mesh, the stage count and per pipelined entry its stage entries in
/// order. False + error when the stages and the mesh disagree.
static bool pipelineSection(const MeshInfo &mesh,
                            const std::vector<EntryInfo> &entries, json &out,
                            int64_t &axisIndex, std::string &error) {
  std::map<std::string, std::vector<std::string>> byEntry;
  std::string axis;
  int64_t stages = 0;
  for (const EntryInfo &e : entries) {
    if (e.stage < 0)
      continue;
    axis = e.pipelineAxis;
    stages = e.pipelineStages;
    auto &list = byEntry[e.pipelineEntry];
    if (e.stage >= stages) {
      error = "stage function '" + e.name + "': stage " +
              std::to_string(e.stage) + " of a pipeline of " +
              std::to_string(stages) + " stages";
      return false;
    }
    list.resize(size_t(stages));
    list[size_t(e.stage)] = e.name;
  }
  if (byEntry.empty())
    return true;
  auto it = std::find(mesh.axes.begin(), mesh.axes.end(), axis);
  if (it == mesh.axes.end()) {
    error = "the module is pipelined over the mesh axis '" + axis +
            "', which the mesh does not have";
    return false;
  }
  axisIndex = it - mesh.axes.begin();
  if (mesh.shape[size_t(axisIndex)] != stages) {
    error = "the module has " + std::to_string(stages) +
            " pipeline stages but the mesh axis '" + axis + "' has " +
            std::to_string(mesh.shape[size_t(axisIndex)]) + " ranks";
    return false;
  }
  json jentries = json::object();
  for (auto &[name, list] : byEntry) {
    for (size_t k = 0; k < list.size(); ++k)
      if (list[k].empty()) {
        error = "pipelined entry '" + name + "' has no stage function '" +
                name + "__stage" + std::to_string(k) + "'";
        return false;
      }
    jentries[name] = list;
  }
  out = {{"axis", axis},
         {"axis_index", axisIndex},
         {"stages", stages},
         {"entries", jentries}};
  return true;
}

/// An attribute of `llm.model` as JSON (strings, integers, floats, bools,
/// arrays and dictionaries of them).
static json attrToJson(Attribute a) {
  if (auto s = dyn_cast<StringAttr>(a))
    return s.str();
  if (auto b = dyn_cast<BoolAttr>(a))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(a))
    return i.getValue().getSExtValue();
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto arr = dyn_cast<ArrayAttr>(a)) {
    json j = json::array();
    for (Attribute e : arr)
      j.push_back(attrToJson(e));
    return j;
  }
  if (auto d = dyn_cast<DictionaryAttr>(a)) {
    json j = json::object();
    for (NamedAttribute e : d)
      j[e.getName().str()] = attrToJson(e.getValue());
    return j;
  }
  return llvm::formatv("{0}", a).str();
}

bool collectLlm(ModuleOp module, const std::string &baseDir, LlmInfo &llm,
                std::string &error) {
  llm = {};
  auto model = module->getAttrOfType<DictionaryAttr>("llm.model");
  if (!model)
    return true;
  llm.model = attrToJson(model).dump();
  auto tok = module->getAttrOfType<DictionaryAttr>("llm.tokenizer");
  if (!tok)
    return true;
  auto file = dyn_cast_or_null<StringAttr>(tok.get("file"));
  auto format = dyn_cast_or_null<StringAttr>(tok.get("format"));
  if (!file || !format) {
    error = "llm.tokenizer needs 'file' and 'format' (strings)";
    return false;
  }
  // A GGUF file without tokenizer metadata has no tokenizer.
  if (format.getValue() == "gguf" && !tok.get("model"))
    return true;
  llm.tokenizerFormat = format.str();
  llm.tokenizerFile = absolutePath(file.getValue(), baseDir);
  return true;
}

/// `file` (absolute, without dots) relative to `dir` when it lies under it,
/// else `file` unchanged.
static std::string relativeTo(StringRef file, StringRef dir) {
  StringRef rest = file;
  if (dir.empty() || !rest.consume_front(dir) || rest.empty() ||
      !llvm::sys::path::is_separator(rest.front()))
    return file.str();
  return rest.ltrim(llvm::sys::path::get_separator()).str();
}

/// manifest["integrity"]: FNV-1a 64 of the library's bytes and of the
/// compact JSON of "entries" (nlohmann's dump: sorted keys, no spaces);
/// loom-run recomputes both before dlopen (docs/BUNDLE.md).
static bool addIntegrity(json &manifest, const std::string &soPath,
                         std::string &error) {
  uint64_t libHash = 0;
  if (!fnv1a64File(soPath, libHash)) {
    error = "cannot read " + soPath + " to hash it";
    return false;
  }
  std::string entries = manifest["entries"].dump();
  manifest["integrity"] = {
      {"library", fnvString(libHash)},
      {"entries", fnvString(fnv1a64(entries.data(), entries.size()))}};
  // The pipeline section is covered like the entries.
  if (manifest.contains("pipeline")) {
    std::string pipeline = manifest["pipeline"].dump();
    manifest["integrity"]["pipeline"] =
        fnvString(fnv1a64(pipeline.data(), pipeline.size()));
  }
  return true;
}

/// manifest["target"]: the CPU and the x86 features the code may use; for
/// a GPU program also the device, its chips and the memory plan.
static void addTarget(json &manifest, const CpuTargetInfo *target,
                      const GpuTargetInfo *gpu) {
  if (!target || target->cpu.empty())
    return;
  manifest["target"] = {{"cpu", target->cpu}, {"features", target->features}};
  if (!gpu || gpu->device.empty())
    return;
  json &t = manifest["target"];
  t["device"] = gpu->device;
  t["chips"] = gpu->chips;
  t["format"] = gpu->format;
  // The mgpu* / loom_cuda_* functions the host code calls (additive, as
  // abi_version: loom-run refuses a bundle newer than its CUDA runtime).
  t["cuda_abi_version"] = LOOM_CUDA_ABI_VERSION;
  json plan = json::object();
  for (const GpuTargetInfo::Plan &p : gpu->memoryPlan) {
    plan[p.entry] = {{"peak_bytes", p.peakBytes},
                     {"upload_bytes", p.uploadBytes},
                     {"resident_bytes", p.residentBytes},
                     {"workspace_bytes", p.workspaceBytes}};
    if (p.stateBytesPerPosition)
      plan[p.entry]["state_bytes_per_position"] = p.stateBytesPerPosition;
    if (p.maxDim > 0)
      plan[p.entry]["max_dim"] = p.maxDim;
  }
  t["memory_plan"] = plan;
}

bool writeBundle(
    const std::string &outDir, const std::string &model, const MeshInfo &mesh,
    const std::vector<EntryInfo> &entries, const std::string &programIR,
    const std::function<bool(const std::string &, std::string &)> &emitLibrary,
    const std::string &stagedDir, std::string &error,
    const CpuTargetInfo *target, const LlmInfo &llm, const GpuTargetInfo *gpu) {
  // Weight files under `stagedDir` move into the bundle with it.
  SmallString<256> staged(stagedDir);
  if (!staged.empty()) {
    llvm::sys::fs::make_absolute(staged);
    llvm::sys::path::remove_dots(staged, /*remove_dot_dot=*/true);
  }
  SmallString<256> out(outDir);
  llvm::sys::path::remove_dots(out, true);
  while (out.size() > 1 && llvm::sys::path::is_separator(out.back()))
    out.pop_back();
  std::string tmp = (out + ".tmp-" + Twine(::getpid())).str();
  llvm::sys::fs::remove_directories(tmp);
  if (std::error_code ec = llvm::sys::fs::create_directories(tmp + "/ir")) {
    error = "cannot create " + tmp + ": " + ec.message();
    return false;
  }
  auto cleanup = [&](const std::string &msg) {
    error = msg;
    llvm::sys::fs::remove_directories(tmp);
    return false;
  };
  if (std::string msg = loom::writeFileChecked(
          tmp + "/ir/program.mlir", [&](raw_ostream &os) { os << programIR; });
      !msg.empty())
    return cleanup(msg);

  std::string lib = model + ".so";
  std::string libError;
  if (!emitLibrary(tmp + "/" + lib, libError))
    return cleanup(libError);

  json manifest;
  manifest["format"] = "loom-bundle";
  manifest["version"] = kBundleVersion;
  manifest["abi_version"] = LOOM_RT_ABI_VERSION;
  if (llm.model.empty()) {
    manifest["model"] = model;
  } else {
    // An LLM: the model's description (llm.model) with its name.
    json jm = json::parse(llm.model);
    jm["name"] = model;
    manifest["model"] = jm;
    if (!llm.tokenizerFormat.empty())
      manifest["tokenizer"] = {{"format", llm.tokenizerFormat},
                               {"file", llm.tokenizerFile}};
  }
  manifest["mesh"] = {{"axes", mesh.axes}, {"shape", mesh.shape}};
  manifest["num_ranks"] = mesh.numRanks();
  manifest["library"] = lib;
  // loom-bufferize never writes an entry's non-state arguments in place.
  manifest["inputs_read_only"] = true;
  json jentries = json::array();
  for (const EntryInfo &e : entries) {
    json je{{"name", e.name}, {"symbol", "loom_entry_" + e.name}};
    je["inputs"] = json::array();
    for (const TensorInfo &t : e.inputs)
      je["inputs"].push_back(toJson(t, false));
    je["outputs"] = json::array();
    for (const TensorInfo &t : e.outputs)
      je["outputs"].push_back(toJson(t, true, e.stage >= 0));
    je["weights"] = json::array();
    for (const WeightInfo &w : e.weights) {
      json jw{{"name", w.name}, {"dtype", w.dtype}, {"shape", w.shape}};
      if (!w.interleave.empty()) {
        json il = json::object();
        for (const auto &[key, v] : w.interleave)
          il[key] = v;
        jw["interleave"] = il;
      }
      if (!w.gemmB.empty())
        jw["gemm_b"] = w.gemmB;
      je["weights"].push_back(jw);
    }
    jentries.push_back(je);
  }
  manifest["entries"] = jentries;
  json pipeline;
  int64_t ppAxis = -1;
  if (!pipelineSection(mesh, entries, pipeline, ppAxis, error))
    return cleanup(error);
  if (!pipeline.is_null())
    manifest["pipeline"] = pipeline;
  // Every rank of an SPMD program reads whole weights; the partition phase
  // gives each rank its own slices.
  json ranks = json::array();
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    std::vector<int64_t> coords(mesh.shape.size());
    int64_t rest = r;
    for (size_t a = mesh.shape.size(); a-- > 0;) {
      coords[a] = rest % mesh.shape[a];
      rest /= mesh.shape[a];
    }
    json jr{{"rank", r}, {"coords", coords}, {"ir", "ir/program.mlir"}};
    json jw = json::object();
    for (const EntryInfo &e : entries) {
      // A rank maps only the weights of its own stage.
      if (e.stage >= 0 && ppAxis >= 0 && coords[size_t(ppAxis)] != e.stage)
        continue;
      json list = json::array();
      for (const WeightInfo &w : e.weights) {
        const std::vector<int64_t> &full =
            w.globalShape.empty() ? w.shape : w.globalShape;
        std::vector<int64_t> strides(full.size(), 1);
        for (size_t d = full.size(); d-- > 1;)
          strides[d - 1] = strides[d] * full[d];
        int64_t offset = w.offset, nbytes = w.nbytes;
        if (!w.globalShape.empty()) {
          // This rank's block: per dimension its index over the
          // dimension's axes (major first), in elements of the whole
          // tensor; the bytes from the block's first to its last element.
          int64_t elem = w.nbytes, first = 0, last = 0;
          for (int64_t g : w.globalShape)
            elem /= g;
          for (size_t d = 0; d < full.size(); ++d) {
            int64_t index = 0;
            for (const std::string &a : w.splitAxes[d]) {
              auto it = std::find(mesh.axes.begin(), mesh.axes.end(), a);
              size_t ai = static_cast<size_t>(it - mesh.axes.begin());
              index = index * mesh.shape[ai] + coords[ai];
            }
            first += index * w.shape[d] * strides[d];
            last += (w.shape[d] - 1) * strides[d];
          }
          offset = w.offset + first * elem;
          nbytes = (last + 1) * elem;
        }
        list.push_back({{"name", w.name},
                        {"file", relativeTo(w.file, staged)},
                        {"offset", offset},
                        {"nbytes", nbytes},
                        {"shape", w.shape},
                        {"strides", strides}});
      }
      jw[e.name] = list;
    }
    jr["weights"] = jw;
    ranks.push_back(jr);
  }
  manifest["ranks"] = ranks;
  addTarget(manifest, target, gpu);
  // Last: the hashes cover the entries exactly as written.
  if (!addIntegrity(manifest, tmp + "/" + lib, error))
    return cleanup(error);
  if (std::string msg = loom::writeFileChecked(
          tmp + "/manifest.json",
          [&](raw_ostream &os) { os << manifest.dump(2) << "\n"; });
      !msg.empty())
    return cleanup(msg);

  // The staged files join the bundle before it is renamed into place.
  if (!staged.empty() && llvm::sys::fs::is_directory(staged)) {
    std::vector<std::string> names;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(staged, ec), end;
         it != end && !ec; it.increment(ec))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    if (ec)
      return cleanup("cannot list " + staged.str().str() + ": " + ec.message());
    for (const std::string &name : names) {
      std::string from = (staged + "/" + name).str(), to = tmp + "/" + name;
      if (llvm::sys::fs::exists(to))
        return cleanup("cannot move " + from +
                       " into the bundle: it has its own '" + name + "'");
      if (std::error_code rc = llvm::sys::fs::rename(from, to))
        return cleanup("cannot move " + from +
                       " into the bundle: " + rc.message());
    }
  }

  // Swap the finished bundle into place; an older bundle is replaced whole.
  std::string old = (out + ".old-" + Twine(::getpid())).str();
  bool hadOld = llvm::sys::fs::exists(out);
  if (hadOld) {
    if (!llvm::sys::fs::exists(out + "/manifest.json"))
      return cleanup("'" + out.str().str() +
                     "' exists and is not a Loom bundle; refusing to "
                     "replace it (choose another -o)");
    if (std::error_code ec = llvm::sys::fs::rename(out, old))
      return cleanup("cannot move the old bundle aside: " + ec.message());
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, out)) {
    if (hadOld)
      llvm::sys::fs::rename(old, out);
    return cleanup("cannot rename " + tmp + " to " + out.str().str() + ": " +
                   ec.message());
  }
  if (hadOld)
    llvm::sys::fs::remove_directories(old);
  return true;
}

} // namespace loom
