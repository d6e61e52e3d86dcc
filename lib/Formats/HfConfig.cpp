//===- HfConfig.cpp - Hugging Face config.json reader ---------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Defaults follow transformers' LlamaConfig, MistralConfig, Qwen2Config and
// GPT2Config (and PretrainedConfig for tie_word_embeddings, which is true
// unless a family overrides it: llama, mistral and qwen2 default it to false).
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/HfConfig.h"

#include "JsonUtil.h"
#include "loom/Formats/Safetensors.h"

#include <cmath>
#include <sys/stat.h>

using namespace loom::fmt;
using namespace loom::fmt::detail;

namespace {
/// Field access with messages that name the file, the key and its offset.
class Fields {
public:
  Fields(const Json &root, std::string_view text, std::string_view file)
      : root(root), text(text), file(file) {}

  Error error(std::string_view key, const std::string &what) const {
    return makeError(file, ": key '", key, "' at byte ",
                     keyOffset(text, key, 0), ": ", what);
  }
  const Json *get(std::string_view key) const {
    auto it = root.find(key);
    if (it == root.end() || it->is_null())
      return nullptr;
    return &*it;
  }
  bool has(std::string_view key) const { return get(key) != nullptr; }

  /// A positive integer; `fallback` when absent (nullopt: required).
  Result<int64_t> positive(std::string_view key,
                           std::optional<int64_t> fallback) const {
    const Json *v = get(key);
    if (!v) {
      if (fallback)
        return *fallback;
      return makeError(file, ": byte 0: required key '", key,
                       "' is missing");
    }
    auto i = asNonNegativeInt(*v);
    if (!i)
      return error(key, "expected a positive integer, got " +
                            std::string(jsonKind(*v)) +
                            (v->is_number_integer() ? " that is negative" : ""));
    if (*i == 0)
      return error(key, "expected a positive integer, got 0");
    return *i;
  }
  /// A finite number (integers accepted), `fallback` when absent.
  Result<double> number(std::string_view key, double fallback) const {
    const Json *v = get(key);
    if (!v)
      return fallback;
    if (!v->is_number())
      return error(key, "expected a number, got " + std::string(jsonKind(*v)));
    double d = v->get<double>();
    if (!std::isfinite(d))
      return error(key, "expected a finite number");
    return d;
  }
  Result<bool> boolean(std::string_view key, bool fallback) const {
    const Json *v = get(key);
    if (!v)
      return fallback;
    if (!v->is_boolean())
      return error(key, "expected true or false, got " +
                            std::string(jsonKind(*v)));
    return v->get<bool>();
  }
  Result<std::string> string(std::string_view key,
                             std::string_view fallback) const {
    const Json *v = get(key);
    if (!v)
      return std::string(fallback);
    if (!v->is_string())
      return error(key, "expected a string, got " + std::string(jsonKind(*v)));
    return v->get<std::string>();
  }

private:
  const Json &root;
  std::string_view text;
  std::string_view file;
};

Result<std::optional<RopeScaling>> parseRopeScaling(const Fields &f,
                                                    const Json *v) {
  if (!v)
    return std::optional<RopeScaling>();
  if (!v->is_object())
    return f.error("rope_scaling", "expected an object or null, got " +
                                       std::string(jsonKind(*v)));
  RopeScaling rs;
  Fields sub(*v, "", "");
  // Re-anchors an error of a nested field at "rope_scaling".
  auto at = [&](std::string_view key, const Error &e) {
    size_t p = e.message.rfind(": ");
    std::string tail =
        p == std::string::npos ? e.message : e.message.substr(p + 2);
    // Appended piecewise: "'" + std::string(...) trips a false -Wrestrict
    // in g++ 12 (GCC PR 105651).
    std::string what(1, '\'');
    what.append(key).append("': ").append(tail);
    return f.error("rope_scaling", what);
  };
  // "rope_type" is the current name, "type" the older one.
  auto type = sub.string("rope_type", "");
  if (!type)
    return at("rope_type", type.error());
  if (type->empty()) {
    type = sub.string("type", "");
    if (!type)
      return at("type", type.error());
  }
  rs.type = *type;
  auto factor = sub.number("factor", 1.0);
  if (!factor)
    return at("factor", factor.error());
  if (*factor <= 0)
    return f.error("rope_scaling", "'factor' must be positive");
  rs.factor = *factor;
  if (sub.has("low_freq_factor")) {
    auto x = sub.number("low_freq_factor", 0);
    if (!x)
      return at("low_freq_factor", x.error());
    rs.lowFreqFactor = *x;
  }
  if (sub.has("high_freq_factor")) {
    auto x = sub.number("high_freq_factor", 0);
    if (!x)
      return at("high_freq_factor", x.error());
    rs.highFreqFactor = *x;
  }
  if (sub.has("original_max_position_embeddings")) {
    auto x = sub.positive("original_max_position_embeddings", 1);
    if (!x)
      return at("original_max_position_embeddings", x.error());
    rs.originalMaxPositionEmbeddings = *x;
  }
  return std::optional<RopeScaling>(rs);
}
} // namespace

