//===- LlamaGraph.cpp - decoder-only transformer graphs in loom -----------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/LlamaGraph.h"

#include "dialects/Loom/IR/LoomEnums.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <set>

using namespace mlir;

namespace loom::llama {
namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

std::string shapeStr(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += d == kDyn ? std::string("?") : std::to_string(d);
  }
  return s + "]";
}

const char *roleName(Role r) {
  switch (r) {
  case Role::TokenEmbedding:
    return "token embedding";
  case Role::PositionEmbedding:
    return "position embedding";
  case Role::AttnNorm:
    return "attention norm";
  case Role::AttnNormBias:
    return "attention norm bias";
  case Role::Query:
    return "query projection";
  case Role::Key:
    return "key projection";
  case Role::Value:
    return "value projection";
  case Role::QueryBias:
    return "query bias";
  case Role::KeyBias:
    return "key bias";
  case Role::ValueBias:
    return "value bias";
  case Role::Qkv:
    return "fused qkv projection";
  case Role::QkvBias:
    return "fused qkv bias";
  case Role::Output:
    return "attention output projection";
  case Role::OutputBias:
    return "attention output bias";
  case Role::FfnNorm:
    return "MLP norm";
  case Role::FfnNormBias:
    return "MLP norm bias";
  case Role::Gate:
    return "MLP gate projection";
  case Role::Up:
    return "MLP up projection";
  case Role::Down:
    return "MLP down projection";
  case Role::UpBias:
    return "MLP up bias";
  case Role::DownBias:
    return "MLP down bias";
  case Role::FinalNorm:
    return "final norm";
  case Role::FinalNormBias:
    return "final norm bias";
  case Role::LmHead:
    return "lm head";
  case Role::RopeFreqs:
    return "rotary frequency factors";
  }
  return "weight";
}

class GraphBuilder {
public:
  GraphBuilder(MLIRContext *ctx, const ModelDesc &desc,
               const std::map<std::string, fmt::TensorRef, std::less<>> &w,
               const NameFn &nameOf, std::string &error)
      : ctx(ctx), b(ctx), loc(UnknownLoc::get(ctx)), d(desc), weights(w),
        nameOf(nameOf), error(error) {}

  OwningOpRef<ModuleOp> build(ArrayRef<NamedAttribute> moduleAttrs);

private:
  bool failed() const { return !error.empty(); }
  Value fail(const llvm::Twine &msg) {
    if (error.empty())
      error = msg.str();
    return Value();
  }

  Type f32() { return b.getF32Type(); }
  RankedTensorType act(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32());
  }

  /// The storage type of a weight, or null with an error.
  Type storageType(const fmt::TensorRef &ref);
  /// A loom.weight for `role`/`layer` with the logical shape `shape`;
  /// null with an error when missing (and `required`) or mis-shaped.
  Value weight(Role role, int64_t layer, ArrayRef<int64_t> shape,
               bool required = true);
  /// Whether the weight table holds the tensor of `role`/`layer`.
  bool has(Role role, int64_t layer) {
    return weights.count(nameOf(role, layer)) != 0;
  }
  /// A float weight as f32 (casts f16/bf16).
  Value asF32(Value v);

  /// x [1, S, K] times a [N, K] weight (nn.Linear / GGUF layout) -> [1, S, N].
  Value linear(Value x, Value w, int64_t n);
  /// x [1, S, K] times a [K, N] weight (Conv1D layout) -> [1, S, N].
  Value conv1d(Value x, Value w, int64_t n);
  Value addBias(Value x, Value bias);
  Value add(Value a, Value c);
  Value norm(Value x, Role scale, Role bias, int64_t layer);
  /// [1, S, H*Dh] -> [1, H, S, Dh].
  Value splitHeads(Value x, int64_t heads);
  /// [1, H, S, Dh] -> [1, S, H*Dh].
  Value mergeHeads(Value x, int64_t heads);

  /// Causal attention of q [1, Hq, S, Dh] over k/v [1, Hkv, S, Dh]; with a
  /// cache (`cacheArgs` set: the decode entry) k/v are written into the
  /// layer's cache arguments at positions[0].. (in place) and attention reads
  /// the cache's filled part (docs/IMPORT-LLAMA.md).
  Value attend(Value q, Value k, Value v, int64_t heads, int64_t kvHeads,
               int64_t layer);
  Value llamaLayer(Value x, int64_t layer, Value cos, Value sin);
  Value gpt2Layer(Value x, int64_t layer);
  /// One entry point: `forward` (prefill) or, with `cache`, `decode`.
  bool buildEntry(ModuleOp module, StringRef name, bool cache);

  /// The KV cache arguments of the function being built (2 per layer), or
  /// empty; and its positions argument.
  SmallVector<Value> cacheArgs;
  Value positionsArg;

  MLIRContext *ctx;
  OpBuilder b;
  Location loc;
  const ModelDesc &d;
  const std::map<std::string, fmt::TensorRef, std::less<>> &weights;
  const NameFn &nameOf;
  std::string &error;
  llvm::StringMap<Value> weightOps;

