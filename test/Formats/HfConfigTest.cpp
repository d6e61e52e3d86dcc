//===- HfConfigTest.cpp - config.json reader ------------------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The samples use the field names of the published configs
// (SmolLM2-135M-Instruct, Llama-3.1-8B, Mistral-7B-v0.1, Qwen2-0.5B, gpt2).
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/HfConfig.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace loom::fmt;
using namespace loom::fmt::test;

namespace {

const char *kSmolLM2 = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false,
  "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
  "hidden_size": 576, "initializer_range": 0.041,
  "intermediate_size": 1536, "max_position_embeddings": 8192,
  "model_type": "llama", "num_attention_heads": 9, "num_hidden_layers": 30,
  "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": null, "rope_theta": 100000, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 49152})";

const char *kLlama31 = R"({
  "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
  "intermediate_size": 14336, "max_position_embeddings": 131072,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
    "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "vocab_size": 128256})";

const char *kMistral = R"({
  "architectures": ["MistralForCausalLM"], "hidden_act": "silu",
  "hidden_size": 4096, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mistral",
  "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
  "sliding_window": 4096, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "vocab_size": 32000})";

const char *kQwen2 = R"({
  "architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu",
  "hidden_size": 896, "intermediate_size": 4864,
  "max_position_embeddings": 131072, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 131072, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "use_sliding_window": false,
  "vocab_size": 151936})";

const char *kGpt2 = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1,
  "eos_token_id": 50256, "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024,
  "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
  "vocab_size": 50257})";

bool contains(const std::string &s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

std::string errorOf(std::string_view text) {
  auto r = parseHfConfig(text, "config.json");
  return r ? std::string("<no error>") : r.error().message;
}

TEST(HfConfig, SmolLM2) {
  auto c = parseHfConfig(kSmolLM2, "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->modelType, "llama");
  EXPECT_EQ(c->architecture, "LlamaForCausalLM");
  EXPECT_EQ(c->hiddenSize, 576);
  EXPECT_EQ(c->numLayers, 30);
  EXPECT_EQ(c->numHeads, 9);
  EXPECT_EQ(c->numKvHeads, 3);
  EXPECT_EQ(c->headDim, 64);
  EXPECT_EQ(c->intermediateSize, 1536);
  EXPECT_EQ(c->vocabSize, 49152);
  EXPECT_EQ(c->maxPositionEmbeddings, 8192);
  EXPECT_TRUE(c->rmsNorm);
  EXPECT_DOUBLE_EQ(c->normEps, 1e-5);
  EXPECT_DOUBLE_EQ(c->ropeTheta, 100000.0);
  EXPECT_FALSE(c->ropeScaling);
  EXPECT_TRUE(c->tieWordEmbeddings);
  EXPECT_EQ(c->activation, "silu");
  EXPECT_EQ(c->torchDtype, "bfloat16");
}

TEST(HfConfig, Llama31RopeScaling) {
  auto c = parseHfConfig(kLlama31, "config.json");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->ropeScaling);
  EXPECT_EQ(c->ropeScaling->type, "llama3");
  EXPECT_DOUBLE_EQ(c->ropeScaling->factor, 8.0);
  EXPECT_DOUBLE_EQ(*c->ropeScaling->highFreqFactor, 4.0);
  EXPECT_EQ(*c->ropeScaling->originalMaxPositionEmbeddings, 8192);
  EXPECT_EQ(c->headDim, 128);
  EXPECT_FALSE(c->tieWordEmbeddings);
  EXPECT_EQ(c->activation, "silu"); // defaulted
}

TEST(HfConfig, MistralQwen2Gpt2) {
  auto m = parseHfConfig(kMistral, "config.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->numKvHeads, 8);
  EXPECT_EQ(*m->slidingWindow, 4096);
  auto q = parseHfConfig(kQwen2, "config.json");
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->headDim, 64);
  EXPECT_FALSE(q->slidingWindow); // use_sliding_window is false
  EXPECT_TRUE(q->attentionBias);
  EXPECT_DOUBLE_EQ(q->normEps, 1e-6);
  auto g = parseHfConfig(kGpt2, "config.json");
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->hiddenSize, 768);
  EXPECT_EQ(g->numLayers, 12);
  EXPECT_EQ(g->numHeads, 12);
  EXPECT_EQ(g->numKvHeads, 12);
  EXPECT_EQ(g->headDim, 64);
  EXPECT_EQ(g->intermediateSize, 3072); // 4 * n_embd
  EXPECT_EQ(g->maxPositionEmbeddings, 1024);
  EXPECT_FALSE(g->rmsNorm);
  EXPECT_DOUBLE_EQ(g->normEps, 1e-5);
  EXPECT_EQ(g->ropeTheta, 0.0);
  EXPECT_TRUE(g->tieWordEmbeddings);
  EXPECT_EQ(g->activation, "gelu_new");
}

