//===- LayoutChoice.cpp - --devices N: the planner picks dp x pp x tp -----===//

#include "driver/LayoutChoice.h"

#include "lib/Import/Import.h"
#include "loom/Cost/Transformer.h"
#include "loom/Formats/Gguf.h"
#include "loom/Formats/HfConfig.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace loom::driver {
namespace {

struct Shape {
  cost::GptConfig config;
  int64_t context = 0;
};

std::optional<Shape> shapeFromHf(const std::string &input, std::string &err) {
  llvm::SmallString<256> path(input);
  if (llvm::sys::fs::is_directory(path))
    llvm::sys::path::append(path, "config.json");
  auto cfg = fmt::readHfConfig(path.str().str());
  if (!cfg) {
    err = cfg.error().message;
    return std::nullopt;
  }
  const fmt::HfConfig &c = *cfg;
  Shape s;
  if (c.modelType == "gpt2") {
    s.config = cost::GptConfig{c.hiddenSize, c.numHeads, c.numLayers, 0,
                               c.vocabSize,  0};
    s.config.ffn = c.intermediateSize;
  } else {
    s.config =
        cost::llamaShape(c.hiddenSize, c.numHeads, c.numKvHeads, c.numLayers,
                         c.intermediateSize, c.vocabSize, 0, 0);
    s.config.tiedEmbedding = c.tieWordEmbeddings;
  }
  s.context = c.maxPositionEmbeddings;
  return s;
}

std::optional<Shape> shapeFromGguf(const std::string &input, std::string &err) {
  auto g = fmt::openGguf(input);
  if (!g) {
    err = g.error().message;
    return std::nullopt;
  }
  const fmt::GgufValue *archV = g->find("general.architecture");
  auto arch = archV ? archV->asString() : std::nullopt;
  if (!arch) {
    err = input + ": metadata key 'general.architecture' is missing";
    return std::nullopt;
  }
  std::string a(*arch);
  auto get = [&](const char *key, bool required,
                 int64_t dflt) -> std::optional<int64_t> {
    const fmt::GgufValue *v = g->find(a + "." + key);
    if (!v) {
      if (required)
        err = input + ": metadata key '" + a + "." + key + "' is missing";
      return required ? std::nullopt : std::optional<int64_t>(dflt);
    }
    auto i = v->asInt();
    if (!i || *i < 0) {
      err = input + ": metadata key '" + a + "." + key +
            "' is not a non-negative integer";
      return std::nullopt;
    }
    return *i;
  };
  auto h = get("embedding_length", true, 0), l = get("block_count", true, 0),
       heads = get("attention.head_count", true, 0);
  if (!h || !l || !heads)
    return std::nullopt;
  auto kv = get("attention.head_count_kv", false, *heads),
       f = get("feed_forward_length", false, 4 * *h),
       ctx = get("context_length", false, 0);
  if (!kv || !f || !ctx)
    return std::nullopt;
  int64_t vocab = 0;
  if (const fmt::TensorRef *t = g->findTensor("token_embd.weight"))
    vocab = t->shape.empty() ? 0 : t->shape[0];
  if (auto vs = get("vocab_size", false, vocab))
    vocab = *vs;
  else
    return std::nullopt;
  if (vocab <= 0) {
    err = input + ": no vocabulary size (neither '" + a +
          ".vocab_size' nor a tensor 'token_embd.weight')";
    return std::nullopt;
  }
  Shape s;
  if (a == "gpt2") {
    s.config = cost::GptConfig{*h, *heads, *l, 0, vocab, 0};
    s.config.ffn = *f;
  } else {
    s.config = cost::llamaShape(*h, *heads, *kv, *l, *f, vocab, 0, 0);
    s.config.tiedEmbedding = !g->findTensor("output.weight");
  }
  s.context = *ctx;
  return s;
}

} // namespace