Result<HfConfig> loom::fmt::parseHfConfig(std::string_view text,
                                          std::string_view file) {
  LOOM_FMT_ASSIGN(root, parseJson(text, file, 0));
  if (!root.is_object())
    return makeError(file, ": byte 0: config is ", jsonKind(root),
                     ", expected a JSON object");
  Fields f(root, text, file);
  HfConfig c;
  LOOM_FMT_ASSIGN(modelType, f.string("model_type", ""));
  if (modelType.empty())
    return makeError(file, ": byte 0: required key 'model_type' is missing");
  if (modelType != "llama" && modelType != "mistral" && modelType != "qwen2" &&
      modelType != "gpt2")
    return f.error("model_type", "model type '" + modelType +
                                     "' is not supported (supported: llama, "
                                     "mistral, qwen2, gpt2)");
  c.modelType = modelType;
  if (const Json *a = f.get("architectures")) {
    if (!a->is_array() || (a->size() && !(*a)[0].is_string()))
      return f.error("architectures", "expected an array of strings");
    if (a->size())
      c.architecture = (*a)[0].get<std::string>();
  }
  for (const char *dtypeKey : {"torch_dtype", "dtype"}) {
    if (f.has(dtypeKey)) {
      LOOM_FMT_ASSIGN(dtype, f.string(dtypeKey, ""));
      c.torchDtype = dtype;
      break;
    }
  }

  if (modelType == "gpt2") {
    LOOM_FMT_ASSIGN(hidden, f.positive("n_embd", std::nullopt));
    LOOM_FMT_ASSIGN(layers, f.positive("n_layer", std::nullopt));
    LOOM_FMT_ASSIGN(heads, f.positive("n_head", std::nullopt));
    LOOM_FMT_ASSIGN(vocab, f.positive("vocab_size", std::nullopt));
    LOOM_FMT_ASSIGN(positions, f.positive("n_positions", 1024));
    if (hidden > INT64_MAX / 4)
      return f.error("n_embd", "value too large");
    LOOM_FMT_ASSIGN(inner, f.positive("n_inner", 4 * hidden));
    LOOM_FMT_ASSIGN(eps, f.number("layer_norm_epsilon", 1e-5));
    LOOM_FMT_ASSIGN(act, f.string("activation_function", "gelu_new"));
    LOOM_FMT_ASSIGN(tie, f.boolean("tie_word_embeddings", true));
    if (hidden % heads != 0)
      return f.error("n_head", "n_embd " + std::to_string(hidden) +
                                   " is not a multiple of n_head " +
                                   std::to_string(heads));
    c.hiddenSize = hidden;
    c.numLayers = layers;
    c.numHeads = heads;
    c.numKvHeads = heads;
    c.headDim = hidden / heads;
    c.intermediateSize = inner;
    c.vocabSize = vocab;
    c.maxPositionEmbeddings = positions;
    c.rmsNorm = false;
    c.normEps = eps;
    c.ropeTheta = 0;
    c.tieWordEmbeddings = tie;
    c.activation = act;
    c.attentionBias = true;
    if (eps <= 0)
      return f.error("layer_norm_epsilon", "must be positive");
    return c;
  }

  // llama, mistral, qwen2: LlamaConfig field names.
  int64_t defaultPositions = modelType == "llama"     ? 2048
                             : modelType == "mistral" ? 4096 * 32
                                                      : 32768;
  LOOM_FMT_ASSIGN(hidden, f.positive("hidden_size", std::nullopt));
  LOOM_FMT_ASSIGN(layers, f.positive("num_hidden_layers", std::nullopt));
  LOOM_FMT_ASSIGN(heads, f.positive("num_attention_heads", std::nullopt));
  LOOM_FMT_ASSIGN(kvHeads, f.positive("num_key_value_heads", heads));
  LOOM_FMT_ASSIGN(inter, f.positive("intermediate_size", std::nullopt));
  LOOM_FMT_ASSIGN(vocab, f.positive("vocab_size", std::nullopt));
  LOOM_FMT_ASSIGN(positions,
                  f.positive("max_position_embeddings", defaultPositions));
  LOOM_FMT_ASSIGN(eps, f.number("rms_norm_eps", 1e-6));
  LOOM_FMT_ASSIGN(act, f.string("hidden_act", "silu"));
  LOOM_FMT_ASSIGN(tie, f.boolean("tie_word_embeddings", false));
  LOOM_FMT_ASSIGN(bias, f.boolean("attention_bias", modelType == "qwen2"));

  // rope_theta: top level, or inside "rope_parameters" (transformers v5).
  double theta = 10000.0;
  const Json *ropeParams = f.get("rope_parameters");
  if (f.has("rope_theta")) {
    LOOM_FMT_ASSIGN(t, f.number("rope_theta", 10000.0));
    theta = t;
  } else if (ropeParams && ropeParams->is_object()) {
    auto t = ropeParams->find("rope_theta");
    if (t != ropeParams->end()) {
      if (!t->is_number())
        return f.error("rope_parameters", "'rope_theta' is not a number");
      theta = t->get<double>();
    }
  }
  if (!(theta > 0) || !std::isfinite(theta))
    return f.error("rope_theta", "must be a positive number");
  const Json *scaling = f.get("rope_scaling");
  if (!scaling && ropeParams && ropeParams->is_object()) {
    auto t = ropeParams->find("rope_type");
    if (t != ropeParams->end() && t->is_string() &&
        t->get_ref<const std::string &>() != "default")
      scaling = ropeParams;
  }
  auto rs = parseRopeScaling(f, scaling);
  if (!rs)
    return rs.takeError();

  int64_t headDim;
  if (f.has("head_dim")) {
    LOOM_FMT_ASSIGN(hd, f.positive("head_dim", std::nullopt));
    headDim = hd;
  } else {
    if (hidden % heads != 0)
      return f.error("num_attention_heads",
                     "hidden_size " + std::to_string(hidden) +
                         " is not a multiple of num_attention_heads " +
                         std::to_string(heads) + " (and no head_dim is given)");
    headDim = hidden / heads;
  }
  if (heads % kvHeads != 0)
    return f.error("num_key_value_heads",
                   "num_attention_heads " + std::to_string(heads) +
                       " is not a multiple of num_key_value_heads " +
                       std::to_string(kvHeads));
  if (eps <= 0)
    return f.error("rms_norm_eps", "must be positive");

  c.hiddenSize = hidden;
  c.numLayers = layers;
  c.numHeads = heads;
  c.numKvHeads = kvHeads;
  c.headDim = headDim;
  c.intermediateSize = inter;
  c.vocabSize = vocab;
  c.maxPositionEmbeddings = positions;
  c.rmsNorm = true;
  c.normEps = eps;
  c.ropeTheta = theta;
  c.ropeScaling = *rs;
  c.tieWordEmbeddings = tie;
  c.activation = act;
  c.attentionBias = bias;

  // Sliding window: mistral uses it when set; qwen2 only with
  // use_sliding_window.
  LOOM_FMT_ASSIGN(useSliding,
                  f.boolean("use_sliding_window", modelType == "mistral"));
  if (useSliding && f.has("sliding_window")) {
    LOOM_FMT_ASSIGN(w, f.positive("sliding_window", std::nullopt));
    c.slidingWindow = w;
  }
  return c;
}

Result<HfConfig> loom::fmt::readHfConfig(const std::string &path) {
  std::string file = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    file = path + "/config.json";
  LOOM_FMT_ASSIGN(text, readTextFile(file));
  return parseHfConfig(text, file);
}