public:
  /// The tensors the graph reads (every other one is refused by name).
  std::set<std::string, std::less<>> used;
};

Type GraphBuilder::storageType(const fmt::TensorRef &ref) {
  auto quant = [&](QuantFormat f, int64_t block, QuantMode m) -> Type {
    return QTensorType::get(ctx, ref.shape,
                            QuantAttr::get(ctx, f, block, m, b.getF16Type()));
  };
  switch (ref.format) {
  case fmt::ElementType::F32:
    return RankedTensorType::get(ref.shape, b.getF32Type());
  case fmt::ElementType::F16:
    return RankedTensorType::get(ref.shape, b.getF16Type());
  case fmt::ElementType::BF16:
    return RankedTensorType::get(ref.shape, b.getBF16Type());
  default:
    break;
  }
  // A GGUF block format: the IR's #loom.quant of the same format, through
  // the one vocabulary (loom/Support/QuantFormat.h).
  if (std::optional<loom::quant::Format> f = fmt::blockFormatOf(ref.format)) {
    QuantFormat format = toQuantFormat(*f);
    return quant(format, loom::quant::ggufBlock(*f)->elements,
                 getDefaultQuantMode(format));
  }
  fail(ref.file + ": tensor '" + ref.name + "' is stored as " +
       std::string(fmt::elementTypeName(ref.format)) +
       ", which a weight of a " + d.architecture +
       " model cannot be (supported: f32, f16, bf16, q4_0, q4_1, q8_0)");
  return Type();
}

Value GraphBuilder::weight(Role role, int64_t layer, ArrayRef<int64_t> shape,
                           bool required) {
  if (failed())
    return Value();
  std::string name = nameOf(role, layer);
  auto it = weights.find(name);
  if (it == weights.end() && d.absentWeightFormat) {
    // Planning from a config alone: the weight the graph needs, typed by
    // the hyper-parameters and --weight-dtype, without storage.
    if (!required)
      return Value();
    if (Value v = weightOps.lookup(name))
      return v;
    fmt::TensorRef ref;
    ref.name = name;
    ref.file = d.file;
    ref.format = *d.absentWeightFormat;
    ref.shape.assign(shape.begin(), shape.end());
    Type type = storageType(ref);
    if (!type)
      return Value();
    Value v =
        WeightOp::create(b, loc, type, b.getStringAttr(name), ExternAttr());
    weightOps[name] = v;
    return v;
  }
  if (it == weights.end()) {
    if (!required)
      return Value();
    std::string where =
        layer >= 0 ? " of layer " + std::to_string(layer) : std::string();
    return fail(d.file + ": missing tensor '" + name + "' (the " +
                roleName(role) + where + " of a " + d.architecture +
                " model with " + std::to_string(d.numLayers) + " layers)");
  }
  const fmt::TensorRef &ref = it->second;
  if (llvm::ArrayRef<int64_t>(ref.shape) != shape)
    return fail(ref.file + ": tensor '" + name + "' has shape " +
                shapeStr(ref.shape) + " but the model's hyper-parameters (" +
                d.file + ") make it " + shapeStr(shape));
  used.insert(name);
  if (Value v = weightOps.lookup(name))
    return v;
  Type type = storageType(ref);
  if (!type)
    return Value();
  // A GGUF read for its header only: the type from the tensor info, no
  // storage (the data section is not there to refer to).
  ExternAttr src;
  if (d.weightStorage)
    src = ExternAttr::get(ctx, b.getStringAttr(ref.file),
                          static_cast<int64_t>(ref.offset));
  Value v = WeightOp::create(b, loc, type, b.getStringAttr(name), src);
  weightOps[name] = v;
  return v;
}

