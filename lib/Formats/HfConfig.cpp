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
#include "loom/Formats/LlmHyperParams.h"
#include "loom/Formats/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <iterator>
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
      return makeError(file, ": byte 0: required key '", key, "' is missing");
    }
    auto i = asNonNegativeInt(*v);
    if (!i)
      return error(
          key, "expected a positive integer, got " + std::string(jsonKind(*v)) +
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
      return error(key,
                   "expected true or false, got " + std::string(jsonKind(*v)));
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

//===----------------------------------------------------------------------===//
// Every key of config.json is accounted for
//===----------------------------------------------------------------------===//
//
// A key is consumed by the parser below, on a list of keys that do not change
// the logits (bookkeeping, generation settings, dropout, which is off in
// inference), or refused by name when its value differs from transformers'
// default. A key on none of the lists is refused too: Loom cannot tell
// whether it changes the math (docs/IMPORT-LLAMA.md, "config.json keys").

/// Keys of PretrainedConfig and of the families that never change the
/// logits of a forward pass.
constexpr const char *kNoMathKeys[] = {
    // Bookkeeping.
    "architectures",
    "model_type",
    "torch_dtype",
    "dtype",
    "transformers_version",
    "_name_or_path",
    "use_cache",
    "return_dict",
    "output_hidden_states",
    "output_attentions",
    "torchscript",
    "use_bfloat16",
    "tf_legacy_loss",
    "_attn_implementation",
    "attn_implementation",
    "_commit_hash",
    "initializer_range",
    "use_return_dict",
    "output_router_logits",
    // Special token ids (the tokenizer's business).
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "sep_token_id",
    "decoder_start_token_id",
    "forced_bos_token_id",
    "forced_eos_token_id",
    // Generation settings (sampling happens after the logits).
    "max_length",
    "min_length",
    "do_sample",
    "early_stopping",
    "num_beams",
    "num_beam_groups",
    "diversity_penalty",
    "temperature",
    "top_k",
    "top_p",
    "typical_p",
    "repetition_penalty",
    "length_penalty",
    "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size",
    "bad_words_ids",
    "num_return_sequences",
    "output_scores",
    "return_dict_in_generate",
    "remove_invalid_values",
    "exponential_decay_length_penalty",
    "suppress_tokens",
    "begin_suppress_tokens",
    "chunk_size_feed_forward",
    // Task heads and labels (Loom builds the causal LM head).
    "finetuning_task",
    "id2label",
    "label2id",
    "num_labels",
    "tokenizer_class",
    "prefix",
    "task_specific_params",
    "problem_type",
    // Encoder-decoder plumbing a decoder-only causal LM does not use.
    "is_decoder",
    "is_encoder_decoder",
    "tie_encoder_decoder",
    "cross_attention_hidden_size",
    // Dropout: off in inference.
    "attention_dropout",
};

/// Per model_type: the consumed keys, the keys without effect on the math,
/// and the keys refused when they differ from the default (as JSON text).
struct FamilyKeys {
  const char *modelType;
  std::vector<const char *> consumed;
  std::vector<const char *> noMath;
  std::vector<std::pair<const char *, const char *>> refusedUnlessDefault;
};

const std::vector<FamilyKeys> &familyKeys() {
  static const std::vector<const char *> llamaConsumed = {
      "hidden_size",
      "num_hidden_layers",
      "num_attention_heads",
      "num_key_value_heads",
      "intermediate_size",
      "vocab_size",
      "max_position_embeddings",
      "rms_norm_eps",
      "hidden_act",
      "tie_word_embeddings",
      "attention_bias",
      "rope_theta",
      "rope_parameters",
      "rope_scaling",
      "head_dim",
      "use_sliding_window",
      "sliding_window"};
  // pretraining_tp > 1 splits the projections into slices whose partial
  // products are summed: the same math (up to summation order).
  // is_llama_config / rope_interleaved: written by nanotron, not read by
  // transformers (which is the reference).
  static const std::vector<const char *> llamaNoMath = {
      "pretraining_tp", "is_llama_config", "rope_interleaved",
      // qwen2: which layers use the window; the window itself is checked.
      "max_window_layers"};
  static const std::vector<std::pair<const char *, const char *>> llamaRefused =
      {{"mlp_bias", "false"},
       {"pruned_heads", "{}"},
       {"quantization_config", "null"},
       {"add_cross_attention", "false"}};
  static const std::vector<FamilyKeys> table = {
      {"llama", llamaConsumed, llamaNoMath, llamaRefused},
      {"mistral", llamaConsumed, llamaNoMath, llamaRefused},
      {"qwen2", llamaConsumed, llamaNoMath, llamaRefused},
      {"gpt2",
       {"n_embd", "n_layer", "n_head", "vocab_size", "n_positions", "n_inner",
        "layer_norm_epsilon", "activation_function", "tie_word_embeddings",
        "scale_attn_weights", "scale_attn_by_inverse_layer_idx"},
       // n_ctx: the old name of n_positions, not read by GPT2Model.
       // reorder_and_upcast_attn: computes q k^T in f32, as Loom does.
       // summary_*: GPT2DoubleHeadsModel's classifier head.
       {"n_ctx", "reorder_and_upcast_attn", "embd_pdrop", "attn_pdrop",
        "resid_pdrop", "summary_type", "summary_use_proj", "summary_activation",
        "summary_proj_to_labels", "summary_first_dropout"},
       {{"add_cross_attention", "false"},
        {"pruned_heads", "{}"},
        {"quantization_config", "null"}}},
  };
  return table;
}

/// Refuses a key that is neither consumed, nor without effect on the math,
/// nor at its default.
std::optional<Error> checkKeys(const Json &root, const std::string &modelType,
                               std::string_view text, std::string_view file) {
  const FamilyKeys *fam = nullptr;
  for (const FamilyKeys &f : familyKeys())
    if (modelType == f.modelType)
      fam = &f;
  if (!fam)
    return std::nullopt;
  auto in = [](const auto &list, std::string_view k) {
    for (const char *x : list)
      if (k == x)
        return true;
    return false;
  };
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string &k = it.key();
    if (in(fam->consumed, k) || in(fam->noMath, k) || in(kNoMathKeys, k))
      continue;
    std::string value = it->dump();
    if (value.size() > 80)
      value = value.substr(0, 77) + "...";
    bool known = false;
    for (const auto &[key, dflt] : fam->refusedUnlessDefault) {
      if (k != key)
        continue;
      known = true;
      Json d = Json::parse(dflt, nullptr, false);
      // null stands for the default as well ("quantization_config": null).
      if (*it == d || it->is_null() ||
          (it->is_object() && it->empty() && d.is_object()))
        break;
      return makeError(file, ": key '", k, "' at byte ", keyOffset(text, k, 0),
                       ": ", k, " = ", value, " is not supported for ",
                       modelType, " (Loom imports only ", k, " = ", dflt,
                       "); the model would compute something else");
    }
    if (known)
      continue;
    return makeError(
        file, ": key '", k, "' at byte ", keyOffset(text, k, 0), ": ", k, " = ",
        value, " is not a ", modelType,
        " config key Loom knows, so it cannot tell whether it changes the "
        "model's math; remove it if it does not (docs/IMPORT-LLAMA.md)");
  }
  return std::nullopt;
}

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
  // Every key is one read below (rope_theta: transformers v5's
  // rope_parameters hold it too), or refused by name: Loom cannot tell
  // what another one does to the frequencies.
  static const char *const kRopeKeys[] = {
      "rope_type",        "type",
      "factor",           "low_freq_factor",
      "high_freq_factor", "original_max_position_embeddings",
      "rope_theta"};
  for (auto it = v->begin(); it != v->end(); ++it)
    if (std::find(std::begin(kRopeKeys), std::end(kRopeKeys), it.key()) ==
        std::end(kRopeKeys))
      return f.error("rope_scaling",
                     "key '" + it.key() +
                         "' is not one Loom reads (rope_type, factor, "
                         "low_freq_factor, high_freq_factor, "
                         "original_max_position_embeddings), so it cannot "
                         "tell how it changes the rotary frequencies");
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
    LOOM_FMT_ASSIGN(scaleWeights, f.boolean("scale_attn_weights", true));
    LOOM_FMT_ASSIGN(byLayer,
                    f.boolean("scale_attn_by_inverse_layer_idx", false));
    LlmHyperParams hp;
    hp.hidden = {"n_embd", hidden};
    hp.layers = {"n_layer", layers};
    hp.heads = {"n_head", heads};
    hp.ffn = {f.has("n_inner") ? "n_inner" : "", inner};
    hp.vocab = {"vocab_size", vocab};
    hp.context = {"n_positions", positions};
    hp.normEps = {"layer_norm_epsilon", eps};
    if (auto v = checkLlmHyperParams(hp))
      return f.error(v->key, v->message);
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
    c.scaleAttnWeights = scaleWeights;
    c.scaleAttnByInverseLayerIdx = byLayer;
    if (auto e = checkKeys(root, modelType, text, file))
      return std::move(*e);
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

  // The same rules as the GGUF importer's (LlmHyperParams.h).
  LlmHyperParams hp;
  hp.hidden = {"hidden_size", hidden};
  hp.layers = {"num_hidden_layers", layers};
  hp.heads = {"num_attention_heads", heads};
  hp.kvHeads = {"num_key_value_heads", kvHeads};
  hp.ffn = {"intermediate_size", inter};
  hp.vocab = {"vocab_size", vocab};
  hp.context = {"max_position_embeddings", positions};
  hp.headDimName = "head_dim";
  if (f.has("head_dim")) {
    LOOM_FMT_ASSIGN(hd, f.positive("head_dim", std::nullopt));
    hp.headDim = {"head_dim", hd};
  }
  hp.normEps = {"rms_norm_eps", eps};
  hp.ropeTheta = {"rope_theta", theta};
  if (auto v = checkLlmHyperParams(hp))
    return f.error(v->key, v->message);
  int64_t headDim = hp.headDim.key.empty() ? hidden / heads : hp.headDim.value;

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
  // Absent means transformers' default window (4096 in MistralConfig and
  // Qwen2Config); null means none.
  if (useSliding) {
    if (root.find("sliding_window") == root.end()) {
      c.slidingWindow = 4096;
    } else if (f.has("sliding_window")) {
      LOOM_FMT_ASSIGN(w, f.positive("sliding_window", std::nullopt));
      c.slidingWindow = w;
    }
  }
  if (auto e = checkKeys(root, modelType, text, file))
    return std::move(*e);
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
