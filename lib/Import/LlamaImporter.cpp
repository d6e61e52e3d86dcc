//===- LlamaImporter.cpp - GGUF and Hugging Face models to loom -----------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// GGUF v3 (llama, mistral, qwen2) and Hugging Face config.json + safetensors
// (llama, mistral, qwen2, gpt2) -> `@forward` (prefill) and `@decode` (KV
// cache) (see LlamaGraph.h). The weights stay in the files: every loom.weight
// names its file and the absolute byte offset of its data.
// docs/IMPORT-LLAMA.md.
//
// Rotary convention: llama.cpp's converter permutes the rows of Q and K of
// llama-architecture models so that its "normal" rope rotates adjacent pairs
// (2i, 2i+1); those GGUF files therefore get style = interleaved. qwen2 GGUF
// files are not permuted (llama.cpp uses its NEOX rope, the two halves), so
// they get style = half, as do all Hugging Face checkpoints.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/Import.h"
#include "lib/Import/LlamaGraph.h"

#include "loom/Formats/Gguf.h"
#include "loom/Formats/HfConfig.h"
#include "loom/Formats/LlmHyperParams.h"
#include "loom/Formats/Safetensors.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdio>
#include <set>

using namespace mlir;
using namespace loom::fmt;

namespace loom {
namespace {

std::string absolutePath(llvm::StringRef path) {
  llvm::SmallString<256> p(path);
  llvm::sys::fs::make_absolute(p);
  llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
  return p.str().str();
}

//===----------------------------------------------------------------------===//
// GGUF
//===----------------------------------------------------------------------===//

struct GgufArch {
  const char *name;
  RotaryStyle style;
  bool qkvBias;
};

// The architectures of the llama block layout that Loom imports, with
// llama.cpp's rope type for each (LLAMA_ROPE_TYPE_NORM = adjacent pairs on
// permuted Q/K rows; NEOX = halves, rows as in the HF checkpoint).
constexpr GgufArch kGgufArchs[] = {
    {"llama", RotaryStyle::interleaved, false},
    {"mistral", RotaryStyle::interleaved, false},
    {"qwen2", RotaryStyle::half, true},
};

std::string ggufName(llama::Role role, int64_t l) {
  using llama::Role;
  std::string blk = "blk." + std::to_string(l) + ".";
  switch (role) {
  case Role::TokenEmbedding:
    return "token_embd.weight";
  case Role::AttnNorm:
    return blk + "attn_norm.weight";
  case Role::Query:
    return blk + "attn_q.weight";
  case Role::Key:
    return blk + "attn_k.weight";
  case Role::Value:
    return blk + "attn_v.weight";
  case Role::QueryBias:
    return blk + "attn_q.bias";
  case Role::KeyBias:
    return blk + "attn_k.bias";
  case Role::ValueBias:
    return blk + "attn_v.bias";
  case Role::Output:
    return blk + "attn_output.weight";
  case Role::FfnNorm:
    return blk + "ffn_norm.weight";
  case Role::Gate:
    return blk + "ffn_gate.weight";
  case Role::Up:
    return blk + "ffn_up.weight";
  case Role::Down:
    return blk + "ffn_down.weight";
  case Role::FinalNorm:
    return "output_norm.weight";
  case Role::LmHead:
    return "output.weight";
  case Role::RopeFreqs:
    return "rope_freqs.weight";
  default:
    return "<no GGUF tensor>";
  }
}

const char *valueTypeName(GgufValueType t) {
  return ggufValueTypeName(t).data();
}

/// The tokenizer metadata as a dictionary: scalars by value, arrays and long
/// strings as {count, offset} into the file (never copied).
DictionaryAttr tokenizerAttr(Builder &b, const GgufFile &file,
                             const std::string &path) {
  SmallVector<NamedAttribute> entries;
  entries.emplace_back(b.getStringAttr("file"), b.getStringAttr(path));
  entries.emplace_back(b.getStringAttr("format"), b.getStringAttr("gguf"));
  for (const GgufKeyValue &kv : file.metadata()) {
    llvm::StringRef key(kv.key.data(), kv.key.size());
    llvm::StringRef name;
    if (key.starts_with("tokenizer.ggml."))
      name = key.drop_front(strlen("tokenizer.ggml."));
    else if (key.starts_with("tokenizer."))
      name = key.drop_front(strlen("tokenizer."));
    else
      continue;
    const GgufValue &v = kv.value;
    Attribute a;
    if (v.isArray()) {
      // Offset of the array header: u32 element type, u64 count, elements.
      a = b.getDictionaryAttr(
          {b.getNamedAttr("count", b.getI64IntegerAttr(v.size())),
           b.getNamedAttr("element_type",
                          b.getStringAttr(valueTypeName(v.elementType()))),
           b.getNamedAttr("offset", b.getI64IntegerAttr(v.offset()))});
    } else if (auto s = v.asString()) {
      if (s->size() <= 256) {
        a = b.getStringAttr(llvm::StringRef(s->data(), s->size()));
      } else {
        // Offset of the string: u64 length, then the bytes.
        a = b.getDictionaryAttr(
            {b.getNamedAttr("length", b.getI64IntegerAttr(s->size())),
             b.getNamedAttr("offset", b.getI64IntegerAttr(v.offset()))});
      }
    } else if (auto bv = v.asBool()) {
      a = b.getBoolAttr(*bv);
    } else if (auto i = v.asInt()) {
      a = b.getI64IntegerAttr(*i);
    } else if (auto f = v.asFloat()) {
      a = b.getF64FloatAttr(*f);
    }
    if (a)
      entries.emplace_back(b.getStringAttr(name), a);
  }
  return b.getDictionaryAttr(entries);
}

/// `contextLength`: what the compiled model serves (d.contextLength, or
/// loomc --context-limit).
DictionaryAttr modelAttr(Builder &b, const llama::ModelDesc &d,
                         int64_t contextLength) {
  SmallVector<NamedAttribute> e;
  auto i = [&](const char *k, int64_t v) {
    e.push_back(b.getNamedAttr(k, b.getI64IntegerAttr(v)));
  };
  e.push_back(b.getNamedAttr("architecture", b.getStringAttr(d.architecture)));
  e.push_back(b.getNamedAttr("source", b.getStringAttr(d.source)));
  i("hidden_size", d.hiddenSize);
  i("num_layers", d.numLayers);
  i("num_heads", d.numHeads);
  i("num_kv_heads", d.numKvHeads);
  i("head_dim", d.headDim);
  i("intermediate_size", d.ffnSize);
  i("vocab_size", d.vocabSize);
  i("context_length", contextLength);
  e.push_back(b.getNamedAttr("norm_eps", b.getF64FloatAttr(d.normEps)));
  if (d.ropeDim) {
    e.push_back(b.getNamedAttr("rope_theta", b.getF64FloatAttr(d.ropeTheta)));
    i("rope_dim", d.ropeDim);
    e.push_back(b.getNamedAttr(
        "rope_style", b.getStringAttr(stringifyRotaryStyle(d.ropeStyle))));
    // The frequencies are then not rope_theta's (the graph holds them).
    if (!d.ropeInvFreq.empty() || d.ropeFreqFactors)
      e.push_back(b.getNamedAttr("rope_scaling", b.getStringAttr("llama3")));
  }
  e.push_back(
      b.getNamedAttr("tied_embeddings", b.getBoolAttr(d.tiedEmbeddings)));
  return b.getDictionaryAttr(e);
}

} // namespace

/// The context the compiled model serves: --context-limit when given (at
/// most the model's own), else the model's. A sliding attention window
/// shorter than that would change the attention after `window` tokens,
/// which Loom's attention does not do: refused by name.
std::optional<int64_t>
servedContext(const llama::ModelDesc &d, std::optional<int64_t> window,
              const std::string &windowKey, const std::string &contextKey,
              const LlmImportOptions &options, std::string &error) {
  int64_t served = d.contextLength;
  if (options.contextLimit > 0) {
    if (d.contextLength > 0 && options.contextLimit > d.contextLength) {
      error = d.file + ": --context-limit " +
              std::to_string(options.contextLimit) +
              " is longer than the "
              "model's " +
              contextKey + " " + std::to_string(d.contextLength) +
              "; pass --context-limit N with N <= " +
              std::to_string(d.contextLength);
      return std::nullopt;
    }
    served = options.contextLimit;
  }
  if (window && (served <= 0 || *window < served)) {
    std::string ctx = served > 0 ? std::to_string(served) : "unbounded";
    error = d.file + ": " + windowKey + " " + std::to_string(*window) +
            " < context length " + ctx +
            " is not supported: the attention would differ after " +
            std::to_string(*window) +
            " tokens; pass --context-limit N with "
            "N <= " +
            std::to_string(*window) +
            " to compile a model exact up to N tokens";
    return std::nullopt;
  }
  return served;
}

OwningOpRef<ModuleOp> importGguf(MLIRContext *context, llvm::StringRef path,
                                 std::string &error,
                                 const LlmImportOptions &options) {
  std::string file = absolutePath(path);
  // The header is read whole; the tensor data may be absent when the
  // compile reads no weight bytes (--emit=plan plans from the header).
  auto opened = openGguf(file, /*dataOptional=*/true);
  if (!opened) {
    error = "GGUF import: " + opened.error().message;
    return nullptr;
  }
  const GgufFile &g = *opened;
  if (!g.missingData().empty() && !options.weightsOptional) {
    // "GGUF import: file: tensor '...' at byte N: ...": the place stays
    // the tensor whose data is missing.
    error = "GGUF import: " + g.missingData() +
            "; the weights are not all there: --emit=plan plans from the "
            "GGUF header alone";
    return nullptr;
  }
  auto fail = [&](const std::string &msg) -> OwningOpRef<ModuleOp> {
    error = file + ": " + msg;
    return nullptr;
  };

  const GgufValue *archV = g.find("general.architecture");
  if (!archV || !archV->asString())
    return fail("no 'general.architecture' string in the metadata; is this "
                "a model GGUF?");
  std::string arch(*archV->asString());
  const GgufArch *known = nullptr;
  for (const GgufArch &a : kGgufArchs)
    if (arch == a.name)
      known = &a;
  if (!known)
    return fail("architecture '" + arch +
                "' is not supported by the GGUF importer (supported: llama, "
                "mistral, qwen2)");

  auto key = [&](const char *k) { return arch + "." + k; };
  auto getUInt = [&](const char *k, int64_t &out, bool required,
                     int64_t dflt) -> bool {
    const GgufValue *v = g.find(key(k));
    if (!v) {
      if (required) {
        error = file + ": metadata key '" + key(k) + "' is missing";
        return false;
      }
      out = dflt;
      return true;
    }
    auto u = v->asUInt();
    if (!u || *u > (uint64_t(1) << 40)) {
      error = file + ": metadata key '" + key(k) + "' must be a " +
              "non-negative integer (it is a " + valueTypeName(v->type()) +
              (v->isArray() ? "; per-layer values are not supported" : "") +
              ")";
      return false;
    }
    out = static_cast<int64_t>(*u);
    return true;
  };
  auto getFloat = [&](const char *k, double &out, double dflt) -> bool {
    const GgufValue *v = g.find(key(k));
    if (!v) {
      out = dflt;
      return true;
    }
    auto f = v->asFloat();
    if (!f) {
      error = file + ": metadata key '" + key(k) + "' must be a float";
      return false;
    }
    out = *f;
    return true;
  };
  llama::ModelDesc d;
  d.family = llama::Family::Llama;
  d.architecture = arch;
  d.source = "gguf";
  d.file = file;
  d.ropeStyle = known->style;
  d.qkvBias = known->qkvBias;
  d.weightStorage = g.missingData().empty();
  if (!getUInt("embedding_length", d.hiddenSize, true, 0) ||
      !getUInt("block_count", d.numLayers, true, 0) ||
      !getUInt("attention.head_count", d.numHeads, true, 0) ||
      !getUInt("feed_forward_length", d.ffnSize, true, 0) ||
      !getUInt("attention.head_count_kv", d.numKvHeads, false, d.numHeads) ||
      !getUInt("context_length", d.contextLength, false, 0) ||
      !getFloat("attention.layer_norm_rms_epsilon", d.normEps, 1e-5) ||
      !getFloat("rope.freq_base", d.ropeTheta, 10000.0))
    return nullptr;
  int64_t valueLength = 0;
  if (!getUInt("attention.key_length", d.headDim, false, 0) ||
      !getUInt("attention.value_length", valueLength, false, 0) ||
      !getUInt("rope.dimension_count", d.ropeDim, false, 0))
    return nullptr;
  // Every numeric hyper-parameter by the rules the Hugging Face reader
  // applies too (LlmHyperParams.h); a key the file does not give is not
  // checked (its default is).
  auto given = [&](const char *k) {
    return g.find(key(k)) ? key(k) : std::string();
  };
  LlmHyperParams hp;
  hp.hidden = {key("embedding_length"), d.hiddenSize};
  hp.layers = {key("block_count"), d.numLayers};
  hp.heads = {key("attention.head_count"), d.numHeads};
  hp.kvHeads = {given("attention.head_count_kv"), d.numKvHeads};
  hp.ffn = {key("feed_forward_length"), d.ffnSize};
  hp.context = {given("context_length"), d.contextLength};
  hp.headDim = {given("attention.key_length"), d.headDim};
  hp.headDimName = key("attention.key_length");
  hp.ropeDim = {given("rope.dimension_count"), d.ropeDim};
  hp.normEps = {key("attention.layer_norm_rms_epsilon"), d.normEps};
  hp.ropeTheta = {key("rope.freq_base"), d.ropeTheta};
  if (auto v = checkLlmHyperParams(hp))
    return fail("metadata key '" + v->key + "': " + v->message);
  if (hp.headDim.key.empty())
    d.headDim = d.hiddenSize / d.numHeads;
  if (hp.ropeDim.key.empty())
    d.ropeDim = d.headDim;
  if (g.find(key("attention.value_length")) && valueLength != d.headDim)
    return fail("metadata key '" + key("attention.value_length") +
                "': " + key("attention.value_length") + " = " +
                std::to_string(valueLength) + ": must equal the key length " +
                std::to_string(d.headDim) +
                " (Loom imports only equal "
                "key and value head dimensions)");
  if (const GgufValue *s = g.find(key("rope.scaling.type"))) {
    auto st = s->asString();
    if (!st || (*st != "none" && !st->empty()))
      return fail("rope scaling '" +
                  std::string(st ? *st : std::string_view("?")) +
                  "' is not supported (loom.rotary_table has plain "
                  "frequencies)");
  }
  // llama.cpp's form of Llama 3.1's rope scaling: factors that divide the
  // inverse frequencies (convert_hf_to_gguf.py computes them from
  // rope_scaling "llama3").
  d.ropeFreqFactors = g.findTensor("rope_freqs.weight") != nullptr;

  // Every tensor by name; the shape of the embedding gives the vocabulary.
  std::map<std::string, TensorRef, std::less<>> weights;
  for (const TensorRef &t : g.tensors()) {
    TensorRef r = t;
    r.file = file;
    weights.emplace(r.name, std::move(r));
  }
  auto embd = weights.find("token_embd.weight");
  if (embd == weights.end())
    return fail("missing tensor 'token_embd.weight' (the token embedding)");
  if (embd->second.shape.size() != 2)
    return fail("tensor 'token_embd.weight' must be 2-D");
  d.vocabSize = embd->second.shape[0];
  if (!getUInt("vocab_size", d.vocabSize, false, d.vocabSize))
    return nullptr;
  LlmHyperParams vocab;
  vocab.vocab = {g.find(key("vocab_size")) ? key("vocab_size")
                                           : "tensor 'token_embd.weight' rows",
                 d.vocabSize};
  if (auto v = checkLlmHyperParams(vocab))
    return fail((g.find(key("vocab_size")) ? "metadata key '" + v->key + "': "
                                           : std::string()) +
                v->message);
  d.tiedEmbeddings = !weights.count("output.weight");

  // Unused tensors in a layer-shaped name we do not know are refused by
  // name, so that a variant with extra weights never imports silently wrong.
  for (const auto &[name, ref] : weights) {
    llvm::StringRef n(name);
    if (!n.starts_with("blk."))
      continue;
    llvm::StringRef rest = n.drop_front(4).split('.').second;
    static const char *const kKnown[] = {
        "attn_norm.weight", "attn_q.weight",      "attn_k.weight",
        "attn_v.weight",    "attn_q.bias",        "attn_k.bias",
        "attn_v.bias",      "attn_output.weight", "ffn_norm.weight",
        "ffn_gate.weight",  "ffn_up.weight",      "ffn_down.weight"};
    if (!llvm::is_contained(kKnown, rest))
      return fail("tensor '" + name + "' is not part of the " + arch +
                  " layer layout Loom imports (attn_norm, attn_q/k/v "
                  "(+bias), attn_output, ffn_norm, ffn_gate/up/down)");
  }

  // Every metadata key of the architecture is consumed, harmless, or
  // refused by name; general.* keys must be descriptive ones.
  std::optional<int64_t> window;
  for (const GgufKeyValue &kv : g.metadata()) {
    llvm::StringRef k(kv.key.data(), kv.key.size());
    if (k.starts_with("general.")) {
      static const char *const kGeneral[] = {
          "general.architecture",
          "general.type",
          "general.name",
          "general.basename",
          "general.finetune",
          "general.size_label",
          "general.version",
          "general.description",
          "general.author",
          "general.organization",
          "general.url",
          "general.doi",
          "general.uuid",
          "general.repo_url",
          "general.source.url",
          "general.source.doi",
          "general.source.uuid",
          "general.source.repo_url",
          "general.source.huggingface.repository",
          "general.license",
          "general.license.name",
          "general.license.link",
          "general.tags",
          "general.languages",
          "general.datasets",
          "general.file_type",
          "general.quantization_version",
          "general.quantized_by",
          "general.alignment",
          "general.base_model.count",
          "general.dataset.count"};
      if (llvm::is_contained(kGeneral, k) ||
          k.starts_with("general.base_model.") ||
          k.starts_with("general.dataset."))
        continue;
      return fail("metadata key '" + k.str() +
                  "' is not a descriptive "
                  "general.* key Loom knows; it cannot tell whether it "
                  "changes the model (docs/IMPORT-LLAMA.md)");
    }
    if (!k.starts_with(arch + "."))
      continue; // tokenizer.*, quantize.*, split.*: not the model's math
    llvm::StringRef rest = k.drop_front(arch.size() + 1);
    static const char *const kConsumed[] = {
        "embedding_length", "block_count", "attention.head_count",
        "feed_forward_length", "attention.head_count_kv", "context_length",
        "attention.layer_norm_rms_epsilon", "rope.freq_base",
        "attention.key_length", "attention.value_length",
        "rope.dimension_count", "rope.scaling.type", "vocab_size",
        // Only meaningful with a rope scaling type, which is refused.
        "rope.scaling.factor", "rope.scaling.original_context_length",
        "rope.scaling.finetuned"};
    if (llvm::is_contained(kConsumed, rest))
      continue;
    if (rest == "expert_count" || rest == "expert_used_count") {
      auto u = kv.value.asUInt();
      if (u && *u == 0)
        continue;
      return fail("metadata key '" + k.str() +
                  "': mixture-of-experts models "
                  "are not supported");
    }
    if (rest == "attention.sliding_window") {
      auto u = kv.value.asUInt();
      if (!u || *u == 0 || *u > (uint64_t(1) << 40))
        return fail("metadata key '" + k.str() +
                    "' must be a positive "
                    "integer");
      window = int64_t(*u);
      continue;
    }
    return fail("metadata key '" + k.str() + "' is not a " + arch +
                " key Loom knows, so it cannot tell whether it changes the "
                "model's math; the file is refused (docs/IMPORT-LLAMA.md)");
  }
  std::optional<int64_t> served =
      servedContext(d, window, key("attention.sliding_window"),
                    key("context_length"), options, error);
  if (!served)
    return nullptr;

  Builder b(context);
  SmallVector<NamedAttribute> attrs;
  attrs.push_back(b.getNamedAttr("llm.model", modelAttr(b, d, *served)));
  attrs.push_back(b.getNamedAttr("llm.tokenizer", tokenizerAttr(b, g, file)));
  return llama::buildModule(context, d, weights, ggufName, attrs, error);
}

//===----------------------------------------------------------------------===//
// Hugging Face
//===----------------------------------------------------------------------===//

namespace {

std::string hfLlamaName(llama::Role role, int64_t l) {
  using llama::Role;
  std::string p = "model.layers." + std::to_string(l) + ".";
  switch (role) {
  case Role::TokenEmbedding:
    return "model.embed_tokens.weight";
  case Role::AttnNorm:
    return p + "input_layernorm.weight";
  case Role::Query:
    return p + "self_attn.q_proj.weight";
  case Role::Key:
    return p + "self_attn.k_proj.weight";
  case Role::Value:
    return p + "self_attn.v_proj.weight";
  case Role::QueryBias:
    return p + "self_attn.q_proj.bias";
  case Role::KeyBias:
    return p + "self_attn.k_proj.bias";
  case Role::ValueBias:
    return p + "self_attn.v_proj.bias";
  case Role::Output:
    return p + "self_attn.o_proj.weight";
  case Role::OutputBias:
    return p + "self_attn.o_proj.bias";
  case Role::FfnNorm:
    return p + "post_attention_layernorm.weight";
  case Role::Gate:
    return p + "mlp.gate_proj.weight";
  case Role::Up:
    return p + "mlp.up_proj.weight";
  case Role::Down:
    return p + "mlp.down_proj.weight";
  case Role::FinalNorm:
    return "model.norm.weight";
  case Role::LmHead:
    return "lm_head.weight";
  default:
    return "<no llama tensor>";
  }
}

std::string hfGpt2Name(const std::string &prefix, llama::Role role, int64_t l) {
  using llama::Role;
  std::string p = prefix + "h." + std::to_string(l) + ".";
  switch (role) {
  case Role::TokenEmbedding:
    return prefix + "wte.weight";
  case Role::PositionEmbedding:
    return prefix + "wpe.weight";
  case Role::AttnNorm:
    return p + "ln_1.weight";
  case Role::AttnNormBias:
    return p + "ln_1.bias";
  case Role::Qkv:
    return p + "attn.c_attn.weight";
  case Role::QkvBias:
    return p + "attn.c_attn.bias";
  case Role::Output:
    return p + "attn.c_proj.weight";
  case Role::OutputBias:
    return p + "attn.c_proj.bias";
  case Role::FfnNorm:
    return p + "ln_2.weight";
  case Role::FfnNormBias:
    return p + "ln_2.bias";
  case Role::Up:
    return p + "mlp.c_fc.weight";
  case Role::UpBias:
    return p + "mlp.c_fc.bias";
  case Role::Down:
    return p + "mlp.c_proj.weight";
  case Role::DownBias:
    return p + "mlp.c_proj.bias";
  case Role::FinalNorm:
    return prefix + "ln_f.weight";
  case Role::FinalNormBias:
    return prefix + "ln_f.bias";
  case Role::LmHead:
    return "lm_head.weight";
  default:
    return "<no gpt2 tensor>";
  }
}

/// Llama 3.1's rope_scaling "llama3" (transformers'
/// _compute_llama3_parameters): the inverse frequencies theta^(-2i/dim) of
/// wavelengths above original_max_position_embeddings / low_freq_factor are
/// divided by `factor`, those below original / high_freq_factor kept, and
/// those between interpolated smoothly; cos/sin are not rescaled
/// (attention_factor 1). Computed in double, stored as f32.
bool llama3InvFreq(llama::ModelDesc &d, const RopeScaling &rs,
                   std::string &error) {
  for (auto [key, v] : {std::pair<const char *, bool>{
                            "low_freq_factor", rs.lowFreqFactor.has_value()},
                        {"high_freq_factor", rs.highFreqFactor.has_value()},
                        {"original_max_position_embeddings",
                         rs.originalMaxPositionEmbeddings.has_value()}})
    if (!v) {
      error = std::string("rope_scaling of type 'llama3' needs '") + key +
              "' (transformers requires it)";
      return false;
    }
  double low = *rs.lowFreqFactor, high = *rs.highFreqFactor;
  double old = double(*rs.originalMaxPositionEmbeddings);
  if (!(low > 0) || !(high > low)) {
    error = "rope_scaling: llama3 needs 0 < low_freq_factor < "
            "high_freq_factor (they are " +
            std::to_string(low) + " and " + std::to_string(high) + ")";
    return false;
  }
  double lowWavelen = old / low, highWavelen = old / high;
  d.ropeInvFreq.clear();
  for (int64_t i = 0; i < d.ropeDim; i += 2) {
    // transformers computes the base frequencies in f32.
    float base =
        1.0f / std::pow(float(d.ropeTheta), float(i) / float(d.ropeDim));
    double inv = base;
    double wavelen = 2 * M_PI / inv;
    double scaled = wavelen > lowWavelen ? inv / rs.factor : inv;
    if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
      double smooth = (old / wavelen - low) / (high - low);
      scaled = (1 - smooth) * scaled / rs.factor + smooth * scaled;
    }
    d.ropeInvFreq.push_back(float(scaled));
  }
  return true;
}

/// The first weight file a checkpoint folder lacks, or "" when its
/// weights are there: model.safetensors, or the shards that
/// model.safetensors.index.json names (a download of only the *.json
/// files has the index without its shards). An index that does not parse
/// counts as there: the safetensors reader reports what is wrong with it.
std::string missingWeightFile(llvm::StringRef dir) {
  auto in = [&](llvm::StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return p.str().str();
  };
  std::string single = in("model.safetensors");
  if (llvm::sys::fs::exists(single))
    return "";
  std::string index = in("model.safetensors.index.json");
  if (!llvm::sys::fs::exists(index))
    return single;
  auto buf = llvm::MemoryBuffer::getFile(index);
  if (!buf)
    return "";
  auto json = llvm::json::parse((*buf)->getBuffer());
  if (!json) {
    llvm::consumeError(json.takeError());
    return "";
  }
  const llvm::json::Object *root = json->getAsObject();
  const llvm::json::Object *map =
      root ? root->getObject("weight_map") : nullptr;
  if (!map)
    return "";
  // By name, so that the message does not depend on the JSON map's order.
  std::set<std::string> shards;
  for (const auto &kv : *map)
    if (auto shard = kv.second.getAsString())
      shards.insert(shard->str());
  for (const std::string &shard : shards)
    if (!llvm::sys::fs::exists(in(shard)))
      return in(shard);
  return "";
}

/// The storage format of weights planned from a config alone: --weight-dtype,
/// else the config's torch_dtype, else f32. Empty with `error` set for a
/// dtype Loom does not plan.
std::optional<ElementType> configWeightFormat(const HfConfig &c,
                                              const std::string &flag,
                                              std::string &error) {
  auto parse = [](llvm::StringRef t) -> std::optional<ElementType> {
    if (t == "f32" || t == "float32" || t == "float")
      return ElementType::F32;
    if (t == "f16" || t == "float16" || t == "half")
      return ElementType::F16;
    if (t == "bf16" || t == "bfloat16")
      return ElementType::BF16;
    return std::nullopt;
  };
  if (!flag.empty()) {
    if (auto f = parse(flag))
      return f;
    error = "--weight-dtype=" + flag + ": unknown; expected f32, f16 or bf16";
    return std::nullopt;
  }
  if (c.torchDtype.empty())
    return ElementType::F32;
  if (auto f = parse(c.torchDtype))
    return f;
  error = "torch_dtype '" + c.torchDtype +
          "' is not a weight type Loom plans (float32, float16, bfloat16); "
          "give --weight-dtype=f32|f16|bf16";
  return std::nullopt;
}

} // namespace