Value GraphBuilder::asF32(Value v) {
  if (!v)
    return v;
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getElementType().isF32())
    return v;
  return CastOp::create(b, loc, act(t.getShape()), v);
}

Value GraphBuilder::linear(Value x, Value w, int64_t n) {
  if (!x || !w)
    return Value();
  auto xt = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(xt.getShape());
  shape.back() = n;
  if (isa<QTensorType>(w.getType()))
    return QMatmulOp::create(b, loc, act(shape), x, w,
                             /*quant_activations=*/nullptr);
  return MatmulOp::create(b, loc, act(shape), x, asF32(w),
                          /*transpose_a=*/false, /*transpose_b=*/true);
}

Value GraphBuilder::conv1d(Value x, Value w, int64_t n) {
  if (!x || !w)
    return Value();
  auto xt = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(xt.getShape());
  shape.back() = n;
  if (isa<QTensorType>(w.getType()))
    return fail(d.file + ": quantized Conv1D weights are not supported");
  return MatmulOp::create(b, loc, act(shape), x, asF32(w));
}

Value GraphBuilder::add(Value a, Value c) {
  if (!a || !c)
    return Value();
  auto t = cast<RankedTensorType>(a.getType());
  return AddOp::create(b, loc, t, a, c);
}

Value GraphBuilder::addBias(Value x, Value bias) {
  if (!bias)
    return x;
  return add(x, asF32(bias));
}

Value GraphBuilder::norm(Value x, Role scaleRole, Role biasRole,
                         int64_t layer) {
  Value scale = asF32(weight(scaleRole, layer, {d.hiddenSize}));
  if (!x || !scale)
    return Value();
  auto t = cast<RankedTensorType>(x.getType());
  if (d.family == Family::Llama)
    return RmsNormOp::create(b, loc, t, x, scale, b.getF32FloatAttr(d.normEps));
  Value bias = asF32(weight(biasRole, layer, {d.hiddenSize}));
  if (!bias)
    return Value();
  return LayerNormOp::create(b, loc, t, x, scale, bias, b.getI64IntegerAttr(-1),
                             b.getF32FloatAttr(d.normEps));
}

Value GraphBuilder::splitHeads(Value x, int64_t heads) {
  if (!x)
    return x;
  Value r = ReshapeOp::create(b, loc, act({1, kDyn, heads, d.headDim}), x);
  return TransposeOp::create(b, loc, act({1, heads, kDyn, d.headDim}), r,
                             ArrayRef<int64_t>{0, 2, 1, 3});
}

Value GraphBuilder::mergeHeads(Value x, int64_t heads) {
  if (!x)
    return x;
  Value t = TransposeOp::create(b, loc, act({1, kDyn, heads, d.headDim}), x,
                                ArrayRef<int64_t>{0, 2, 1, 3});
  return ReshapeOp::create(b, loc, act({1, kDyn, heads * d.headDim}), t);
}

Value GraphBuilder::attend(Value q, Value k, Value v, int64_t heads,
                           int64_t kvHeads, int64_t l) {
  if (!q || !k || !v)
    return Value();
  auto outType = act({1, heads, kDyn, d.headDim});
  if (cacheArgs.empty())
    return AttentionOp::create(b, loc, outType, TypeRange{}, q, k, v, Value(),
                               Value(), Value(), Value(), Value(), Value(),
                               /*causal=*/true, FloatAttr())
        .getOutput();
  // The updated caches (results 1 and 2) are the new state of the cache
  // arguments; the entry does not return them (written in place).
  Value ck = cacheArgs[2 * l], cv = cacheArgs[2 * l + 1];
  (void)kvHeads;
  auto op = AttentionOp::create(
      b, loc, outType, TypeRange{ck.getType(), cv.getType()}, q, k, v, Value(),
      Value(), Value(), ck, cv, positionsArg, /*causal=*/true, FloatAttr());
  return op.getOutput();
}