std::string chooseMeshForDevices(const CompileOptions &o,
                                 llvm::raw_ostream &diag,
                                 llvm::raw_ostream &report,
                                 int64_t &microbatches) {
  auto fail = [&](const llvm::Twine &msg) {
    diag << o.toolName << ": " << msg << "\n";
    return std::string();
  };
  if (!o.mesh.empty())
    return fail("--devices and --mesh both given: --devices " +
                llvm::Twine(o.devices) +
                " lets the planner choose the mesh; drop one of them");
  if (o.devices < 1)
    return fail("--devices=" + llvm::Twine(o.devices) +
                ": must be a positive number of devices");
  if (o.microbatches < 0)
    return fail("--microbatches=" + llvm::Twine(o.microbatches) +
                ": give at least 1");
  if (o.planBatch < 1)
    return fail("--plan-batch=" + llvm::Twine(o.planBatch) +
                ": must be a positive number of sequences");
  std::string err;
  std::optional<Shape> shape;
  switch (loom::detectModelKind(o.input)) {
  case loom::ModelKind::HuggingFace:
    shape = shapeFromHf(o.input, err);
    break;
  case loom::ModelKind::Gguf:
    shape = shapeFromGguf(o.input, err);
    break;
  default:
    return fail("--devices: " + o.input +
                " is not an LLM config (give a Hugging Face config.json or "
                "its folder, or a .gguf file), or give the mesh with --mesh");
  }
  if (!shape)
    return fail("--devices: " + err);
  auto device = cost::deviceByName(o.device);
  if (!device)
    return fail("--device=" + o.device + ": " + device.error().message);
  cost::GptConfig c = shape->config;
  c.seqLen = o.contextLimit > 0 ? o.contextLimit : shape->context;
  if (c.seqLen <= 0)
    return fail("--devices: " + o.input +
                " gives no context length; give one with --context-limit");
  c.globalBatch = o.planBatch;
  // A CPU mesh is one host of ranks sharing memory; GPUs sit 8 to a node.
  int64_t perNode = device->kind == cost::DeviceKind::CPU ? o.devices : 8;
  cost::LayoutRequest req = cost::layoutRequest(c, o.devices, *device, perNode);
  req.opts.inference = true;
  req.allowInterleave = false; // the runtime runs GPipe order (docs/BUNDLE.md)
  req.opts.fusedAttention = true;
  req.opts.memoryLimit = o.memoryLimit > 0 ? o.memoryLimit * (1ull << 30) : 0;
  // --microbatches m fixes the search's m (then b = B / (m d)).
  req.fixed.microBatches = o.microbatches;
  auto r = cost::chooseLayout(req);
  if (!r)
    return fail("--devices " + llvm::Twine(o.devices) + ": " +
                r.error().message);
  const cost::ParallelConfig &p = r->best;
  microbatches = r->estimate.microBatches;
  std::string mesh;
  auto axis = [&](const char *name, int64_t size) {
    if (size > 1)
      mesh += (mesh.empty() ? "" : ",") + std::string(name) + "=" +
              std::to_string(size);
  };
  axis("dp", p.dp);
  axis("pp", p.pp);
  axis("tp", p.tp);
  if (mesh.empty())
    mesh = "dp=1";
  report << o.toolName << ": --devices " << o.devices << " (" << device->name
         << ", " << o.planBatch << " x " << c.seqLen
         << " tokens forward): mesh " << mesh << "; "
         << cost::describeLayout(*r) << "; " << r->layoutsTried
         << " layouts in " << llvm::formatv("{0:f3}", r->searchSeconds)
         << " s\n";
  for (const cost::StageEstimate &st : r->estimate.stages) {
    report << llvm::formatv(
        "  stage {0}: layers {1}-{2}{3}{4}, {5:f3} ms, weights {6:f2} GB, "
        "KV cache {7:f2} GB, activations {8:f2} GB\n",
        &st - r->estimate.stages.data(), st.firstLayer, st.lastLayer,
        st.hasEmbedding ? " + embedding" : "", st.hasHead ? " + head" : "",
        1e3 * st.time, st.memory.weights / 1e9, st.memory.kvCache / 1e9,
        st.memory.activations / 1e9);
  }
  return mesh;
}

} // namespace loom::driver
