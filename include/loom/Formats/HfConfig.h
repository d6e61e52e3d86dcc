//===- HfConfig.h - Hugging Face config.json reader -------------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Reads the `config.json` of a Hugging Face transformers checkpoint into one
// struct for the model families Loom imports: llama, mistral, qwen2 (the
// field names of LlamaConfig) and gpt2 (n_embd, n_layer, n_head, n_positions,
// layer_norm_epsilon). Fields that transformers defaults are defaulted the
// same way; the fields that size the model are required.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FORMATS_HFCONFIG_H
#define LOOM_FORMATS_HFCONFIG_H

#include "loom/Formats/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loom::fmt {

/// "rope_scaling" (llama3, linear, dynamic, yarn, ...).
struct RopeScaling {
  /// "rope_type" (or the older "type").
  std::string type;
  double factor = 1.0;
  std::optional<double> lowFreqFactor;
  std::optional<double> highFreqFactor;
  std::optional<int64_t> originalMaxPositionEmbeddings;
};

struct HfConfig {
  /// "llama", "mistral", "qwen2" or "gpt2".
  std::string modelType;
  /// The first entry of "architectures" (e.g. "LlamaForCausalLM"), or "".
  std::string architecture;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  int64_t intermediateSize = 0;
  int64_t vocabSize = 0;
  int64_t maxPositionEmbeddings = 0;
  /// RMSNorm (llama family) or LayerNorm (gpt2).
  bool rmsNorm = true;
  double normEps = 0;
  /// 0 for models without rotary embeddings (gpt2).
  double ropeTheta = 0;
  std::optional<RopeScaling> ropeScaling;
  bool tieWordEmbeddings = false;
  /// "silu", "gelu_new", ...
  std::string activation;
  /// "torch_dtype" / "dtype", if given ("bfloat16").
  std::string torchDtype;
  /// "sliding_window" where it applies (mistral; qwen2 with
  /// use_sliding_window); the importer refuses it when it can bind.
  std::optional<int64_t> slidingWindow;
  bool attentionBias = false;
  /// gpt2: scale q k^T by 1/sqrt(head_dim) ("scale_attn_weights") and
  /// further by 1/(layer + 1) ("scale_attn_by_inverse_layer_idx").
  bool scaleAttnWeights = true;
  bool scaleAttnByInverseLayerIdx = false;
};

/// Parses config.json text; `fileName` is used in messages.
Result<HfConfig> parseHfConfig(std::string_view text,
                               std::string_view fileName);
/// Reads and parses a config.json file (or a folder that holds one).
Result<HfConfig> readHfConfig(const std::string &path);

} // namespace loom::fmt

#endif // LOOM_FORMATS_HFCONFIG_H
