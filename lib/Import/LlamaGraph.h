//===- LlamaGraph.h - decoder-only transformer graphs in loom ---*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The part of the GGUF and Hugging Face importers that does not depend on the
// file format: a model description (hyper-parameters, rotary convention) and
// a table of weights (name, file, offset, storage format, shape) become one
// module with a prefill entry point
//
//   func.func @forward(%tokens: tensor<1x?xi64>, %positions: tensor<?xi64>)
//       -> tensor<1x?xVOCABxf32>
//
// (plus `@decode`, the same graph over a KV cache) whose weights are
// `loom.weight ... from <file, offset>` references into the
// original files. Each importer only maps its tensor names to the roles below
// and fills ModelDesc from its metadata.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_IMPORT_LLAMAGRAPH_H
#define LOOM_LIB_IMPORT_LLAMAGRAPH_H

#include "dialects/Loom/IR/LoomDialect.h"
#include "loom/Formats/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loom::llama {

/// The block structure of the model.
enum class Family {
  /// llama, mistral, qwen2: RMSNorm, rotary, gated SiLU MLP, no biases
  /// except (optional) q/k/v biases.
  Llama,
  /// gpt2: LayerNorm with biases, learned positions, fused Conv1D c_attn
  /// ([D, 3D], stored transposed relative to nn.Linear), GELU MLP.
  Gpt2,
};

/// What a weight is for. The importer maps each (role, layer) to a tensor
/// name of its format.
enum class Role {
  TokenEmbedding,
  PositionEmbedding, // gpt2
  AttnNorm,
  AttnNormBias, // gpt2
  Query,
  Key,
  Value,
  QueryBias,
  KeyBias,
  ValueBias,
  Qkv,     // gpt2 c_attn.weight [D, 3D]
  QkvBias, // gpt2 c_attn.bias [3D]
  Output,
  OutputBias, // gpt2
  FfnNorm,
  FfnNormBias, // gpt2
  Gate,
  Up,
  Down,
  UpBias,   // gpt2
  DownBias, // gpt2
  FinalNorm,
  FinalNormBias, // gpt2
  LmHead,
  RopeFreqs, // GGUF rope_freqs.weight: per-frequency divisors (llama3)
};

/// Hyper-parameters of the model (from GGUF metadata or config.json).
struct ModelDesc {
  Family family = Family::Llama;
  /// "llama", "qwen2", "mistral", "gpt2" (for attributes and messages).
  std::string architecture;
  /// "gguf" or "huggingface".
  std::string source;
  /// The model file or config.json (for messages).
  std::string file;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  int64_t ffnSize = 0;
  int64_t vocabSize = 0;
  int64_t contextLength = 0;
  double normEps = 1e-5;
  double ropeTheta = 10000.0;
  /// Rotated features per head (<= headDim); 0 for no rotary (gpt2).
  int64_t ropeDim = 0;
  /// The rotary inverse frequencies (ropeDim / 2) when they are not
  /// ropeTheta^(-2i/ropeDim) (Llama 3.1's rope_scaling "llama3"): the angle
  /// tables are built as positions x these, then cos and sin.
  std::vector<float> ropeInvFreq;
  /// The weight of role RopeFreqs ([ropeDim / 2] f32, llama.cpp's form of
  /// Llama 3.1's scaling) divides the inverse frequencies.
  bool ropeFreqFactors = false;
  RotaryStyle ropeStyle = RotaryStyle::half;
  GeluApproximation gelu = GeluApproximation::none;
  /// q/k/v biases required (qwen2, attention_bias); when false they are
  /// still used if the weight table has them.
  bool qkvBias = false;
  /// The attention output projection has a bias (llama attention_bias).
  bool outputBias = false;
  /// The lm head is the token embedding (no separate tensor).
  bool tiedEmbeddings = false;
  /// gpt2: the attention scale is 1/sqrt(headDim) (scaleAttnWeights, else
  /// 1), divided by layer + 1 with scaleByInverseLayer.
  bool scaleAttnWeights = true;
  bool scaleByInverseLayer = false;
  /// Planning without weight bytes (loomc --emit=plan on a config alone or
  /// a GGUF header): every loom.weight is a typed reference without `from`.
  bool weightStorage = true;
  /// Planning from a config alone: a tensor the table does not hold is the
  /// weight of its role with the shape the hyper-parameters give, stored
  /// as this format (--weight-dtype). Unset: a missing tensor is an error.
  std::optional<fmt::ElementType> absentWeightFormat;
};

/// Maps a role (and layer, -1 for non-layer roles) to a tensor name.
using NameFn = std::function<std::string(Role role, int64_t layer)>;

/// Builds the module. `weights` holds every tensor of the model files by
/// name (absolute file paths and offsets); a tensor the graph does not use
/// is refused by name unless `ignorable` says it may be left out. `moduleAttrs`
/// are added to the module (e.g. llm.tokenizer). On failure returns null and
/// sets `error` (naming the file, the tensor and what was expected).
mlir::OwningOpRef<mlir::ModuleOp>
buildModule(mlir::MLIRContext *context, const ModelDesc &desc,
            const std::map<std::string, fmt::TensorRef, std::less<>> &weights,
            const NameFn &nameOf,
            llvm::ArrayRef<mlir::NamedAttribute> moduleAttrs,
            std::string &error,
            const std::function<bool(llvm::StringRef)> &ignorable = {});

} // namespace loom::llama

#endif // LOOM_LIB_IMPORT_LLAMAGRAPH_H