Value GraphBuilder::llamaLayer(Value x, int64_t l, Value cos, Value sin) {
  const int64_t D = d.hiddenSize, Hq = d.numHeads, Hkv = d.numKvHeads,
                Dh = d.headDim, F = d.ffnSize;
  // Attention block.
  Value h = norm(x, Role::AttnNorm, Role::AttnNormBias, l);
  Value wq = weight(Role::Query, l, {Hq * Dh, D});
  Value wk = weight(Role::Key, l, {Hkv * Dh, D});
  Value wv = weight(Role::Value, l, {Hkv * Dh, D});
  bool biases = d.qkvBias || has(Role::QueryBias, l);
  Value q = linear(h, wq, Hq * Dh);
  Value k = linear(h, wk, Hkv * Dh);
  Value v = linear(h, wv, Hkv * Dh);
  if (biases) {
    q = addBias(q, weight(Role::QueryBias, l, {Hq * Dh}));
    k = addBias(k, weight(Role::KeyBias, l, {Hkv * Dh}));
    v = addBias(v, weight(Role::ValueBias, l, {Hkv * Dh}));
  }
  q = splitHeads(q, Hq);
  k = splitHeads(k, Hkv);
  v = splitHeads(v, Hkv);
  if (failed())
    return Value();
  q = RotaryOp::create(b, loc, q.getType(), q, cos, sin, d.ropeStyle);
  k = RotaryOp::create(b, loc, k.getType(), k, cos, sin, d.ropeStyle);
  Value o = attend(q, k, v, Hq, Hkv, l);
  o = mergeHeads(o, Hq);
  o = linear(o, weight(Role::Output, l, {D, Hq * Dh}), D);
  // attention_bias: true gives o_proj a bias as well (LlamaAttention).
  if (d.outputBias)
    o = addBias(o, weight(Role::OutputBias, l, {D}));
  x = add(x, o);
  // Gated MLP.
  h = norm(x, Role::FfnNorm, Role::FfnNormBias, l);
  Value gate = linear(h, weight(Role::Gate, l, {F, D}), F);
  Value up = linear(h, weight(Role::Up, l, {F, D}), F);
  if (failed())
    return Value();
  gate = SiluOp::create(b, loc, gate);
  Value m = MulOp::create(b, loc, gate.getType(), gate, up);
  m = linear(m, weight(Role::Down, l, {D, F}), D);
  return add(x, m);
}

Value GraphBuilder::gpt2Layer(Value x, int64_t l) {
  const int64_t D = d.hiddenSize, H = d.numHeads, F = d.ffnSize;
  Value h = norm(x, Role::AttnNorm, Role::AttnNormBias, l);
  // c_attn: Conv1D [D, 3D] (x @ W + b); cut into q, k, v columns.
  Value wqkv = weight(Role::Qkv, l, {D, 3 * D});
  Value bqkv = weight(Role::QkvBias, l, {3 * D});
  if (failed())
    return Value();
  auto wType = cast<RankedTensorType>(wqkv.getType());
  auto bType = cast<RankedTensorType>(bqkv.getType());
  Value heads[3];
  for (int64_t i = 0; i < 3; ++i) {
    Value w = SliceOp::create(
        b, loc, RankedTensorType::get({D, D}, wType.getElementType()), wqkv,
        ArrayRef<int64_t>{0, i * D}, ArrayRef<int64_t>{D, (i + 1) * D},
        ArrayRef<int64_t>{1, 1});
    Value bias = SliceOp::create(
        b, loc, RankedTensorType::get({D}, bType.getElementType()), bqkv,
        ArrayRef<int64_t>{i * D}, ArrayRef<int64_t>{(i + 1) * D},
        ArrayRef<int64_t>{1});
    heads[i] = splitHeads(addBias(conv1d(h, w, D), bias), H);
  }
  if (failed())
    return Value();
  Value o = attend(heads[0], heads[1], heads[2], H, H, l);
  // scale_attn_weights / scale_attn_by_inverse_layer_idx (GPT2Attention).
  if (o && (!d.scaleAttnWeights || d.scaleByInverseLayer)) {
    double scale =
        d.scaleAttnWeights ? 1.0 / std::sqrt(double(d.headDim)) : 1.0;
    if (d.scaleByInverseLayer)
      scale /= double(l + 1);
    o.getDefiningOp<AttentionOp>().setScaleAttr(
        b.getF32FloatAttr(float(scale)));
  }
  o = mergeHeads(o, H);
  o = conv1d(o, weight(Role::Output, l, {D, D}), D);
  o = addBias(o, weight(Role::OutputBias, l, {D}));
  x = add(x, o);
  h = norm(x, Role::FfnNorm, Role::FfnNormBias, l);
  Value m = conv1d(h, weight(Role::Up, l, {D, F}), F);
  m = addBias(m, weight(Role::UpBias, l, {F}));
  if (failed())
    return Value();
  m = GeluOp::create(b, loc, m.getType(), m, d.gelu);
  m = conv1d(m, weight(Role::Down, l, {F, D}), D);
  m = addBias(m, weight(Role::DownBias, l, {D}));
  return add(x, m);
}

