//===- loom-inspect.cpp - Print the tensors and metadata of a model file --===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
//   loom-inspect FILE [--json] [--no-checksum] [--max-array N]
//                [--dequant NAME --out x.npy]
//
// FILE is a .gguf, a .safetensors, a model.safetensors.index.json, a folder
// holding one of those, or a config.json. For each tensor it prints the name,
// format, shape (outermost first), absolute offset, byte size and the FNV-1a
// 64 checksum of its bytes, plus the metadata (GGUF key/values, safetensors
// __metadata__). --dequant writes one tensor, decoded to float32, as .npy.
// Bad input gives the reader's message on stderr and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/Gguf.h"
#include "loom/Formats/HfConfig.h"
#include "loom/Formats/Safetensors.h"
#include "loom/Formats/WeightStore.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace loom::fmt;
using Json = nlohmann::ordered_json;

namespace {
struct Options {
  std::string input;
  bool json = false;
  bool checksum = true;
  uint64_t maxArray = UINT64_MAX; // Elements of a metadata array to print.
  bool maxArraySet = false;
  std::string dequant;
  std::string out;
};

int usage() {
  std::fprintf(stderr, "usage: loom-inspect FILE [--json] [--no-checksum] "
                       "[--max-array N] [--dequant NAME --out x.npy]\n");
  return 2;
}

int fail(const Error &e) {
  std::fprintf(stderr, "loom-inspect: error: %s\n", e.message.c_str());
  return 1;
}

bool endsWith(const std::string &s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         std::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

/// A GGUF metadata value as JSON (arrays truncated to `maxArray`).
Json valueToJson(const GgufValue &v, uint64_t maxArray) {
  switch (v.type()) {
  case GgufValueType::U8:
  case GgufValueType::U16:
  case GgufValueType::U32:
  case GgufValueType::U64:
    return *v.asUInt();
  case GgufValueType::I8:
  case GgufValueType::I16:
  case GgufValueType::I32:
  case GgufValueType::I64:
    return *v.asInt();
  case GgufValueType::F32:
  case GgufValueType::F64:
    return *v.asFloat();
  case GgufValueType::Bool:
    return *v.asBool();
  case GgufValueType::String:
    return std::string(*v.asString());
  case GgufValueType::Array: {
    Json a = Json::array();
    uint64_t i = 0;
    for (GgufValue e : v) {
      if (i++ >= maxArray)
        break;
      a.push_back(valueToJson(e, maxArray));
    }
    return a;
  }
  }
  return nullptr;
}

std::string dump(const Json &j) {
  // Replace invalid UTF-8 rather than abort (nlohmann would throw).
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

struct Model {
  std::string kind;
  std::vector<TensorRef> tensors;
  Json meta = Json::object();
  Json extra = Json::object();
};

int writeNpy(const std::string &path, const std::vector<float> &values,
             const std::vector<int64_t> &shape) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    header += std::to_string(shape[i]) +
              (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  header += "), }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return fail(makeError(path, ": cannot write: ", std::strerror(errno)));
  uint16_t len = static_cast<uint16_t>(header.size());
  bool ok = std::fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8 &&
            std::fwrite(&len, 2, 1, f) == 1 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(values.data(), sizeof(float), values.size(), f) ==
                values.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    return fail(makeError(path, ": write failed"));
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json")
      opt.json = true;
    else if (a == "--no-checksum")
      opt.checksum = false;
    else if (a == "--max-array" && i + 1 < argc) {
      opt.maxArray = std::strtoull(argv[++i], nullptr, 10);
      opt.maxArraySet = true;
    } else if (a == "--dequant" && i + 1 < argc)
      opt.dequant = argv[++i];
    else if (a == "--out" && i + 1 < argc)
      opt.out = argv[++i];
    else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (!a.empty() && a[0] == '-')
      return usage();
    else if (opt.input.empty())
      opt.input = a;
    else
      return usage();
  }
  if (opt.input.empty() || (opt.dequant.empty() != opt.out.empty()))
    return usage();
  // Text output abbreviates long arrays (a tokenizer has ~50k entries).
  if (!opt.json && !opt.maxArraySet)
    opt.maxArray = 8;

  // config.json: print the parsed configuration.
  if (endsWith(opt.input, "config.json") &&
      !endsWith(opt.input, ".index.json")) {
    auto c = readHfConfig(opt.input);
    if (!c)
      return fail(c.error());
    Json j = {{"format", "hf-config"},
              {"model_type", c->modelType},
              {"architecture", c->architecture},
              {"hidden_size", c->hiddenSize},
              {"num_layers", c->numLayers},
              {"num_heads", c->numHeads},
              {"num_kv_heads", c->numKvHeads},
              {"head_dim", c->headDim},
              {"intermediate_size", c->intermediateSize},
              {"vocab_size", c->vocabSize},
              {"max_position_embeddings", c->maxPositionEmbeddings},
              {"norm", c->rmsNorm ? "rms" : "layer"},
              {"norm_eps", c->normEps},
              {"rope_theta", c->ropeTheta},
              {"tie_word_embeddings", c->tieWordEmbeddings},
              {"activation", c->activation},
              {"torch_dtype", c->torchDtype},
              {"attention_bias", c->attentionBias}};
    if (c->ropeScaling)
      j["rope_scaling"] = {{"type", c->ropeScaling->type},
                           {"factor", c->ropeScaling->factor}};
    if (c->slidingWindow)
      j["sliding_window"] = *c->slidingWindow;
    std::printf("%s\n", opt.json ? dump(j).c_str() : j.dump(2).c_str());
    return 0;
  }

  Model model;
  WeightStore store;
  GgufFile gguf;
  SafetensorsFile st;
  bool isGguf = false;
  {
    // Sniff the magic rather than trust the extension.
    FILE *f = std::fopen(opt.input.c_str(), "rb");
    char magic[4] = {0, 0, 0, 0};
    if (f) {
      isGguf =
          std::fread(magic, 1, 4, f) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
      std::fclose(f);
    }
    if (!isGguf && endsWith(opt.input, ".gguf"))
      isGguf = true; // Let the GGUF reader report what is wrong.
  }
  if (isGguf) {
    auto r = openGguf(opt.input);
    if (!r)
      return fail(r.error());
    gguf = r.take();
    store.adopt(gguf.mapping());
    model.kind = "gguf";
    model.tensors = gguf.tensors();
    for (const GgufKeyValue &kv : gguf.metadata()) {
      Json entry = {{"type", std::string(ggufValueTypeName(kv.value.type()))}};
      if (kv.value.isArray()) {
        entry["element_type"] =
            std::string(ggufValueTypeName(kv.value.elementType()));
        entry["count"] = kv.value.size();
      }
      entry["value"] = valueToJson(kv.value, opt.maxArray);
      model.meta[std::string(kv.key)] = entry;
    }
    model.extra = {{"version", gguf.version()},
                   {"alignment", gguf.alignment()},
                   {"data_offset", gguf.dataOffset()}};
  } else {
    auto r = openSafetensorsModel(opt.input);
    if (!r)
      return fail(r.error());
    st = r.take();
    for (const auto &m : st.mappings())
      store.adopt(m);
    model.kind = "safetensors";
    model.tensors = st.tensors();
    for (const auto &[k, v] : st.metadata())
      model.meta[k] = v;
    model.extra = {{"files", st.files()}, {"data_offset", st.dataOffset()}};
  }

  if (!opt.dequant.empty()) {
    const TensorRef *ref = nullptr;
    for (const TensorRef &t : model.tensors)
      if (t.name == opt.dequant)
        ref = &t;
    if (!ref)
      return fail(
          makeError(opt.input, ": no tensor named '", opt.dequant, "'"));
    auto bytes = store.bytes(*ref);
    if (!bytes)
      return fail(bytes.error());
    std::vector<float> values(ref->numElements());
    auto status = dequantizeToF32(ref->format, *bytes, values);
    if (!status)
      return fail(status.error());
    return writeNpy(opt.out, values, ref->shape);
  }

  Json tensors = Json::array();
  for (const TensorRef &t : model.tensors) {
    Json j = {
        {"name", t.name},    {"format", std::string(elementTypeName(t.format))},
        {"shape", t.shape},  {"strides", t.strides},
        {"file", t.file},    {"offset", t.offset},
        {"nbytes", t.nbytes}};
    if (opt.checksum) {
      auto bytes = store.bytes(t);
      if (!bytes)
        return fail(bytes.error());
      j["fnv1a64"] = fnv1a64(*bytes);
    }
    tensors.push_back(std::move(j));
  }

  if (opt.json) {
    Json out = {{"format", model.kind}};
    for (auto it = model.extra.begin(); it != model.extra.end(); ++it)
      out[it.key()] = it.value();
    out["metadata"] = model.meta;
    out["tensors"] = tensors;
    std::printf("%s\n", dump(out).c_str());
    return 0;
  }

  std::printf("%s: %s, %zu tensors", opt.input.c_str(), model.kind.c_str(),
              model.tensors.size());
  if (isGguf)
    std::printf(", version %u, alignment %" PRIu64 ", data at byte %" PRIu64,
                gguf.version(), gguf.alignment(), gguf.dataOffset());
  std::printf("\n");
  for (auto it = model.meta.begin(); it != model.meta.end(); ++it) {
    const Json &e = it.value();
    if (isGguf) {
      std::string value = dump(e["value"]);
      if (e.contains("count") && e["count"].get<uint64_t>() > e["value"].size())
        value += " ... (" + std::to_string(e["count"].get<uint64_t>()) +
                 " elements)";
      std::printf("  %s: %s = %s\n", it.key().c_str(),
                  e["type"].get<std::string>().c_str(), value.c_str());
    } else {
      std::printf("  %s = %s\n", it.key().c_str(), dump(e).c_str());
    }
  }
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const TensorRef &t = model.tensors[i];
    std::printf("%-40s %-5s %-20s offset %-12" PRIu64 " nbytes %-12" PRIu64,
                t.name.c_str(), std::string(elementTypeName(t.format)).c_str(),
                shapeString(t.shape).c_str(), t.offset, t.nbytes);
    if (opt.checksum)
      std::printf(" fnv1a64 %016" PRIx64,
                  tensors[i]["fnv1a64"].get<uint64_t>());
    std::printf("\n");
  }
  return 0;
}