TEST(HfConfig, Defaults) {
  auto c = parseHfConfig(R"({"model_type":"llama","hidden_size":64,
      "num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,
      "vocab_size":100})",
                         "config.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->numKvHeads, 4);
  EXPECT_DOUBLE_EQ(c->ropeTheta, 10000.0);
  EXPECT_DOUBLE_EQ(c->normEps, 1e-6);
  EXPECT_EQ(c->maxPositionEmbeddings, 2048);
  EXPECT_FALSE(c->tieWordEmbeddings);
  // transformers v5 puts rope_theta under rope_parameters.
  auto v5 = parseHfConfig(R"({"model_type":"llama","hidden_size":64,
      "num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,
      "vocab_size":100,"rope_parameters":{"rope_theta":500000.0,
      "rope_type":"default"}})",
                          "config.json");
  ASSERT_TRUE(v5) << v5.error().message;
  EXPECT_DOUBLE_EQ(v5->ropeTheta, 500000.0);
  EXPECT_FALSE(v5->ropeScaling);
}

TEST(HfConfig, Errors) {
  std::string e = errorOf(R"({"model_type":"t5","d_model":512})");
  EXPECT_TRUE(contains(e, "config.json: key 'model_type' at byte 1: model "
                          "type 't5' is not supported"))
      << e;
  EXPECT_TRUE(contains(errorOf(R"({"hidden_size":1})"),
                       "required key 'model_type' is missing"));
  EXPECT_TRUE(contains(errorOf(R"({"model_type":"llama"})"),
                       "required key 'hidden_size' is missing"));
  EXPECT_TRUE(contains(errorOf(R"({"model_type":"gpt2","n_embd":768})"),
                       "required key 'n_layer' is missing"));
  std::string base = R"("model_type":"llama","num_hidden_layers":2,
      "num_attention_heads":4,"intermediate_size":128,"vocab_size":100)";
  e = errorOf("{" + base + R"(,"hidden_size":"64"})");
  EXPECT_TRUE(contains(e, "key 'hidden_size' at byte"));
  EXPECT_TRUE(contains(e, "expected a positive integer, got a string")) << e;
  EXPECT_TRUE(contains(errorOf("{" + base + R"(,"hidden_size":-64})"),
                       "that is negative"));
  EXPECT_TRUE(contains(errorOf("{" + base + R"(,"hidden_size":64.5})"),
                       "got a floating-point number"));
  EXPECT_TRUE(contains(errorOf("{" + base + R"(,"hidden_size":0})"), "got 0"));
  EXPECT_TRUE(
      contains(errorOf("{" + base + R"(,"hidden_size":66})"),
               "num_attention_heads = 4: must "
               "divide hidden_size = 66 (or the file must give head_dim)"));
  EXPECT_TRUE(contains(
      errorOf("{" + base + R"(,"hidden_size":64,"num_key_value_heads":3})"),
      "num_key_value_heads = 3: must divide num_attention_heads = 4"));
  // The rules the GGUF importer applies too (LlmHyperParams.h).
  EXPECT_TRUE(
      contains(errorOf("{" + base + R"(,"hidden_size":64,"rope_theta":0})"),
               "key 'rope_theta' at byte"));
  EXPECT_TRUE(
      contains(errorOf("{" + base + R"(,"hidden_size":64,"rope_theta":-5})"),
               "rope_theta = -5: must be a finite number > 0 and <= 1e+12"));
  EXPECT_TRUE(
      contains(errorOf("{" + base + R"(,"hidden_size":64,"rms_norm_eps":0})"),
               "rms_norm_eps = 0: must be a finite number > 0 and <= 1"));
  EXPECT_TRUE(contains(
      errorOf("{" + base + R"(,"hidden_size":64,"head_dim":16,)" +
              R"("max_position_embeddings":2000000000})"),
      "max_position_embeddings = 2000000000: must be an integer >= 1 and "
      "<= 1073741824"));
  EXPECT_TRUE(
      contains(errorOf("{" + base + R"(,"hidden_size":64,"rope_theta":"big"})"),
               "key 'rope_theta'"));
  EXPECT_TRUE(contains(
      errorOf("{" + base + R"(,"hidden_size":64,"tie_word_embeddings":1})"),
      "expected true or false"));
  EXPECT_TRUE(
      contains(errorOf("{" + base +
                       R"(,"hidden_size":64,"rope_scaling":{"factor":"x"}})"),
               "key 'rope_scaling'"));
  EXPECT_TRUE(
      contains(errorOf("{" + base + R"(,"hidden_size":64,"rope_scaling":[1]})"),
               "expected an object or null"));
  EXPECT_TRUE(contains(
      errorOf(
          "{" + base +
          R"(,"hidden_size":64,"num_attention_heads":99999999999999999999})"),
      "key 'num_attention_heads'"));
  EXPECT_TRUE(contains(errorOf(R"({"model_type": )"),
                       "config.json: byte 15: invalid JSON"));
  EXPECT_TRUE(contains(errorOf("[1,2]"), "config is an array"));
  EXPECT_TRUE(contains(errorOf(""), "invalid JSON"));
}

TEST(HfConfig, ReadsFolder) {
  TempDir dir;
  dir.write("config.json", std::string_view(kSmolLM2));
  auto c = readHfConfig(dir.path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->numLayers, 30);
  EXPECT_FALSE(readHfConfig(dir.path + "/missing.json"));
}

} // namespace