OwningOpRef<ModuleOp>
GraphBuilder::build(ArrayRef<NamedAttribute> moduleAttrs) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  for (const NamedAttribute &a : moduleAttrs)
    (*module)->setAttr(a.getName(), a.getValue());
  if (!buildEntry(*module, "forward", /*cache=*/false) ||
      !buildEntry(*module, "decode", /*cache=*/true))
    return nullptr;
  return module;
}

bool GraphBuilder::buildEntry(ModuleOp module, StringRef name, bool cache) {
  b.setInsertionPointToEnd(module.getBody());
  weightOps.clear(); // weights are values of one function
  cacheArgs.clear();
  positionsArg = Value();

  const int64_t D = d.hiddenSize, V = d.vocabSize;
  auto tokensType = RankedTensorType::get({1, kDyn}, b.getI64Type());
  auto posType = RankedTensorType::get({kDyn}, b.getI64Type());
  // decode: logits of the last position only.
  auto logitsType = cache ? act({1, V}) : act({1, kDyn, V});
  SmallVector<Type> argTypes{tokensType, posType};
  SmallVector<Type> resultTypes{logitsType};
  SmallVector<std::string> argNames{"tokens", "positions"};
  SmallVector<std::string> resultNames{"logits"};
  if (cache) {
    // [B, Hkv, context, Dh]: the runtime chooses the context length.
    auto cacheType = act({1, d.numKvHeads, kDyn, d.headDim});
    for (int64_t l = 0; l < d.numLayers; ++l)
      for (const char *kv : {"key", "value"}) {
        argTypes.push_back(cacheType);
        argNames.push_back("cache_" + std::string(kv) + "_" +
                           std::to_string(l));
      }
  }
  auto fn = func::FuncOp::create(b, loc, name,
                                 b.getFunctionType(argTypes, resultTypes));
  for (auto [i, n] : llvm::enumerate(argNames)) {
    fn.setArgAttr(i, LoomDialect::kNameAttrName, b.getStringAttr(n));
    if (i >= 2)
      fn.setArgAttr(i, LoomDialect::kStateAttrName,
                    b.getStringAttr("kv_cache"));
  }
  for (auto [i, n] : llvm::enumerate(resultNames))
    fn.setResultAttr(i, LoomDialect::kNameAttrName, b.getStringAttr(n));
  // The batch (dimension 0) of tokens and logits: microbatches split and
  // concatenate it. positions [S] has none (every row shares it) and the
  // caches are state (docs/BUNDLE.md "batch_dim").
  fn.setArgAttr(0, "loom.batch_dim", b.getI64IntegerAttr(0));
  fn.setResultAttr(0, "loom.batch_dim", b.getI64IntegerAttr(0));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value tokens = body->getArgument(0), positions = body->getArgument(1);
  if (cache) {
    positionsArg = positions;
    for (unsigned i = 2; i < body->getNumArguments(); ++i)
      cacheArgs.push_back(body->getArgument(i));
  }

  // Embedding (a quantized table gives f32; f16/bf16 rows are cast).
  Value table = weight(Role::TokenEmbedding, -1, {V, D});
  if (!table)
    return false;
  Type rowType = f32();
  if (auto t = dyn_cast<RankedTensorType>(table.getType()))
    rowType = t.getElementType();
  Value x = EmbeddingOp::create(
      b, loc, RankedTensorType::get({1, kDyn, D}, rowType), table, tokens);
  x = asF32(x);

  Value cos, sin;
  if (d.family == Family::Gpt2) {
    Value wpe = weight(Role::PositionEmbedding, -1, {d.contextLength, D});
    if (!wpe)
      return false;
    auto pt = cast<RankedTensorType>(wpe.getType());
    Value p = EmbeddingOp::create(
        b, loc, RankedTensorType::get({kDyn, D}, pt.getElementType()), wpe,
        positions);
    x = add(x, asF32(p));
  } else if (!d.ropeInvFreq.empty() || d.ropeFreqFactors) {
    // Frequencies loom.rotary_table cannot express: angle = position x
    // inv_freq in f32 (as transformers' LlamaRotaryEmbedding; llama.cpp
    // divides theta^(-2i/dim) by its rope_freqs factors), then cos/sin.
    int64_t R = d.ropeDim / 2;
    std::vector<float> inv = d.ropeInvFreq;
    if (inv.empty())
      for (int64_t i = 0; i < R; ++i)
        inv.push_back(
            std::pow(float(d.ropeTheta), -2.0f * float(i) / float(d.ropeDim)));
    Value p = CastOp::create(b, loc, act({kDyn}), positions);
    p = ReshapeOp::create(b, loc, act({kDyn, 1}), p);
    auto freqType = act({R});
    Value freqs = ConstantOp::create(
        b, loc, DenseElementsAttr::get(freqType, ArrayRef<float>(inv)));
    if (d.ropeFreqFactors) {
      Value factors = asF32(weight(Role::RopeFreqs, -1, {R}));
      if (!factors)
        return false;
      freqs = DivOp::create(b, loc, freqType, freqs, factors);
    }
    Value angles = MulOp::create(b, loc, act({kDyn, R}), p, freqs);
    cos = CosOp::create(b, loc, angles);
    sin = SinOp::create(b, loc, angles);
  } else {
    auto tableType = act({kDyn, d.ropeDim / 2});
    auto rt = RotaryTableOp::create(b, loc, tableType, tableType, positions,
                                    b.getF32FloatAttr(d.ropeTheta),
                                    b.getI64IntegerAttr(d.ropeDim));
    cos = rt.getCos();
    sin = rt.getSin();
  }

  for (int64_t l = 0; l < d.numLayers && !failed(); ++l)
    x = d.family == Family::Gpt2 ? gpt2Layer(x, l) : llamaLayer(x, l, cos, sin);
  if (cache && x) {
    // Only the last position's logits: its row is taken before the final
    // norm and the LM head (index -1 counts from the end).
    auto idxType = RankedTensorType::get({1}, b.getI64Type());
    Value last = ConstantOp::create(
        b, loc, DenseElementsAttr::get(idxType, ArrayRef<int64_t>{-1}));
    x = GatherOp::create(b, loc, act({1, 1, D}), x, last,
                         b.getI64IntegerAttr(1));
  }
  x = norm(x, Role::FinalNorm, Role::FinalNormBias, -1);
  Value head = d.tiedEmbeddings ? table : weight(Role::LmHead, -1, {V, D});
  Value logits = linear(x, head, V);
  if (failed() || !logits)
    return false;
  if (cache)
    logits = ReshapeOp::create(b, loc, act({1, V}), logits);
  func::ReturnOp::create(b, loc, ValueRange{logits});
  return true;
}

} // namespace

