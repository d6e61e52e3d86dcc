//===- LlmHyperParams.h - Transformer hyper-parameter checks -*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The numeric hyper-parameters of a decoder-only transformer, each with the
// key it was read from, and the one set of rules that every model reader
// applies to them (the Hugging Face config.json reader and the GGUF
// importer): counts are integers >= 1 below bounds no real model comes near
// (which also keep the products of sizes far from overflow), the norm epsilon
// and the rope base are finite and > 0, the heads divide the embedding, the
// key/value heads divide the heads, the rotary dimensions are even and at
// most the head dimension (docs/IMPORT-LLAMA.md, "Hyper-parameters").
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FORMATS_LLMHYPERPARAMS_H
#define LOOM_FORMATS_LLMHYPERPARAMS_H

#include <cstdint>
#include <optional>
#include <string>

namespace loom::fmt {

/// A value and the key it was read from. An empty key: the file does not
/// give this parameter (e.g. gpt2's rope base), and it is not checked; with
/// no `heads` key the attention shape is not checked at all.
template <typename T> struct KeyedValue {
  std::string key;
  T value{};
};

struct LlmHyperParams {
  KeyedValue<int64_t> hidden, layers, heads, kvHeads, ffn, vocab, context;
  /// The head dimension when the file gives it; with an empty key it is
  /// hidden / heads, and `heads` must divide `hidden`. `headDimName` is the
  /// key that would give it (named in that message).
  KeyedValue<int64_t> headDim;
  std::string headDimName;
  /// Rotary dimensions, when the file gives them (else the head dimension).
  KeyedValue<int64_t> ropeDim;
  KeyedValue<double> normEps, ropeTheta;
};

/// The first rule a value breaks: the key, and a message that names the
/// key, its value and what is expected ("llama.rope.freq_base = 0: must be
/// a finite number > 0 and <= 1e+12").
struct HyperParamViolation {
  std::string key;
  std::string message;
};

std::optional<HyperParamViolation> checkLlmHyperParams(const LlmHyperParams &p);

} // namespace loom::fmt

#endif // LOOM_FORMATS_LLMHYPERPARAMS_H