OwningOpRef<ModuleOp> importHuggingFace(MLIRContext *context,
                                        llvm::StringRef path,
                                        std::string &error,
                                        const LlmImportOptions &options) {
  llvm::SmallString<256> dir(absolutePath(path));
  if (!llvm::sys::fs::is_directory(dir))
    llvm::sys::path::remove_filename(dir);
  llvm::SmallString<256> configPath(dir);
  llvm::sys::path::append(configPath, "config.json");
  std::string configFile = configPath.str().str();

  auto cfgOr = readHfConfig(configFile);
  if (!cfgOr) {
    error = "Hugging Face import: " + cfgOr.error().message;
    return nullptr;
  }
  const HfConfig &c = *cfgOr;
  auto fail = [&](const std::string &msg) -> OwningOpRef<ModuleOp> {
    error = configFile + ": " + msg;
    return nullptr;
  };

  llama::ModelDesc d;
  d.architecture = c.modelType;
  d.source = "huggingface";
  d.file = configFile;
  d.hiddenSize = c.hiddenSize;
  d.numLayers = c.numLayers;
  d.numHeads = c.numHeads;
  d.numKvHeads = c.numKvHeads ? c.numKvHeads : c.numHeads;
  d.headDim = c.headDim;
  d.ffnSize = c.intermediateSize;
  d.vocabSize = c.vocabSize;
  d.contextLength = c.maxPositionEmbeddings;
  d.normEps = c.normEps;
  d.tiedEmbeddings = c.tieWordEmbeddings;
  d.ropeStyle = RotaryStyle::half;
  // Sizes, eps, theta and the head shapes were checked by the reader, by the
  // rules of the GGUF path (checkLlmHyperParams).

  if (c.modelType == "gpt2") {
    d.family = llama::Family::Gpt2;
    d.ropeDim = 0;
    if (d.ffnSize <= 0)
      d.ffnSize = 4 * d.hiddenSize;
    if (c.activation == "gelu_new" || c.activation == "gelu_pytorch_tanh" ||
        c.activation == "gelu_fast")
      d.gelu = GeluApproximation::tanh;
    else if (c.activation == "gelu")
      d.gelu = GeluApproximation::none;
    else
      return fail("activation_function '" + c.activation +
                  "' is not supported for gpt2 (gelu, gelu_new)");
    d.scaleAttnWeights = c.scaleAttnWeights;
    d.scaleByInverseLayer = c.scaleAttnByInverseLayerIdx;
  } else {
    d.family = llama::Family::Llama;
    d.ropeTheta = c.ropeTheta > 0 ? c.ropeTheta : 10000.0;
    d.ropeDim = d.headDim;
    d.qkvBias = c.attentionBias;
    // LlamaAttention gives o_proj a bias with attention_bias; Qwen2 and
    // Mistral never do (qwen2's q/k/v biases come without one).
    d.outputBias = c.attentionBias && c.modelType == "llama";
    if (c.activation != "silu" && !c.activation.empty())
      return fail("hidden_act '" + c.activation + "' is not supported for " +
                  c.modelType + " (silu)");
    if (c.ropeScaling && c.ropeScaling->type == "llama3") {
      if (!llama3InvFreq(d, *c.ropeScaling, error))
        return fail(error);
    } else if (c.ropeScaling && c.ropeScaling->type != "default" &&
               !c.ropeScaling->type.empty()) {
      return fail("rope_scaling of type '" + c.ropeScaling->type +
                  "' is not supported (supported: default, llama3)");
    }
  }

  // The weights: the checkpoint's safetensors or, when the compile reads no
  // weight bytes (--emit=plan), none: planned from the config alone.
  std::map<std::string, TensorRef, std::less<>> weights;
  std::string missing = missingWeightFile(dir);
  bool configAlone = !missing.empty();
  if (configAlone) {
    if (!options.weightsOptional) {
      error = "weights not found: " + missing +
              "; --emit=plan plans from the config alone";
      return nullptr;
    }
    auto format = configWeightFormat(c, options.weightDtype, error);
    if (!format) {
      error = configFile + ": " + error;
      return nullptr;
    }
    d.weightStorage = false;
    d.absentWeightFormat = *format;
  } else {
    if (!options.weightDtype.empty())
      return fail("--weight-dtype=" + options.weightDtype +
                  " applies when planning from a config alone; this "
                  "folder has safetensors, whose own dtypes are used");
    auto stOr = openSafetensorsModel(dir.str().str());
    if (!stOr) {
      error = "Hugging Face import: " + stOr.error().message;
      return nullptr;
    }
    for (const TensorRef &t : stOr->tensors()) {
      TensorRef r = t;
      r.file = absolutePath(r.file);
      weights.emplace(r.name, std::move(r));
    }
  }

  llama::NameFn nameOf;
  if (d.family == llama::Family::Gpt2) {
    // GPT2Model saves "wte.weight"; GPT2LMHeadModel "transformer.wte.weight"
    // (from a config alone: as the architecture named there would save).
    bool lmHead = configAlone ? c.architecture == "GPT2LMHeadModel"
                              : weights.count("transformer.wte.weight") != 0;
    std::string prefix = lmHead ? "transformer." : "";
    nameOf = [prefix](llama::Role r, int64_t l) {
      return hfGpt2Name(prefix, r, l);
    };
    if (!configAlone && !weights.count("lm_head.weight"))
      d.tiedEmbeddings = true;
  } else {
    nameOf = hfLlamaName;
    // Checkpoints saved with tied embeddings omit lm_head.weight (from a
    // config alone, tie_word_embeddings decides).
    if (!configAlone && !weights.count("lm_head.weight"))
      d.tiedEmbeddings = true;
  }

  std::optional<int64_t> served = servedContext(
      d, c.slidingWindow, "sliding_window",
      c.modelType == "gpt2" ? "n_positions" : "max_position_embeddings",
      options, error);
  if (!served)
    return nullptr;

  Builder b(context);
  SmallVector<NamedAttribute> attrs;
  attrs.push_back(b.getNamedAttr("llm.model", modelAttr(b, d, *served)));
  llvm::SmallString<256> tok(dir);
  llvm::sys::path::append(tok, "tokenizer.json");
  if (llvm::sys::fs::exists(tok))
    attrs.push_back(
        b.getNamedAttr("llm.tokenizer",
                       b.getDictionaryAttr(
                           {b.getNamedAttr("file", b.getStringAttr(tok.str())),
                            b.getNamedAttr("format", b.getStringAttr("hf"))})));
  // Tensors a checkpoint may hold that do not change the math: buffers
  // transformers recomputes (the causal mask of old GPT-2 files, llama's
  // rotary inv_freq from rope_theta) and a saved lm_head that tying
  // replaces with the embedding.
  bool tied = d.tiedEmbeddings;
  auto ignorable = [tied](llvm::StringRef name) {
    return name.ends_with(".attn.bias") ||
           name.ends_with(".attn.masked_bias") ||
           name.ends_with(".rotary_emb.inv_freq") ||
           (tied && name == "lm_head.weight");
  };
  return llama::buildModule(context, d, weights, nameOf, attrs, error,
                            ignorable);
}

} // namespace loom