OwningOpRef<ModuleOp>
buildModule(MLIRContext *context, const ModelDesc &desc,
            const std::map<std::string, fmt::TensorRef, std::less<>> &weights,
            const NameFn &nameOf, ArrayRef<NamedAttribute> moduleAttrs,
            std::string &error,
            const std::function<bool(StringRef)> &ignorable) {
  context->getOrLoadDialect<LoomDialect>();
  context->getOrLoadDialect<func::FuncDialect>();
  GraphBuilder builder(context, desc, weights, nameOf, error);
  OwningOpRef<ModuleOp> m = builder.build(moduleAttrs);
  if (!m && error.empty())
    error = desc.file + ": import failed";
  if (!m)
    return m;
  // Every tensor of the checkpoint is consumed or refused by name: a
  // variant with weights this graph does not have (an o_proj bias, MoE
  // experts, an extra norm) never imports silently wrong.
  for (const auto &[name, ref] : weights) {
    if (builder.used.count(name) || (ignorable && ignorable(name)))
      continue;
    error = ref.file + ": tensor '" + name + "' is not used by the " +
            desc.architecture +
            " graph Loom builds (docs/IMPORT-LLAMA.md "
            "lists the tensors of each family); a checkpoint with it would "
            "compute something Loom does not, so it is refused";
    return nullptr;
  }
  return m;
}

} // namespace loom::llama
